"""One conversation's state, with one owner: its status, the tasks of its turn,
its transcript (blocks and the confirmations waiting) and what the agent told of
it (session, commands, token usage).

The status is never set by hand: it is worked out from the facts
(:meth:`Conversation.settle`), so it cannot contradict them ("working" with a
confirmation waiting, or with no task behind it), and every change goes through
the one table of :data:`TRANSITIONS`: a change the table does not allow is
logged and not made. A stopped conversation is over (:meth:`Conversation.halt`):
nothing changes it again, whatever its agent still sends.

Use on the server loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from .model import AgentStatus, SlashCommand, Transcript, Usage

log = logging.getLogger(__name__)

TRANSITIONS: Mapping[AgentStatus, frozenset[AgentStatus]] = {
    # "stopped" before the first start; once halted, settle() moves it no more.
    "stopped": frozenset({"starting"}),
    "starting": frozenset({"idle", "working", "waiting", "error", "stopped"}),
    "idle": frozenset({"starting", "working", "waiting", "error", "stopped"}),
    "working": frozenset({"idle", "waiting", "error", "stopped"}),
    "waiting": frozenset({"working", "idle", "error", "stopped"}),
    "error": frozenset({"starting", "working", "waiting", "idle", "stopped"}),
}
"""The status changes a conversation may make (from -> to)."""

_IDS = itertools.count(1)


class Conversation:
    """One conversation's state. The session (session.py) drives it; the status is
    :meth:`settle`'s to set."""

    def __init__(self, conversation_id: int | None = None) -> None:
        self.id = next(_IDS) if conversation_id is None else conversation_id
        self.transcript = Transcript()
        self.status: AgentStatus = "stopped"
        self.detail = ""
        self.info: dict[str, Any] = {}
        self.commands: tuple[SlashCommand, ...] = ()
        # Tokens, as the agent reported them: the last turn's and the total.
        self.usage: dict[str, dict[str, int]] = {}
        # The facts the status is worked out from.
        self.started = False  # a start ran (or runs) since the conversation began
        self.starting = False
        self.halted = False  # stopped for good (:meth:`halt`)
        self.error: str | None = None  # the last failure, until the next turn
        self._activities: set[asyncio.Task[Any]] = set()

    # -- the facts -------------------------------------------------------------------------

    def busy(self) -> bool:
        """A turn (a prompt, a command, an answer) has a task running."""
        return any(not task.done() for task in self._activities)

    def activities(self) -> set[asyncio.Task[Any]]:
        return {task for task in self._activities if not task.done()}

    @contextlib.asynccontextmanager
    async def activity(self) -> AsyncIterator[None]:
        """The current task is part of the turn while in this block; the status is
        settled when it leaves, however it leaves (its error included)."""
        task = asyncio.current_task()
        assert task is not None
        self._activities.add(task)
        try:
            yield
        finally:
            self._activities.discard(task)
            self.settle()

    def count(self, usage: Usage) -> None:
        """A turn's tokens: the last turn's, and added to the conversation's total."""
        total = self.usage.get("total", {"input_tokens": 0, "output_tokens": 0})
        self.usage = {
            "turn": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
            "total": {
                "input_tokens": total["input_tokens"] + usage.input_tokens,
                "output_tokens": total["output_tokens"] + usage.output_tokens,
            },
        }

    def fail(self, message: str) -> None:
        """The turn or the agent failed: the status says so until the next turn."""
        self.error = message
        self.settle()

    def halt(self) -> bool:
        """Stop for good; False when it was stopped already."""
        if self.halted:
            return False
        self.halted = True
        self.starting = False
        self._move("stopped", "")
        return True

    # -- the status ------------------------------------------------------------------------

    def derive(self) -> AgentStatus:
        """The status the facts give."""
        if self.halted or not self.started:
            return "stopped"
        if self.starting:
            return "starting"
        if self.transcript.pending:
            return "waiting"
        if self.error is not None:
            return "error"
        if self.busy():
            return "working"
        return "idle"

    def settle(self, detail: str | None = None) -> bool:
        """Move to the status the facts give (``detail``: what it says beside it);
        True if the status or its detail changed."""
        if self.halted:
            return False
        status = self.derive()
        if status == "error":
            detail = self.error or ""
        elif detail is None:
            detail = self.detail if status == self.status else ""
        return self._move(status, detail)

    def _move(self, status: AgentStatus, detail: str) -> bool:
        if status != self.status and status not in TRANSITIONS[self.status]:
            log.error(
                "conversation %s: illegal status change %s -> %s (not made)",
                self.id,
                self.status,
                status,
            )
            return False
        if (status, detail) == (self.status, self.detail):
            return False
        self.status, self.detail = status, detail
        return True
