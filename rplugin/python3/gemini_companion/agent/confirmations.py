"""The confirmations waiting for the user: which one an answer names, the option
it picks, and the diff tab of an edit (the :class:`EditReview`, one diff
mechanism with two callers: the user's answer there comes back as
:meth:`AgentSession.edit_answered <gemini_companion.agent.session.AgentSession.edit_answered>`).

Nothing the agent asks about is answered without the user: an answer that names
no confirmation, or an option the agent did not offer, is refused with the
reason (:class:`~.requests.BadRequestError`) and changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .consent import accept_option
from .model import REJECT_KINDS, Option, ToolCall, Transcript
from .requests import BadRequestError

log = logging.getLogger(__name__)


class EditReview(Protocol):
    """The diff tab, as the agent uses it (implemented over diff.py's views)."""

    async def open(self, call_id: str, file_path: str, new_content: str) -> None:
        """Show the proposal; the user's answer comes back through
        :meth:`AgentSession.edit_answered`. Raises when the view cannot open."""

    def close(self, call_id: str) -> None:
        """Close the view without an answer (answered elsewhere, or obsolete)."""

    def expect(self, call_id: str, file_path: str, new_content: str) -> None:
        """The edit waits for the user (before :meth:`open`)."""

    def settle(self, call_id: str, accepted: bool, content: str | None) -> Awaitable[bool]:
        """The user answered the edit: recorded at once, sent by the awaitable (True:
        the agent got the accepted text another way, and writes it itself)."""

    def turn_ended(self) -> None:
        """The agent's turn ended."""


class Confirmations:
    """The transcript's waiting confirmations as the user answers them, and the
    diff tabs of the edits among them. Use on the session's loop."""

    def __init__(
        self,
        transcript: Transcript,
        review: EditReview | None,
        spawn: Callable[[Any], None],
        warn: Callable[[str], None],
    ) -> None:
        self._transcript = transcript
        self.review = review
        self._spawn = spawn
        self._warn = warn
        self._reviewing: set[str] = set()

    def waiting(self, call: ToolCall) -> None:
        """``call`` now waits for the user: an edit opens in the diff tab."""
        conf = call.confirmation
        review = self.review
        if review is None or conf is None or conf.kind != "edit" or conf.file_path is None:
            return
        path, content = conf.file_path, conf.new_content or ""
        self._reviewing.add(call.id)
        review.expect(call.id, path, content)

        async def show() -> None:
            try:
                await review.open(call.id, path, content)
            except Exception as exc:
                self._reviewing.discard(call.id)
                log.exception("opening the diff for %s failed", path)
                self._warn(f"could not open the diff for {path}: {exc}")

        self._spawn(show())

    def resolved(self, call_id: str) -> None:
        """``call_id`` waits no more: out of the pending list, its diff tab closed."""
        self._transcript.pending.remove(call_id)
        if call_id in self._reviewing:
            self._reviewing.discard(call_id)
            if self.review is not None:
                self.review.close(call_id)

    def answered_in_tab(self, call_id: str) -> None:
        """The user answered ``call_id`` in its diff tab (nothing to close there)."""
        self._reviewing.discard(call_id)

    def turn_ended(self) -> None:
        if self.review is not None:
            self.review.turn_ended()

    def pending_call(self, call_id: str | None) -> ToolCall:
        """The call an answer names (the oldest waiting without an id)."""
        pending = self._transcript.pending
        if not pending:
            raise BadRequestError("nothing is waiting for an answer")
        wanted = call_id or pending[0]
        if wanted not in pending:
            raise BadRequestError(f"tool call {wanted} is not waiting for an answer")
        call = self._transcript.tool_blocks[wanted].call
        assert call is not None and call.confirmation is not None
        return call

    def waiting_call(self, call_id: str) -> ToolCall | None:
        """The call ``call_id`` if it still waits for the user, else None."""
        block = self._transcript.tool_blocks.get(call_id)
        call = block.call if block is not None else None
        if call is None or call.confirmation is None or call_id not in self._transcript.pending:
            return None
        return call

    @staticmethod
    def option(call: ToolCall, wanted: str | None, *, reject: bool) -> Option | None:
        """The option the answer picks; None: a rejection of a request that offers
        no reject option (the protocol's cancellation). Never an allow option for
        a rejection."""
        conf = call.confirmation
        assert conf is not None
        if reject:
            try:
                return conf.rejection(wanted)
            except ValueError as exc:
                raise BadRequestError(f"{conf.title}: {exc}") from None
        # Only "allow once" or what the user named, of a request shown whole.
        try:
            return accept_option(conf, wanted)
        except ValueError as exc:
            raise BadRequestError(str(exc)) from None

    def settle_edit(
        self, call: ToolCall, option: Option | None, new_content: str | None
    ) -> Awaitable[bool] | None:
        """Every request that waits on an edit gets the one answer (review.py: the
        IDE twin of an ACP edit), recorded with it; the awaitable sends it."""
        conf = call.confirmation
        if self.review is None or conf is None or conf.kind != "edit":
            return None
        accepted = option is not None and option.kind not in REJECT_KINDS
        text = new_content if new_content is not None else conf.new_content
        return self.review.settle(call.id, accepted, text)


def edited(call: ToolCall, accepted: bool, content: str | None) -> str | None:
    """The user's version of an edit accepted in the diff tab, when it differs from
    the proposal; else None."""
    assert call.confirmation is not None
    proposal = call.confirmation.new_content
    return content if accepted and content is not None and content != proposal else None
