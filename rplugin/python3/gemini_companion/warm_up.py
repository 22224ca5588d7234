"""One throwaway MCP session straight into the server's ASGI app, as soon as it
serves (server.py's ``_warm_up``): the first request of each kind costs the SDK and
pydantic 10-25 ms of lazy set-up, paid here rather than by the first CLI that
connects. No socket, no CLI session (no GET stream), nothing the user can see."""

from __future__ import annotations

import json

from .security import ASGIApp, Scope
from .tools import IDE_PATH


async def _asgi_post(
    app: ASGIApp,
    headers: list[tuple[bytes, bytes]],
    body: bytes | None,
    method: str = "POST",
    path: str = IDE_PATH,
) -> tuple[int, dict[bytes, bytes]]:
    """One request to the endpoint ``path`` straight into the ASGI app."""
    from .session_cap import asgi_request

    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    return await asgi_request(app, scope, body or b"")


async def warm_up(app: ASGIApp, token: str, port: int, path: str = IDE_PATH) -> None:
    """initialize, initialized, tools/list, a tools/call (of no tool) and DELETE, on
    the endpoint ``path`` (each endpoint's SDK server has lazy set-up of its own:
    Neovim's tools' schemas for /tools, which the agent panel's agent lists while
    its ``session/new`` waits)."""
    headers = [
        (b"host", f"127.0.0.1:{port}".encode()),
        (b"authorization", f"Bearer {token}".encode()),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
    ]
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "warm-up", "version": "0"},
        },
    }
    status, response = await _asgi_post(app, headers, json.dumps(initialize).encode(), path=path)
    session = response.get(b"mcp-session-id")
    if status != 200 or session is None:
        return
    headers += [(b"mcp-session-id", session), (b"mcp-protocol-version", b"2025-06-18")]
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "", "arguments": {}},
        },
    ):
        await _asgi_post(app, headers, json.dumps(message).encode(), path=path)
    await _asgi_post(app, headers, None, "DELETE", path=path)
