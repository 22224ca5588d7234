"""The agent's ``session/request_permission`` requests waiting for the user.

Each waits on a future: its answer is an option id, or ``None`` for
``cancelled``. Nothing the agent asks about is answered but by the user's answer
(:meth:`PendingPermissions.answer` through the transport) or, when the turn is
cancelled or the agent stops, ``cancelled`` (:meth:`PendingPermissions.cancel_all`).
Use on the server loop only.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..model import ToolCall


@dataclass
class Permission:
    """One request waiting for the user: the call as shown, and its answer."""

    call: ToolCall
    answer: asyncio.Future[str | None]


class PendingPermissions:
    """The requests still waiting, by the id of the call shown to the user."""

    def __init__(self) -> None:
        self._pending: dict[str, Permission] = {}

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._pending

    def get(self, call_id: str) -> Permission | None:
        return self._pending.get(call_id)

    def open(self, call: ToolCall) -> Permission:
        """``call`` now waits for the user (its id is not waiting already)."""
        assert call.id not in self._pending
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        pending = self._pending[call.id] = Permission(call, answer)
        return pending

    def close(self, call_id: str) -> None:
        """The request was answered (or its handler ended): it waits no more."""
        self._pending.pop(call_id, None)

    def waiting(self) -> bool:
        """Some request still waits for the user's answer."""
        return any(not p.answer.done() for p in self._pending.values())

    def answer(self, call_id: str, option_id: str | None) -> None:
        pending = self._pending.get(call_id)
        if pending is not None and not pending.answer.done():
            pending.answer.set_result(option_id)

    def cancel_all(self) -> list[ToolCall]:
        """Answer every waiting request ``cancelled``; the calls it answered."""
        cancelled = []
        for pending in list(self._pending.values()):
            if not pending.answer.done():
                pending.answer.set_result(None)
                cancelled.append(pending.call)
        return cancelled
