"""A real MCP client over real sockets: the mcp SDK's Streamable HTTP client
transport, with a thin JSON-RPC layer that keeps every server notification
(``ide/*`` methods are not in the SDK's typed notification union)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

PROTOCOL_VERSION = "2025-06-18"  # what Gemini CLI 0.61.0 asks for


def initialize_request(client_name: str = "gemini-companion-tests") -> dict[str, Any]:
    """An ``initialize`` request as Gemini CLI sends it (JSON-RPC id 1)."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": client_name, "version": "0"},
        },
    }


def post_headers(token: str) -> dict[str, str]:
    """Headers of a Streamable HTTP POST with the bearer token."""
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }


def open_raw_session(
    http: httpx2.Client, url: str, token: str, client_name: str = "raw"
) -> dict[str, str]:
    """``initialize`` and ``notifications/initialized`` over plain HTTP, for tests that
    need to see the wire; returns the POST headers carrying the new session id."""
    headers = post_headers(token)
    response = http.post(url, content=json.dumps(initialize_request(client_name)), headers=headers)
    headers["mcp-session-id"] = response.headers["mcp-session-id"]
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    http.post(url, content=note, headers=headers)
    return headers


class McpConnection:
    def __init__(self, read: Any, write: Any) -> None:
        self._read = read
        self._write = write
        self._ids = itertools.count(1)
        self._pending: dict[int, MemoryObjectSendStream[dict[str, Any]]] = {}
        send, receive = anyio.create_memory_object_stream[tuple[str, dict[str, Any]]](1000)
        self._notify_send: MemoryObjectSendStream[tuple[str, dict[str, Any]]] = send
        self.notifications: MemoryObjectReceiveStream[tuple[str, dict[str, Any]]] = receive
        self.session_id: str | None = None

    async def reader(self) -> None:
        async for item in self._read:
            if isinstance(item, Exception):
                continue
            message = item.message
            data = message.model_dump(by_alias=True, exclude_none=True)
            if "id" in data and ("result" in data or "error" in data):
                stream = self._pending.pop(int(data["id"]), None)
                if stream is not None:
                    await stream.send(data)
            elif "method" in data and "id" not in data:
                await self._notify_send.send((data["method"], data.get("params") or {}))

    async def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 30
    ) -> dict[str, Any]:
        request_id = next(self._ids)
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](1)
        self._pending[request_id] = send
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params
        await self._write.send(SessionMessage(types.JSONRPCRequest.model_validate(body)))
        with anyio.fail_after(timeout):
            response = await receive.receive()
        if "error" in response:
            raise RuntimeError(f"{method} failed: {response['error']}")
        return dict(response["result"])

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        await self._write.send(SessionMessage(types.JSONRPCNotification.model_validate(body)))

    async def next_notification(self, method: str, timeout: float = 10) -> dict[str, Any]:
        """The next notification named ``method`` (others are skipped)."""
        with anyio.fail_after(timeout):
            while True:
                name, params = await self.notifications.receive()
                if name == method:
                    return params

    async def notifications_until(
        self, method: str, timeout: float = 10
    ) -> list[tuple[str, dict[str, Any]]]:
        """Every notification, in order, up to and including the next ``method``."""
        seen: list[tuple[str, dict[str, Any]]] = []
        with anyio.fail_after(timeout):
            while True:
                seen.append(await self.notifications.receive())
                if seen[-1][0] == method:
                    return seen

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": name, "arguments": arguments})


@asynccontextmanager
async def mcp_connection(port: int, token: str, path: str = "/mcp") -> AsyncIterator[McpConnection]:
    """Initialize a session as Gemini CLI does (protocol 2025-06-18) and keep it open."""
    url = f"http://127.0.0.1:{port}{path}"
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        conn = McpConnection(read, write)
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.reader)
            await conn.request("initialize", initialize_request()["params"])
            await conn.notify("notifications/initialized")
            yield conn
            tg.cancel_scope.cancel()


class SyncMcpConnection:
    """:class:`McpConnection` for synchronous tests: its event loop runs in a thread
    (pynvim's own loop must not run inside another one)."""

    def __init__(self, portal: BlockingPortal, conn: McpConnection) -> None:
        self._portal = portal
        self.conn = conn

    def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 30
    ) -> dict[str, Any]:
        return self._portal.call(self.conn.request, method, params, timeout)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self._portal.call(self.conn.call_tool, name, arguments)

    def next_notification(self, method: str, timeout: float = 10) -> dict[str, Any]:
        return self._portal.call(self.conn.next_notification, method, timeout)

    def notifications_until(
        self, method: str, timeout: float = 10
    ) -> list[tuple[str, dict[str, Any]]]:
        return self._portal.call(self.conn.notifications_until, method, timeout)

    def drain(self) -> list[tuple[str, dict[str, Any]]]:
        """Notifications received so far and not yet consumed."""
        items = []
        while True:
            try:
                items.append(self.conn.notifications.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream):
                return items


@contextmanager
def mcp_client(port: int, token: str, path: str = "/mcp") -> Iterator[SyncMcpConnection]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(mcp_connection(port, token, path)) as conn,
    ):
        yield SyncMcpConnection(portal, conn)
