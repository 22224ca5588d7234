"""The server stack: what the companion's MCP server imports only once a client needs
it (the mcp SDK, Uvicorn, Starlette: server.py says when), and the SDK's Streamable
HTTP app built from it for each endpoint. Importing this module loads none of it."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from .security import ASGIApp, Receive, Scope, Send
from .tools import ToolRegistry, ToolResult

SERVER_NAME = "gemini-companion.nvim"
SERVER_VERSION = "0.1.0"


class PathRouter:
    """Each request to the app of its path; the lifespan to the IDE endpoint's app.
    RequestGuard has already refused any other path."""

    def __init__(self, routes: Mapping[str, ASGIApp], *, lifespan: ASGIApp) -> None:
        self._routes = dict(routes)
        self._lifespan = lifespan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        await self._routes[scope["path"]](scope, receive, send)


def import_server_stack() -> None:
    """What :meth:`server.CompanionServer._serve` and the app it builds import (about half
    a second on a quiet machine), in a worker thread."""
    import anyio  # noqa: F401

    from .sdk import defer_wire_models, skip_package_inits, stand_in

    defer_wire_models()  # before anything imports mcp_types.methods
    import mcp_types  # noqa: F401

    # Not uvicorn's __init__ nor its uvicorn.main: they import its command line
    # (click, the reloader's multiprocessing...), 1.6 MiB the host never uses.
    # What imports them takes one name from each (sdk.py).
    skip_package_inits("uvicorn")
    import uvicorn
    import uvicorn.config
    import uvicorn.server

    vars(uvicorn).setdefault("Config", uvicorn.config.Config)  # uvicorn.lifespan.*
    stand_in("uvicorn.main", Server=uvicorn.server.Server)  # sse_starlette

    from . import bodies, connections, session_cap, sessions  # noqa: F401

    skip_package_inits("mcp", "mcp.server")
    # Not the SDK's OAuth server routes (their handlers and models, 0.5 MiB): the
    # low-level server imports them for apps built with ``auth``, and ours has none.
    stand_in("mcp.server.auth.routes", **dict.fromkeys(AUTH_ROUTES, _no_oauth_routes))
    try:
        import mcp.server.lowlevel
    except ImportError:  # an SDK that asks them for other names: the real ones
        sys.modules.pop("mcp.server.auth.routes", None)
        import mcp.server.lowlevel
    import mcp.server.transport_security  # noqa: F401


# What the mcp SDK's low-level server imports from its OAuth routes.
AUTH_ROUTES = (
    "build_resource_metadata_url",
    "create_auth_routes",
    "create_protected_resource_routes",
)


def _no_oauth_routes(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("the companion's MCP server serves no OAuth routes")


def sdk_app(
    path: str,
    registry: ToolRegistry,
    *,
    max_body_bytes: int,
    session_idle_seconds: float,
    max_sessions: int,
) -> Any:
    """The mcp SDK's Streamable HTTP app serving ``registry`` at ``path``, with
    server.py's limits (ServerOptions)."""
    import mcp_types as types

    from .sdk import skip_package_inits

    skip_package_inits("mcp", "mcp.server")
    from mcp.server.lowlevel import Server
    from mcp.server.transport_security import TransportSecuritySettings

    listed = [
        types.Tool(name=t.name, description=t.description, input_schema=dict(t.input_schema))
        for t in registry
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        session_id = None
        request = getattr(ctx, "request", None)
        if request is not None:
            session_id = request.headers.get("mcp-session-id")
        result: ToolResult = await registry.call(session_id, params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=t) for t in result.texts],
            is_error=result.is_error,
        )

    mcp_server: Server[Any] = Server(
        SERVER_NAME, version=SERVER_VERSION, on_list_tools=list_tools, on_call_tool=call_tool
    )
    mcp_server.middleware = []  # no OpenTelemetry spans from inside an editor
    return mcp_server.streamable_http_app(
        streamable_http_path=path,
        # A POST is answered with one JSON body, not an SSE stream of one event:
        # no stream and no task per request, and the client reads it at once
        # (issue 10: a third less server time per request, and no SSE parser
        # to warm up in a fresh CLI). Nothing here sends request-scoped
        # notifications, which only an SSE answer could carry.
        json_response=True,
        max_request_body_size=max_body_bytes,
        # Host and Origin are checked by RequestGuard, with a stricter policy.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        # Abandoned sessions (initialized, never closed) held ~39 KB each for ever.
        session_idle_timeout=session_idle_seconds,
        max_sessions=max_sessions,
    )
