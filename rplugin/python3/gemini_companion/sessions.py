"""Connected CLI sessions and their server-to-client SSE streams.

The Streamable HTTP transport has one channel from server to client: the SSE
response to the client's ``GET /mcp`` (client-behaviour.md, "IDE mode: transport").
The mcp SDK offers no broadcast and no hook for "this stream is open", and drops
what is sent before it opens, so this ASGI layer wraps the SDK app and keeps the
``send`` of each session's GET response. ``ide/*`` notifications and keep-alive
comments are written to it as whole SSE events, serialised with the SDK's own
writes by a per-stream lock, and the ``on_open`` callback runs while the stream is
fresh so a new client gets the current context before anything else.

One client that stops reading must not hold up the others: each stream has its
own bounded queue and a writer task, so sending never waits for a client. A
client whose queue overflows, or whose writes stall for ``SEND_TIMEOUT`` seconds,
is dropped: its connection is closed (it reconnects when it reads again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .security import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

SESSION_HEADER = b"mcp-session-id"

# Messages waiting for one client; past this it is too slow and is dropped.
MAX_QUEUED = 64
# Seconds one write to a client may wait for it to read.
SEND_TIMEOUT = 10.0
# The scope extension connections.py sets: aborts the request's connection.
ABORT_EXTENSION = "gemini_companion.abort"

KEEP_ALIVE = b": keep-alive\r\n\r\n"
# Events bigger than this are written in slices of this size.
WRITE_SLICE = 1 << 20


def sse_event(payload: Mapping[str, Any]) -> bytes:
    """One SSE event holding ``payload`` as JSON, ending its lines with LF alone.

    SSE allows CRLF, CR or LF; the client's parser (eventsource-parser) scans a chunk
    for CR before anything else and takes a slower path when one is there, which
    shows with a large event (an accepted file of 10 MiB: ~10 ms less in Node).
    """
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return b"".join((b"event: message\ndata: ", data, b"\n\n"))


@dataclass
class SessionStream:
    """The open GET stream of one MCP session, with its queue of outgoing events."""

    session_id: str
    send: Send
    opened_at: float = field(default_factory=time.time)
    # asyncio, not anyio: the server loop is asyncio, and this module is imported by
    # the companion on the host thread, where importing anyio would cost ~13 ms.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False
    # Set to end the stream from this side (the server stops): the SDK's response
    # sees the client "disconnect" and returns, and the response is then completed.
    ending: asyncio.Event = field(default_factory=asyncio.Event)
    # Called once when writing fails or the client is too slow, with the reason.
    on_failure: Callable[[SessionStream, str], None] | None = None
    max_queued: int = MAX_QUEUED
    send_timeout: float = SEND_TIMEOUT
    _queue: asyncio.Queue[bytes | bytearray] | None = None
    _writer: asyncio.Task[None] | None = None

    async def notify(self, method: str, params: Mapping[str, Any]) -> bool:
        """Queue one JSON-RPC notification as an SSE event; False once the stream is gone."""
        return self.post(sse_event({"jsonrpc": "2.0", "method": method, "params": params}))

    async def write(self, chunk: bytes) -> bool:
        """Queue one SSE chunk; False once the stream is gone."""
        return self.post(chunk)

    def post(self, chunk: bytes | bytearray) -> bool:
        """Queue ``chunk`` for the writer without waiting; False once the stream is gone
        (or when the client has fallen too far behind, which drops it)."""
        if self.closed:
            return False
        if self._queue is None:
            self._queue = asyncio.Queue(self.max_queued)
        try:
            self._queue.put_nowait(chunk)
        except asyncio.QueueFull:
            self._fail(f"more than {self.max_queued} messages waiting: the client is not reading")
            return False
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write_queued())
        return True

    @property
    def queued(self) -> int:
        return 0 if self._queue is None else self._queue.qsize()

    async def drained(self) -> None:
        """Wait until everything queued so far has been written (or the stream failed)."""
        if self._queue is not None and not self.closed:
            await self._queue.join()

    async def _write_queued(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while not self.closed:
            chunk = await queue.get()
            try:
                await asyncio.wait_for(self._send_body(chunk), self.send_timeout)
            except asyncio.TimeoutError:
                self._fail(f"a write waited {self.send_timeout:g} s: the client is not reading")
            except Exception:  # the peer went away: ClientDisconnect, OSError, closed transport
                self._fail("the connection is gone")
            finally:
                queue.task_done()
            del chunk  # not kept while waiting: an accepted file's event can be 64 MiB
        while not queue.empty():  # release drained() waiters
            queue.get_nowait()
            queue.task_done()

    async def _send_body(self, chunk: bytes | bytearray) -> None:
        async with self.lock:
            if len(chunk) <= WRITE_SLICE:
                await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
                return
            # A big event (an accepted file) goes out a slice at a time: the HTTP layer
            # copies what it is given, and the transport buffers what the client has
            # not read yet; whole, that was three more copies of the file at once.
            with memoryview(chunk) as view:
                for start in range(0, len(chunk), WRITE_SLICE):
                    piece = bytes(view[start : start + WRITE_SLICE])
                    await self.send(
                        {"type": "http.response.body", "body": piece, "more_body": True}
                    )

    def _fail(self, reason: str) -> None:
        if self.closed:
            return
        self.close()
        if self.on_failure is not None:
            self.on_failure(self, reason)

    def close(self) -> None:
        """Stop writing; queued events are dropped."""
        self.closed = True
        writer = self._writer
        if writer is not None and writer is not asyncio.current_task():
            writer.cancel()
        if self._queue is not None:
            while not self._queue.empty():
                self._queue.get_nowait()
                self._queue.task_done()


async def _receive_until(ending: asyncio.Event, receive: Receive) -> Message:
    """``receive()``, or an ``http.disconnect`` as soon as ``ending`` is set."""
    if ending.is_set():
        return {"type": "http.disconnect"}
    received = asyncio.ensure_future(receive())
    ended = asyncio.ensure_future(ending.wait())
    try:
        await asyncio.wait({received, ended}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (received, ended):
            if not task.done():
                task.cancel()
    if received.done() and not received.cancelled():
        return received.result()
    return {"type": "http.disconnect"}


OnOpen = Callable[[SessionStream], Awaitable[None]]
OnClose = Callable[[str], None]


class SessionStreams:
    """ASGI wrapper that tracks each session's GET stream. Runs on the server loop."""

    def __init__(self, app: ASGIApp, *, on_open: OnOpen, on_close: OnClose) -> None:
        self._app = app
        self._on_open = on_open
        self._on_close = on_close
        self._streams: dict[str, SessionStream] = {}
        self._ending = False

    @property
    def streams(self) -> dict[str, SessionStream]:
        return self._streams

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        session_id = None
        for key, value in scope["headers"]:
            if key.lower() == SESSION_HEADER:
                session_id = value.decode("latin-1")
                break
        if scope["method"] == "GET" and session_id is not None:
            await self._serve_stream(session_id, scope, receive, send)
            return
        await self._app(scope, receive, send)
        if scope["method"] == "DELETE" and session_id is not None:
            self._drop(session_id)

    async def _serve_stream(
        self, session_id: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        abort = scope.get("extensions", {}).get(ABORT_EXTENSION)

        def failed(stream: SessionStream, reason: str) -> None:
            if self._streams.get(session_id) is stream:
                log.warning("CLI session %s dropped: %s", session_id, reason)
                self._drop(session_id)
            if callable(abort):
                abort()  # frees the socket now; the SDK's handler sees a disconnect

        stream = SessionStream(session_id, send, on_failure=failed)
        if self._ending:  # opened while the server stops: it ends at once
            stream.ending.set()
        started = completed = False

        async def locked_send(message: Message) -> None:
            nonlocal started, completed
            if message["type"] == "http.response.start":
                async with stream.lock:
                    await send(message)
                    started = True
                    if message["status"] != 200:
                        return
                    self._streams[session_id] = stream
                # The stream is open: hand it over, and let its first events out,
                # before the SDK writes anything else.
                try:
                    await self._on_open(stream)
                    await asyncio.wait_for(stream.drained(), stream.send_timeout)
                except Exception:
                    log.exception("on_open failed for session %s", session_id)
                return
            async with stream.lock:
                await send(message)
                if message["type"] == "http.response.body" and not message.get("more_body"):
                    completed = True

        async def stream_receive() -> Message:
            return await _receive_until(stream.ending, receive)

        try:
            await self._app(scope, stream_receive, locked_send)
            if stream.ending.is_set() and started and not completed:
                with contextlib.suppress(Exception):  # the peer may be gone as well
                    await asyncio.wait_for(stream.drained(), 1.0)  # what was queued
                    stream.close()
                    async with stream.lock:
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            stream.close()
            if self._streams.get(session_id) is stream:
                self._drop(session_id)

    def end_streams(self) -> None:
        """End every open stream from this side (the server stops): each CLI sees its
        stream end at once, and graceful shutdown does not wait for streams that
        would otherwise never end."""
        self._ending = True
        for stream in self._streams.values():
            stream.ending.set()

    def _drop(self, session_id: str) -> None:
        stream = self._streams.pop(session_id, None)
        if stream is not None:
            stream.close()
            self._on_close(session_id)

    async def notify(self, session_id: str, method: str, params: Mapping[str, Any]) -> bool:
        """Queue a JSON-RPC notification for one session (never waits for the client);
        False if it has no open stream."""
        stream = self._streams.get(session_id)
        if stream is None:
            return False
        return await stream.notify(method, params)

    async def broadcast(self, method: str, params: Mapping[str, Any]) -> None:
        for session_id in list(self._streams):
            await self.notify(session_id, method, params)

    async def keep_alive(self, interval: float) -> None:
        """Queue an SSE comment on every idle stream each ``interval`` seconds, until
        cancelled. A stream whose writes stall is dropped by its own writer."""
        while True:
            await asyncio.sleep(interval)
            for stream in list(self._streams.values()):
                if stream.queued == 0:
                    stream.post(KEEP_ALIVE)
