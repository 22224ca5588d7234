"""The companion's MCP server: Streamable HTTP on 127.0.0.1, in a thread of its own.

Spec: ide-companion-spec.md section I.1. The socket is bound (port 0) on the
caller's thread, so the port is known and the discovery file can be published at
once; the mcp SDK, Starlette and Uvicorn are imported in the server thread, which
keeps their import time (about a second) off Neovim's main loop. Connections that
arrive meanwhile wait in the listen backlog.

Everything that belongs to the server (sessions, context, diffs) lives on this
thread's asyncio loop; other threads reach it only through :meth:`call_soon`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .security import DEFAULT_MAX_BODY_BYTES, ASGIApp, Receive, RequestGuard, Scope, Send
from .tools import IDE_PATH, ToolRegistry, ToolResult

if TYPE_CHECKING:
    import uvicorn

    from .connections import ConnectionTable
    from .sessions import SessionStream, SessionStreams

log = logging.getLogger(__name__)

SERVER_NAME = "gemini-companion.nvim"
SERVER_VERSION = "0.1.0"


class ServerExitedError(RuntimeError):
    """Uvicorn returned without an exception although nobody asked it to exit."""


class SessionListener(Protocol):
    async def session_opened(self, stream: SessionStream) -> None: ...

    def session_closed(self, session_id: str) -> None: ...


@dataclass
class ServerOptions:
    token: str
    keep_alive_seconds: float = 15.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    host: str = "127.0.0.1"
    # Open connections kept at most; past it idle ones are closed (connections.py).
    max_connections: int = 100
    # Seconds a connection may take to send a request's headers.
    header_timeout_seconds: float = 10.0
    # An MCP session with no request in flight and no open event stream for this
    # long is ended (its id then answers 404 and the client initializes again); a
    # connected CLI always holds its stream, so only abandoned sessions expire.
    session_idle_seconds: float = 600.0
    # Sessions open at once, per endpoint; past it a new one gets 503 until some end.
    max_sessions: int = 256


class CompanionServer:
    """One run of the MCP server. Create a new one to restart (the SDK's session
    manager can run only once)."""

    def __init__(
        self,
        options: ServerOptions,
        endpoints: Mapping[str, ToolRegistry],
        listener: SessionListener,
    ) -> None:
        """``endpoints`` maps each served path to its tools; the IDE spec's ``/mcp``
        is required and is the only one whose sessions the listener hears about."""
        if IDE_PATH not in endpoints:
            raise ValueError(f"the IDE endpoint {IDE_PATH} is required")
        self.options = options
        self._endpoints = dict(endpoints)
        self._listener = listener
        self._loop = asyncio.new_event_loop()
        # IPPROTO_TCP given explicitly: asyncio sets TCP_NODELAY on accepted sockets
        # only when their proto says TCP, and with proto 0 every response written in
        # pieces (an SSE stream) met Nagle and delayed ACKs: ~45 ms per request.
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((options.host, 0))
        self._sock.listen(128)
        self._sock.setblocking(False)
        self.port: int = self._sock.getsockname()[1]
        self.streams: SessionStreams | None = None
        self.connections: ConnectionTable | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._thread = threading.Thread(
            target=self._run, name="gemini-companion-server", daemon=True
        )
        self._on_exit: Callable[[BaseException | None], None] | None = None
        self._exit_requested = False

    # -- called from other threads -------------------------------------------------

    def start(self, on_exit: Callable[[BaseException | None], None] | None = None) -> None:
        """Start the server thread. ``on_exit`` runs on that thread once the server has
        ended, before its loop closes: with None after :meth:`request_exit`, else with
        why it ended by itself (the error raised, or :class:`ServerExitedError`)."""
        self._on_exit = on_exit
        self._thread.start()

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run ``fn(*args)`` on the server loop (thread-safe, never blocks); False when
        the loop is gone, and ``fn`` will never run."""
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed
            return False
        return True

    def spawn(self, coro_fn: Callable[[], Awaitable[Any]]) -> bool:
        """Run a coroutine on the server loop, logging any failure (thread-safe); False
        when the loop is gone."""

        def create() -> None:
            task = self._loop.create_task(_logged(coro_fn()))
            _background.add(task)
            task.add_done_callback(_background.discard)

        return self.call_soon(create)

    def request_exit(self) -> None:
        """Ask the server to exit; never waits. Graceful shutdown (bounded by
        ``timeout_graceful_shutdown``: an open SSE stream never ends by itself) goes on
        in the server thread; :meth:`join` waits for it."""

        def exit_now() -> None:
            self._exit_requested = True
            if self.streams is not None:
                self.streams.end_streams()
            if self._uvicorn is not None:
                self._uvicorn.should_exit = True

        if not self.call_soon(exit_now):
            with contextlib.suppress(OSError):
                self._sock.close()

    def discard(self) -> None:
        """Close a server that was never started."""
        with contextlib.suppress(OSError):
            self._sock.close()
        self._loop.close()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the server thread to end (tests and benches); True if it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    # -- the server thread ----------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        error: BaseException | None = None
        try:
            self._loop.run_until_complete(self._serve())
            if not self._exit_requested:
                error = ServerExitedError("the server stopped by itself")
        except BaseException as exc:
            error = exc
            log.exception("server thread failed")
        finally:
            with contextlib.suppress(OSError):
                self._sock.close()
            if isinstance(error, ServerExitedError):
                log.error("%s", error)
            if self._on_exit is not None:
                try:
                    self._on_exit(error)
                except Exception:
                    log.exception("cleaning up after the server failed")
            _cancel_remaining_tasks(self._loop)
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    async def _serve(self) -> None:
        import anyio
        import uvicorn

        from .connections import ConnectionLimits, ConnectionTable, protocol_class

        app, lifespans = self._build_app()
        self.connections = ConnectionTable(
            ConnectionLimits(
                max_connections=self.options.max_connections,
                header_timeout=self.options.header_timeout_seconds,
            )
        )
        config = uvicorn.Config(
            app,
            lifespan="on",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=1,
            ws="none",
            # h11 with a header deadline and a connection cap (connections.py)
            http=protocol_class(self.connections),
        )
        server = uvicorn.Server(config)
        self._uvicorn = server
        if self._exit_requested:  # asked to exit while importing: never serve
            return
        assert self.streams is not None
        async with contextlib.AsyncExitStack() as stack:
            # Uvicorn runs the lifespan of the app it serves (the IDE endpoint's);
            # the other endpoints' session managers are run here.
            for lifespan in lifespans:
                await stack.enter_async_context(lifespan)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.streams.keep_alive, self.options.keep_alive_seconds)
                await server.serve(sockets=[self._sock])
                tg.cancel_scope.cancel()

    def _sdk_app(self, path: str, registry: ToolRegistry) -> Any:
        """The mcp SDK's Streamable HTTP app serving ``registry`` at ``path``."""
        import mcp_types as types
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
            max_request_body_size=self.options.max_body_bytes,
            # Host and Origin are checked by RequestGuard, with a stricter policy.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            # Abandoned sessions (initialized, never closed) held ~39 KB each for ever.
            session_idle_timeout=self.options.session_idle_seconds,
            max_sessions=self.options.max_sessions,
        )

    def _build_app(self) -> tuple[ASGIApp, list[contextlib.AbstractAsyncContextManager[Any]]]:
        from .sessions import SessionStreams

        listener = self._listener
        routes: dict[str, ASGIApp] = {}
        lifespans: list[contextlib.AbstractAsyncContextManager[Any]] = []
        for path, registry in self._endpoints.items():
            app = self._sdk_app(path, registry)
            if path == IDE_PATH:
                self.streams = SessionStreams(
                    app, on_open=listener.session_opened, on_close=listener.session_closed
                )
                routes[path] = self.streams
            else:
                routes[path] = app
                lifespans.append(app.router.lifespan_context(app))
        guard = RequestGuard(
            _PathRouter(routes, lifespan=routes[IDE_PATH]),
            token=self.options.token,
            port=self.port,
            max_body_bytes=self.options.max_body_bytes,
            paths=frozenset(routes),
        )
        return guard, lifespans


class _PathRouter:
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


_background: set[asyncio.Task[Any]] = set()


def _cancel_remaining_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left on the loop (as ``asyncio.run`` does), quietly: a library's
    watcher task left pending would be reported as destroyed."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        with contextlib.suppress(Exception):
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


async def _logged(coro: Awaitable[Any]) -> None:
    try:
        await coro
    except Exception:
        log.exception("background task failed")
