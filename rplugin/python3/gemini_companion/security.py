"""Request checks that run before anything reaches the MCP transport.

The spec requires the bearer token on every request (section I.2). Beyond it, no
browser may reach the server (any ``Origin`` is refused), the ``Host`` must name the
loopback address and our port (DNS rebinding), and bodies are capped. The order is
the order of the checks below, so an unauthenticated peer learns nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"
# Bodies from this size on take turns (see BodyBudget); smaller ones never wait.
BIG_BODY_BYTES = 1024 * 1024


async def send_error(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                # Closed after the answer: the rest of a refused body is never read.
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """ASGI middleware: 403 for any Origin or a foreign Host, 401 without the token
    (or, on ``/mcp``, the agent child's own: its MCP sessions are noted),
    404 off the served paths (``/mcp``, and ``/tools`` for Neovim's tools), 413 for
    bodies over ``max_body_bytes``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        port: int,
        max_body_bytes: int,
        paths: frozenset[str] = frozenset({MCP_PATH}),
        agent_token: str | None = None,
        agent_session: Callable[[str], None] | None = None,
    ) -> None:
        """``agent_token``: the agent child's own token (agent_ide.py), good on
        ``/mcp`` only; each MCP session a request with it names goes to
        ``agent_session``."""
        self._app = app
        self._paths = paths
        self._expected_auth = f"Bearer {token}".encode()
        self._agent_auth = f"Bearer {agent_token}".encode() if agent_token else None
        self._agent_session = agent_session
        self._hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        self._max = max_body_bytes
        self._budget = BodyBudget(max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.lower(), value)
        if b"origin" in headers:
            await send_error(send, 403, "Forbidden: requests with an Origin header are refused")
            return
        if headers.get(b"host", b"").lower() not in self._hosts:
            await send_error(send, 403, "Forbidden: Host must be the loopback address and port")
            return
        auth = headers.get(b"authorization", b"")
        if not hmac.compare_digest(auth, self._expected_auth):
            agent = self._agent_auth
            if agent is None or not hmac.compare_digest(auth, agent) or scope["path"] != MCP_PATH:
                await send_error(send, 401, "Unauthorized")
                return
            session = headers.get(b"mcp-session-id")
            if session and self._agent_session is not None:
                self._agent_session(session.decode("latin-1"))
        if scope["path"] not in self._paths:
            await send_error(send, 404, "Not found")
            return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                too_large = int(length) > self._max
            except ValueError:
                await send_error(send, 400, "Bad Content-Length")
                return
            if too_large:
                await send_error(send, 413, "Request body too large")
                return
        if scope["method"] != "POST" or (length is not None and int(length) < BIG_BODY_BYTES):
            await self._app(scope, receive, send)
            return
        # The body passes through unread: the SDK's transport reads it once, and
        # answers 413 to a chunked body past the limit. Big bodies take turns, so a
        # few at once cannot multiply the host's memory.
        size = int(length) if length is not None else self._max
        async with self._budget.hold(size):
            await self._app(scope, receive, send)


class BodyBudget:
    """Bytes of big request bodies being handled at once; past ``limit`` the next
    big request waits for one to finish (one always runs)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._used = 0
        self._changed: asyncio.Condition | None = None

    @contextlib.asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        if self._changed is None:
            self._changed = asyncio.Condition()
        changed = self._changed
        size = min(size, self._limit)
        async with changed:
            await changed.wait_for(lambda: self._used == 0 or self._used + size <= self._limit)
            self._used += size
        try:
            yield
        finally:
            async with changed:
                self._used -= size
                changed.notify_all()
