"""A turn: ``session/prompt`` runs in a task; the panel's call returns when the
turn ends or when the agent asks permission (and waits for the answer); tool
calls the agent left open when the turn ended are finished in the transcript."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ..model import FINISHED, Notice, TurnEnd, Usage
from ..transport import TransportError
from .client_requests import AcpClientRequests


class AcpTurns(AcpClientRequests):
    """A prompt's turn and its end."""

    async def _run_turn(self, params: Mapping[str, Any]) -> None:
        if self._turn is not None and not self._turn.done():
            raise TransportError("the agent is still busy with the last prompt")
        turn = asyncio.get_running_loop().create_task(self._prompt_request(params))
        turn.add_done_callback(lambda _: self._settle())
        self._turn = turn
        await self._wait_settled()

    async def _prompt_request(self, params: Mapping[str, Any]) -> None:
        try:
            raw = await self._request("session/prompt", params)
        finally:
            # What the user allowed in this turn ends with it, however it ends: its
            # grants, and any accepted version of an edit the agent did not write.
            self._grants.end_turn()
            if self._files is not None:
                self._files.forget_expected()
        reason = str((raw or {}).get("stopReason") or "end_turn")
        self._finish_open_calls("cancelled" if reason == "cancelled" else None)
        notes = {
            "max_tokens": "The answer was cut: the model reached its token limit.",
            "max_turn_requests": "The agent stopped: it reached its limit of turns.",
            "refusal": "The agent refused to go on.",
        }
        if reason in notes:
            self._emit(Notice(notes[reason], "warning"))
        self._emit(TurnEnd(reason, turn_usage(raw)))

    async def _wait_settled(self) -> None:
        """Until the turn ended (its error raised here) or the agent waits for the user."""
        while True:
            turn = self._turn
            if turn is None or turn.done():
                break
            if self._permissions.waiting():
                return
            self._settled.clear()
            await self._settled.wait()
        if turn is not None and not turn.cancelled() and turn.exception() is not None:
            exc = turn.exception()
            self._finish_open_calls("failed")
            if self._exit_message is not None:
                return  # the agent died or hung: already reported as the status
            if isinstance(exc, TransportError):
                raise exc
            raise TransportError(f"the prompt failed: {exc}") from exc

    def _finish_open_calls(self, status: str | None) -> None:
        """Tool calls the agent left open when the turn ended: cancelled or failed."""
        updates = self._updates
        if updates is None:
            return
        for call in list(updates.calls.values()):
            if call.status in FINISHED:
                continue
            original = updates.call(self._aliases.get(call.id, ""))
            if original is not None and original.status in FINISHED and status is None:
                # An answered duplicate: the agent's updates went to its own id.
                self._emit(updates.put(call.but(status=original.status, confirmation=None)))
                continue
            if status is None and call.status != "pending":
                continue
            final = status or "cancelled"
            self._emit(updates.put(call.but(status=final, confirmation=None)))
        self._aliases.clear()


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
