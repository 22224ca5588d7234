"""A turn: ``session/prompt`` runs in a task; the panel's call returns when the
turn ends or when the agent asks permission (and waits for the answer); tool
calls the agent left open when the turn ended are finished in the transcript."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..model import FINISHED, Notice, TurnEnd, Usage
from ..transport import TransportError

if TYPE_CHECKING:
    from .state import AcpSession

Request = Callable[[str, Mapping[str, Any]], Awaitable[Any]]


class TurnRunner:
    """The session's one turn at a time: ``request`` sends to the agent (link.py),
    ``gone`` tells whether the agent died or hung (already reported as the status)."""

    def __init__(self, session: AcpSession, request: Request, gone: Callable[[], bool]) -> None:
        self._session = session
        self._request = request
        self._gone = gone
        self._turn: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()

    @property
    def busy(self) -> bool:
        return self._turn is not None and not self._turn.done()

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The running turn's task (None when none runs)."""
        return self._turn if self.busy else None

    def settle(self) -> None:
        """Wake the waiter: the turn ended, or something now waits for the user."""
        self._settled.set()

    def stop(self) -> None:
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()

    async def run(self, params: Mapping[str, Any]) -> None:
        if self.busy:
            raise TransportError("the agent is still busy with the last prompt")
        turn = asyncio.get_running_loop().create_task(self._prompt_request(params))
        turn.add_done_callback(lambda _: self.settle())
        self._turn = turn
        await self.wait_settled()

    async def _prompt_request(self, params: Mapping[str, Any]) -> None:
        session = self._session
        try:
            raw = await self._request("session/prompt", params)
        finally:
            # What the user allowed in this turn ends with it, however it ends: its
            # grants, and any accepted version of an edit the agent did not write.
            session.grants.end_turn()
            if session.files is not None:
                session.files.forget_expected()
        reason = str((raw or {}).get("stopReason") or "end_turn")
        self._finish_open_calls("cancelled" if reason == "cancelled" else None)
        notes = {
            "max_tokens": "The answer was cut: the model reached its token limit.",
            "max_turn_requests": "The agent stopped: it reached its limit of turns.",
            "refusal": "The agent refused to go on.",
        }
        if reason in notes:
            session.emit(Notice(notes[reason], "warning"))
        session.emit(TurnEnd(reason, turn_usage(raw)))

    async def wait_settled(self) -> None:
        """Until the turn ended (its error raised here) or the agent waits for the user."""
        while True:
            turn = self._turn
            if turn is None or turn.done():
                break
            if self._session.permissions.waiting():
                return
            self._settled.clear()
            await self._settled.wait()
        if turn is not None and not turn.cancelled() and turn.exception() is not None:
            exc = turn.exception()
            self._finish_open_calls("failed")
            if self._gone():
                return  # the agent died or hung: already reported as the status
            if isinstance(exc, TransportError):
                raise exc
            raise TransportError(f"the prompt failed: {exc}") from exc

    def _finish_open_calls(self, status: str | None) -> None:
        """Tool calls the agent left open when the turn ended: cancelled or failed."""
        session = self._session
        updates = session.updates
        if updates is None:
            return
        for call in list(updates.calls.values()):
            if call.status in FINISHED:
                continue
            original = updates.call(session.aliases.get(call.id, ""))
            if original is not None and original.status in FINISHED and status is None:
                # An answered duplicate: the agent's updates went to its own id.
                session.emit(updates.put(call.but(status=original.status, confirmation=None)))
                continue
            if status is None and call.status != "pending":
                continue
            final = status or "cancelled"
            session.emit(updates.put(call.but(status=final, confirmation=None)))
        session.aliases.clear()


def turn_usage(raw: Any) -> Usage | None:
    """The tokens of a turn from the answer to ``session/prompt``: Gemini CLI 0.61.0's
    ``_meta.quota.token_count`` (``input_tokens``, ``output_tokens``), else the
    draft ``usage`` (``inputTokens``, ``outputTokens``); None when it says neither."""
    if not isinstance(raw, Mapping):
        return None
    meta = raw.get("_meta")
    quota = meta.get("quota") if isinstance(meta, Mapping) else None
    count = quota.get("token_count") if isinstance(quota, Mapping) else None
    keys = ("input_tokens", "output_tokens")
    if not isinstance(count, Mapping):
        count, keys = raw.get("usage"), ("inputTokens", "outputTokens")
    if not isinstance(count, Mapping):
        return None
    tokens = [n for key in keys if type(n := count.get(key)) is int and n >= 0]
    return Usage(tokens[0], tokens[1]) if len(tokens) == 2 else None
