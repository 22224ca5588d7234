"""Connected CLI sessions and their server-to-client SSE streams.

The Streamable HTTP transport has one channel from server to client: the SSE
response to the client's ``GET /mcp`` (client-behaviour.md, "IDE mode: transport").
The mcp SDK offers no broadcast and no hook for "this stream is open", and drops
what is sent before it opens, so this ASGI layer wraps the SDK app and keeps the
``send`` of each session's GET response. ``ide/*`` notifications and keep-alive
comments are written to it as whole SSE events, serialised with the SDK's own
writes by a per-stream lock, and the ``on_open`` callback runs while the stream is
fresh so a new client gets the current context before anything else.
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


def sse_event(payload: Mapping[str, Any]) -> bytes:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"event: message\r\ndata: {data}\r\n\r\n".encode()


@dataclass
class SessionStream:
    """The open GET stream of one MCP session."""

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

    async def notify(self, method: str, params: Mapping[str, Any]) -> bool:
        """Write one JSON-RPC notification as an SSE event; False once the stream is gone."""
        return await self.write(sse_event({"jsonrpc": "2.0", "method": method, "params": params}))

    async def write(self, chunk: bytes) -> bool:
        """Write one SSE chunk; False once the stream is gone."""
        if self.closed:
            return False
        try:
            async with self.lock:
                await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
        except Exception:  # the peer went away: ClientDisconnect, OSError, closed transport
            self.closed = True
            return False
        return True


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
        stream = SessionStream(session_id, send)
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
                # The stream is open: hand it over before the SDK writes anything else.
                try:
                    await self._on_open(stream)
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
                    async with stream.lock:
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            stream.closed = True
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
            stream.closed = True
            self._on_close(session_id)

    async def notify(self, session_id: str, method: str, params: Mapping[str, Any]) -> bool:
        """Send a JSON-RPC notification to one session; False if it has no open stream."""
        stream = self._streams.get(session_id)
        if stream is None:
            return False
        ok = await stream.notify(method, params)
        if not ok:
            self._drop(session_id)
        return ok

    async def broadcast(self, method: str, params: Mapping[str, Any]) -> None:
        for session_id in list(self._streams):
            await self.notify(session_id, method, params)

    async def keep_alive(self, interval: float) -> None:
        """Write an SSE comment to every stream each ``interval`` seconds, until cancelled."""
        while True:
            await asyncio.sleep(interval)
            for session_id, stream in list(self._streams.items()):
                if not await stream.write(b": keep-alive\r\n\r\n"):
                    self._drop(session_id)
