"""The panel as the session sees it: operations batched into Neovim.

Streams are rendered by coalescing: an operation pushed while a batch is on its
way to Neovim (or being drawn there), or in a stream faster than frames
(:data:`FRAME`), waits in the outbox and joins the next batch, and text appended
to the same block in one batch becomes one string. So a fast stream costs Neovim
one redraw per frame, not one per chunk, and a slow one is drawn at once.

Its operations (``block``, ``append``, ``state``, ``notify``, ``checktime``,
``bottom``, and ``conversation`` first in a conversation's batches) are drawn by,
and documented at, lua/gemini_companion/agent/transcript.lua's ``_apply``.

Everything sent is valid UTF-8 (lone surrogates an agent sent in JSON become
U+FFFD, and the user is told once), and no transcript line is longer than
:data:`MAX_LINE` characters: a huge line is cut with a note, so Neovim's memory
for the transcript is bounded by what it shows.

What stands alone is out: view_text.py (valid text, cut lines), burst.py,
nvim_channel.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..nvim_editor import DRAW, RECEIVE
from . import burst
from .view_text import _NOT_UNICODE, CUT, MAX_LINE, _cut, _valid, cut_appended, valid_state

__all__ = ["CUT", "MAX_LINE", "PanelView"]

if TYPE_CHECKING:
    from ..editor import Editor
    from .nvim_channel import NvimChannel

log = logging.getLogger(__name__)

# In a stream faster than this, a batch goes at most once a frame: what comes
# sooner joins the next one. Each batch costs Neovim a round trip and a redraw
# whatever it holds (1 MB from the CLI was 840 batches; now about 80: issue 31
# item 5). A batch after a pause goes at once, and so does the next one however
# soon (a model's stream, chunks tens of ms apart, one late: no wait for it).
FRAME = 0.008


class PanelView:
    """Batches panel operations to Neovim, one batch in flight at a time.

    Fed on one asyncio loop only (the session's). Over the session's own channel to
    Neovim (nvim_channel.py) everything happens on that loop, and the answer to the
    batch in flight is read when the next batch is ready (a steady stream finds it
    there: no wake-up for it); the socket is watched only while something waits
    for it (a batch, or :meth:`drained`). Through the editor (pynvim, without the
    channel), the batch in flight is answered on another thread (pynvim's loop,
    nvim_editor.py), and the answer hops to the session's loop: the view's state
    is touched on that loop only.
    """

    def __init__(self, editor: Editor, conversation: int | None = None) -> None:
        self._editor = editor
        self._conversation = conversation
        self._outbox: list[dict[str, Any]] = []
        self._blocks: dict[int, dict[str, Any]] = {}  # block ops in the outbox, by id
        self._joined: list[dict[str, Any]] = []  # append ops in the outbox with "parts"
        self._state: Callable[[], Mapping[str, Any]] = dict
        self._state_due = False
        self._in_flight = False
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: list[asyncio.Future[None]] = []  # drained() callers
        self._line: dict[int, int] = {}  # a text block's last line: its length, -1 once cut
        self._told_invalid = False
        self.batches = 0
        # The session's own connection to Neovim (nvim_channel.py), used from its loop.
        self._channel: NvimChannel | None = None
        self._channel_thread = 0
        self._channel_batch = False  # the batch in flight went over the channel
        self._watching = False  # the channel wakes the loop with its answer
        self._flushing = False
        self._sent_at = -FRAME  # when the last batch went (the loop's clock)
        self._quick = False  # it went within a frame of the one before, or waited
        self._waited = False  # the batch in the outbox waits for its frame

    async def connect(self, address: str, host_pid: int | None = None) -> None:
        """Send batches over a connection of the session's own to the Neovim at
        ``address`` (nvim_channel.py), from now on; through the editor without it.
        Only to the Neovim whose host process is ``host_pid`` (this one's)."""
        from .nvim_channel import connect_own

        channel = await connect_own(address, os.getpid() if host_pid is None else host_pid)
        if channel is not None:
            self._channel_thread = threading.get_ident()
            self._channel = channel

    def close(self) -> None:
        """Close the session's own connection to Neovim (batches go through the editor)."""
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.poll()  # the answer to the last batch, usually there but unread
            channel.close()

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
            self._join(last, op["text"])
        elif kind == "state":
            self._state_due = True  # drawn last in the next batch, built then
        elif kind == "block" and (same := self._blocks.get(op["id"])):
            # No append can follow a whole block's lines, so replacing is safe.
            same["lines"] = op["lines"]
            same["pending"] = op.get("pending")
        else:
            self._outbox.append(op)
            if kind == "block":
                self._blocks[op["id"]] = op
        if self._scheduled or (self._in_flight and not self._polled):
            return
        # Everything pushed in this turn of the loop goes in the same batch; over
        # the channel, the flush first reads whether the batch in flight is drawn.
        self._scheduled = True
        self._schedule()

    def _schedule(self) -> None:
        """The flush, at the end of the agent's pipe's read under way, or in a
        callback of its own on the session's loop (whose batch answered through the
        editor hops back there: _drawn)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            self._loop = loop = asyncio.get_running_loop()
        if not burst.defer(self._flush):
            loop.call_soon(self._flush)

    def _checked(self, text: str) -> str:
        clean = _valid(text)
        if clean is not text and not self._told_invalid:
            self._told_invalid = True  # once per panel: a stream of them is one message
            self.push({"op": "notify", "text": _NOT_UNICODE, "level": "warning"})
        return clean

    def block(self, block_id: int, lines: list[str], kind: str, pending: str | None = None) -> None:
        lines = [_cut(self._checked(line)) for line in lines]
        self._line[block_id] = len(lines[-1]) if lines else 0
        op = {"op": "block", "id": block_id, "lines": lines, "kind": kind}
        if pending is not None:
            op["pending"] = self._checked(pending)
        self.push(op)

    def append(self, block_id: int, text: str, prefix: str = "") -> None:
        self.append_valid(block_id, self._checked(text), prefix)

    def append_valid(self, block_id: int, text: str, prefix: str = "") -> None:
        """:meth:`append` of text known to be valid Unicode (no lone surrogate: the
        ACP wire's, acp/wire.py), not checked again."""
        length = self._line.get(block_id, 0)
        size = len(text)
        if length >= 0 and length + size <= MAX_LINE and len(prefix) + size <= MAX_LINE:
            # The common case: no line of it can be too long, whatever its newlines
            # (no loop over its lines: that was a third of the host's CPU per chunk
            # of markdown, issue 25 item 3).
            end = text.rfind("\n")
            self._line[block_id] = length + size if end < 0 else len(prefix) + size - end - 1
        else:
            text, self._line[block_id] = cut_appended(text, prefix, length)
            if not text:
                return
        # push()'s append, inline: the one operation of a stream.
        outbox = self._outbox
        last = outbox[-1] if outbox else None
        if (
            last is not None
            and last["op"] == "append"
            and last["id"] == block_id
            and last["prefix"] == prefix
        ):
            parts = last.get("parts")
            if parts is None:
                self._join(last, text)
            else:
                parts.append(text)
        else:
            outbox.append({"op": "append", "id": block_id, "prefix": prefix, "text": text})
        # Not _polled: a property's call per chunk.
        if self._scheduled or (
            self._in_flight and not (self._channel_batch and not self._watching)
        ):
            return
        self._scheduled = True
        self._schedule()

    def state(self, state: Mapping[str, Any] | Callable[[], Mapping[str, Any]]) -> None:
        """The agent's state, or a function that builds it: called once per batch
        (a flood of changes builds it once, not once per change)."""
        self._state = state if callable(state) else (lambda: state)
        self.push({"op": "state"})

    def notify(self, text: str, level: str) -> None:
        if len(text) > MAX_LINE:
            text = text[:MAX_LINE] + " …"
        self.push({"op": "notify", "text": self._checked(text), "level": level})

    def checktime(self) -> None:
        self.push({"op": "checktime"})

    def bottom(self) -> None:
        """The transcript's windows show its end (a resumed conversation)."""
        self.push({"op": "bottom"})

    def _valid_state(self, batch: list[dict[str, Any]]) -> Any:
        state, bad = valid_state(self._state())
        if bad and not self._told_invalid:
            self._told_invalid = True
            batch.append({"op": "notify", "text": _NOT_UNICODE, "level": "warning"})
        return state

    def _join(self, op: dict[str, Any], text: str) -> None:
        """Append ``text`` to the append ``op`` in the outbox: joined
        when the batch goes (``+=`` would copy the text per chunk)."""
        parts = op.get("parts")
        if parts is None:
            op["parts"] = [op["text"], text]
            self._joined.append(op)
        else:
            parts.append(text)

    def _take(self) -> list[dict[str, Any]]:
        """The outbox as a batch to send: appends joined."""
        batch, self._outbox = self._outbox, []
        if self._blocks:
            self._blocks = {}
        if self._joined:
            for op in self._joined:
                op["text"] = "".join(op.pop("parts"))
            self._joined = []
        return batch

    @property
    def _polled(self) -> bool:
        """The batch in flight went over the channel, whose answer is read only when
        polled (not watched yet): the flush polls it."""
        return self._channel_batch and not self._watching

    def _channel_here(self) -> NvimChannel | None:
        """The session's own channel to Neovim, when it may be used (from its loop)."""
        channel = self._channel
        if (
            channel is not None
            and not channel.closed
            and threading.get_ident() == self._channel_thread
        ):
            return channel
        return None

    def _flush(self) -> None:
        """On the session's loop: send what waits, with the state when it is due."""
        channel = self._channel  # _channel_here(), inline: once per streamed chunk
        if channel is not None and (
            channel.closed or threading.get_ident() != self._channel_thread
        ):
            channel = None
        if channel is not None and self._in_flight and self._channel_batch:
            self._flushing = True
            try:
                channel.poll()  # the answer to the batch in flight, if it is there
            finally:
                self._flushing = False
            if self._in_flight:
                self._watching = True  # its answer sends what waits
                channel.watch(True)
            if channel.closed:
                # The poll read the channel's end (Neovim closed it): the batch goes
                # through the editor.
                channel = None
        self._scheduled = False
        if self._in_flight:
            return  # sent when the batch in flight is drawn
        loop = self._loop or asyncio.get_running_loop()
        wait = self._sent_at + FRAME - loop.time()
        if wait > 0 and self._quick and (self._outbox or self._state_due):
            self._scheduled = self._waited = True  # what is pushed meanwhile joins it
            loop.call_later(wait, self._flush)
            return
        due, self._state_due = self._state_due, False
        batch = self._take()
        if not batch and not due:
            idle = True
        else:
            idle = False
            self._in_flight = True
        if idle:
            self._wake()
            return
        if due:
            try:
                batch.append({"op": "state", "state": self._valid_state(batch)})
            except Exception:
                # The batch still goes (the panel keeps drawing), without the state.
                log.exception("building the agent's state for the panel failed")
        self._send(batch, channel)

    def _send(self, batch: list[dict[str, Any]], channel: NvimChannel | None) -> None:
        """Send ``batch`` over ``channel`` (the session's own, from its loop), or
        through the editor without one."""
        self.batches += 1
        now = (self._loop or asyncio.get_running_loop()).time()
        self._quick = self._waited or now - self._sent_at < FRAME
        self._sent_at, self._waited = now, False
        if self._conversation is not None:
            batch.insert(0, {"op": "conversation", "id": self._conversation})
        # Not sent over a closed channel (or one failing as it is written): through
        # the editor then, never lost.
        if channel is not None and channel.call(
            DRAW, [RECEIVE, ["agent_draw", batch]], self._channel_drawn
        ):
            self._channel_batch = True
            if self._waiting and not self._watching:
                self._watching = True  # drained() waits for this answer
                channel.watch(True)
            return
        self._channel_batch = False
        self._editor.agent_draw(batch).add_done_callback(self._drawn)

    def _channel_drawn(self, error: str | None, _result: Any) -> None:
        """The answer to a batch sent over the channel, on the session's loop: read
        by the flush of the next batch (which goes on to send it), or watched for
        (what waits is sent from here)."""
        if error is not None:
            # Closed by close(): the answer may have been drawn, just not read yet.
            closing = self._channel is None
            (log.info if closing else log.error)("drawing the agent panel failed: %s", error)
        self._in_flight = False
        more = bool(self._outbox) or self._state_due
        if self._flushing:
            return
        if more:
            self._flush()
            return
        if self._watching:
            self._watching = False
            channel = self._channel
            if channel is not None:
                channel.watch(False)
        self._wake()

    def _drawn(self, future: concurrent.futures.Future[Any] | asyncio.Future[Any]) -> None:
        """A batch sent through the editor is drawn, on whichever thread answered it
        (pynvim's): nothing of the view is touched there, the answer hops to the
        session's loop."""
        exc = future.exception() if not future.cancelled() else None
        if exc is not None:
            log.error("drawing the agent panel failed: %s", exc)
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                self._loop.call_soon_threadsafe(self._editor_drawn)

    def _editor_drawn(self) -> None:
        """On the session's loop: the batch in flight is drawn; send what waits."""
        self._in_flight = False
        if self._outbox or self._state_due:
            self._flush()
        else:
            self._wake()

    def _wake(self) -> None:
        """On the session's loop: release drained() callers when nothing waits."""
        if self._in_flight or self._scheduled or self._outbox or self._state_due:
            return
        waiting, self._waiting = self._waiting, []
        for future in waiting:
            if not future.done():
                future.set_result(None)

    async def drained(self) -> None:
        """Wait until everything pushed so far has been drawn."""
        if not (self._in_flight or self._scheduled or self._outbox or self._state_due):
            return
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        watch = self._in_flight and self._channel_batch and not self._watching
        if watch and (channel := self._channel_here()) is not None:
            self._watching = True
            channel.watch(True)
        await future
