"""Agent edits in the diff tab of IDE mode: the second caller of diff.lua's view.

The same Lua view as ``openDiff`` (same keys, ``:w``, ``:q``, ``:GeminiAccept``,
``:GeminiReject``), with view ids from the same counter, so ``Companion`` routes
the user's answer by id: to ``diff.py`` for a CLI in a terminal, here for the
agent panel.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from ..diff import next_diff_id
from ..text import discard_handed_over, from_body, to_buffer

if TYPE_CHECKING:
    from ..editor import Editor
    from ..paths import PathPolicy

log = logging.getLogger(__name__)

Answered = Callable[[str, bool, "str | None", "str | None"], Awaitable[None]]
"""(call id, accepted, the accepted text, the option the user named or None)."""


class DiffReview:
    """:class:`~.session.EditReview` over diff.lua. Use on the session's loop."""

    def __init__(
        self,
        editor: Editor,
        answered: Answered,
        policy: Callable[[], PathPolicy | None] = lambda: None,
    ) -> None:
        """``policy``: where files not loaded in Neovim may be shown (the agent's
        file access policy, as ``openDiff``'s: diff.lua refuses a file outside it
        unless a buffer has it loaded)."""
        self._editor = editor
        self._answered = answered
        self._policy = policy
        self._by_call: dict[str, int] = {}
        self._by_id: dict[int, str] = {}

    def owns(self, diff_id: int) -> bool:
        return diff_id in self._by_id

    async def open(self, call_id: str, file_path: str, new_content: str) -> None:
        buffer = to_buffer(new_content)
        diff_id = next_diff_id()
        self._by_call[call_id] = diff_id
        self._by_id[diff_id] = call_id
        spec = {
            "id": diff_id,
            "file_path": file_path,
            "text": buffer.body,
            "eol": buffer.eol,
            "fileformat": buffer.fileformat,
            "session": "agent",
            "call_id": call_id,
        }
        policy = self._policy()
        if policy is not None and not policy.allows(file_path):
            spec["outside_workspace"] = True
        try:
            opened = await asyncio.wrap_future(self._editor.open_diff(spec))
        except Exception:
            self._forget(call_id)
            raise
        if isinstance(opened, Mapping) and opened.get("refused"):
            self._forget(call_id)
            raise RuntimeError(str(opened["refused"]))

    def _forget(self, call_id: str) -> int | None:
        diff_id = self._by_call.pop(call_id, None)
        if diff_id is not None:
            self._by_id.pop(diff_id, None)
        return diff_id

    def close(self, call_id: str) -> None:
        diff_id = self._forget(call_id)
        if diff_id is not None:
            closed = self._editor.close_diff(diff_id, "closed")
            # Its text is not needed: a big one was handed over in a file, removed here.
            closed.add_done_callback(
                lambda f: (
                    None if f.cancelled() or f.exception() else discard_handed_over(f.result())
                )
            )

    async def accepted(
        self, diff_id: int, body: str, eol: bool, fileformat: str, option: str | None = None
    ) -> None:
        call_id = self._by_id.get(diff_id)
        if call_id is None:
            return
        self._forget(call_id)
        # The tab closes now: the answer runs the rest of the agent's turn, which
        # may be long (the session records the answer before it is sent).
        self._editor.finish_diff(diff_id, "accepted")
        await self._answered(call_id, True, from_body(body, eol, fileformat), option)

    async def rejected(self, diff_id: int, option: str | None = None) -> None:
        call_id = self._by_id.get(diff_id)
        if call_id is None:
            return
        self._forget(call_id)
        await self._answered(call_id, False, None, option)
