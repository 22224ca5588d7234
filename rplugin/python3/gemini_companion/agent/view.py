"""The panel as the session sees it: operations batched into Neovim.

Streams are rendered by coalescing: an operation pushed while a batch is on its
way to Neovim (or being drawn there) waits in the outbox and joins the next
batch, and text appended to the same block in one batch becomes one string. So a
fast stream costs Neovim one redraw per round trip, not one per chunk, and a slow
one is drawn at once.

Operations (drawn by lua/gemini_companion/agent/transcript.lua ``_apply``):

``{"op": "block", "id", "lines", "kind"}``
    create the block at the end of the transcript, or replace its lines;
``{"op": "append", "id", "text", "prefix"}``
    append text to the last line of the (last) block ``id``; new lines start
    with ``prefix``;
``{"op": "state", "state"}``
    the agent's state (``require("gemini_companion.agent").state()``);
``{"op": "notify", "text", "level"}``
    a ``vim.notify`` message;
``{"op": "checktime"}``
    ``:checktime``: a file the agent wrote may be loaded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import concurrent.futures

    from ..editor import Editor

log = logging.getLogger(__name__)


class PanelView:
    """Batches panel operations to Neovim, one batch in flight at a time.

    Used on one asyncio loop only (the session's).
    """

    def __init__(self, editor: Editor) -> None:
        self._editor = editor
        self._outbox: list[dict[str, Any]] = []
        self._in_flight = False
        self._scheduled = False
        self._idle = asyncio.Event()
        self._idle.set()
        self.batches = 0

    def push(self, op: dict[str, Any]) -> None:
        kind = op["op"]
        last = self._outbox[-1] if self._outbox else None
        if (
            kind == "append"
            and last is not None
            and last["op"] == "append"
            and last["id"] == op["id"]
            and last["prefix"] == op["prefix"]
        ):
            last["text"] += op["text"]
        elif kind == "state":
            self._outbox = [o for o in self._outbox if o["op"] != "state"]
            self._outbox.append(op)
        elif kind == "block" and (
            same := next(
                (o for o in self._outbox if o["op"] == "block" and o["id"] == op["id"]), None
            )
        ):
            # No append can follow a whole block's lines, so replacing is safe.
            same["lines"] = op["lines"]
        else:
            self._outbox.append(op)
        self._idle.clear()
        if not self._in_flight and not self._scheduled:
            # Everything pushed in this turn of the loop goes in the same batch.
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def block(self, block_id: int, lines: list[str], kind: str) -> None:
        self.push({"op": "block", "id": block_id, "lines": lines, "kind": kind})

    def append(self, block_id: int, text: str, prefix: str = "") -> None:
        self.push({"op": "append", "id": block_id, "text": text, "prefix": prefix})

    def state(self, state: Mapping[str, Any]) -> None:
        self.push({"op": "state", "state": dict(state)})

    def notify(self, text: str, level: str) -> None:
        self.push({"op": "notify", "text": text, "level": level})

    def checktime(self) -> None:
        self.push({"op": "checktime"})

    def _flush(self) -> None:
        self._scheduled = False
        if not self._outbox:
            self._idle.set()
            return
        batch, self._outbox = self._outbox, []
        self._in_flight = True
        self.batches += 1
        loop = asyncio.get_running_loop()
        future = self._editor.agent_draw(batch)

        def done(f: concurrent.futures.Future[Any]) -> None:
            exc = f.exception()
            if exc is not None:
                log.error("drawing the agent panel failed: %s", exc)
            loop.call_soon_threadsafe(self._drawn)

        future.add_done_callback(done)

    def _drawn(self) -> None:
        self._in_flight = False
        self._flush()

    async def drained(self) -> None:
        """Wait until everything pushed so far has been drawn."""
        await self._idle.wait()
