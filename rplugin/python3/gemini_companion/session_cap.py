"""A cap on open MCP sessions that makes room instead of locking clients out.

The mcp SDK refuses a new session with 503 once ``max_sessions`` are open, and a
session a client initialized and never closed (no ``DELETE``) stays open until it
idles out (``session_idle_seconds``, ten minutes): 3000 abandoned ``initialize``
calls left every new client, the real CLI included, refused for ten minutes.

This ASGI layer sits right in front of one endpoint's SDK app and keeps its own
table of the sessions the SDK opened through it, in the order they were last used,
with how many requests each has in flight (an open event stream is a request in
flight for as long as it is open). A request that would open a session past the cap
first ends the session that has been idle the longest, one with no request in flight
and so no open stream, with a ``DELETE`` through the SDK app as a client would send;
that session's id then answers 404 and its client initializes again. Only when every
session is busy is the newcomer refused (503). A connected CLI always holds its
stream, so it is never the one ended.

The SDK is given the same cap: it counts no session this table does not (the table
may still hold one that idled out, which is then simply the first to go), so its
own refusal is never reached.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field

from .security import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

SESSION_HEADER = b"mcp-session-id"

# The JSON-RPC error code the SDK itself answers a refused session with.
_INTERNAL_ERROR = -32603


@dataclass
class _Session:
    in_flight: int = 0
    last_used: float = field(default_factory=time.monotonic)


class SessionCap:
    """At most ``max_sessions`` sessions of ``app``; past it the longest idle one ends.

    Runs on the server loop."""

    def __init__(self, app: ASGIApp, *, max_sessions: int) -> None:
        if max_sessions <= 0:
            raise ValueError("max_sessions must be positive")
        self._app = app
        self.max_sessions = max_sessions
        # Least recently used first.
        self._sessions: dict[str, _Session] = {}
        # Requests without a session id being served: each may open one.
        self._opening = 0
        self.ended = 0  # sessions ended to make room
        self.refused = 0  # newcomers refused because every session was busy

    def __len__(self) -> int:
        return len(self._sessions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        session_id = _session_id(scope)
        if session_id is None:
            await self._serve_opening(scope, receive, send)
        else:
            await self._serve_session(session_id, scope, receive, send)

    async def _serve_opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request with no session id: it opens one if it is an ``initialize``."""
        victim = None
        if len(self._sessions) + self._opening >= self.max_sessions:
            victim = self._idle_longest()
            if victim is None:
                self.refused += 1
                if self.refused == 1 or self.refused % 1000 == 0:
                    log.warning(
                        "refusing a new MCP session: all %d are in use (%d refused so far)",
                        self.max_sessions,
                        self.refused,
                    )
                await _refuse(send, self.max_sessions)
                return
            del self._sessions[victim]
        self._opening += 1  # the room is taken before anything is awaited
        opened: str | None = None

        async def watch(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers", []):
                    if key.lower() == SESSION_HEADER:
                        opened = bytes(value).decode("latin-1")
            await send(message)

        try:
            if victim is not None:
                await self._end(victim, scope)
            await self._app(scope, receive, watch)
        finally:
            self._opening -= 1
            if opened is not None:
                self._sessions[opened] = _Session()

    async def _serve_session(
        self, session_id: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        session = self._sessions.get(session_id)
        if session is None:  # unknown, ended or never ours: the SDK answers
            await self._app(scope, receive, send)
            return
        session.in_flight += 1
        self._sessions[session_id] = self._sessions.pop(session_id)  # most recently used
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, watch)
        finally:
            session.in_flight -= 1
            session.last_used = time.monotonic()
            gone = status == 404 or (scope["method"] == "DELETE" and status < 400)
            if gone and self._sessions.get(session_id) is session:
                del self._sessions[session_id]

    def _idle_longest(self) -> str | None:
        """The least recently used session with nothing in flight, if any."""
        for session_id, session in self._sessions.items():
            if session.in_flight == 0:
                return session_id
        return None

    async def _end(self, session_id: str, like: Scope) -> None:
        """End ``session_id`` as its client would: a ``DELETE`` through the SDK app."""
        self.ended += 1
        if self.ended == 1 or self.ended % 1000 == 0:
            log.warning(
                "%d MCP sessions open (the cap): ending the longest idle one (%d so far)",
                self.max_sessions,
                self.ended,
            )
        scope: Scope = {
            key: like[key]
            for key in ("type", "asgi", "http_version", "scheme", "path", "raw_path", "root_path")
            if key in like
        }
        scope.update(
            method="DELETE",
            query_string=b"",
            headers=[(SESSION_HEADER, session_id.encode("latin-1"))],
            client=like.get("client"),
            server=like.get("server"),
        )
        try:
            await asgi_request(self._app, scope, b"")
        except Exception:
            log.warning("ending MCP session %s failed", session_id, exc_info=True)


def _session_id(scope: Scope) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == SESSION_HEADER:
            return bytes(value).decode("latin-1")
    return None


async def _refuse(send: Send, cap: int) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": _INTERNAL_ERROR,
                "message": f"Too many open sessions: all {cap} are in use",
            },
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def asgi_request(app: ASGIApp, scope: Scope, body: bytes) -> tuple[int, dict[bytes, bytes]]:
    """One request straight into the ASGI app, with no socket: its status and
    response headers (the body is dropped)."""
    done = asyncio.Event()
    sent = False
    status = 0
    response_headers: dict[bytes, bytes] = {}

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
            response_headers.update((k.lower(), v) for k, v in message.get("headers", []))

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    return status, response_headers
