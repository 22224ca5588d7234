"""The companion's MCP server: Streamable HTTP on 127.0.0.1, in a thread of its own.

Spec: ide-companion-spec.md section I.1. The socket is bound (port 0) on the
caller's thread, so the port is known and the discovery file can be published at
once. The mcp SDK, Starlette and Uvicorn (the server stack: about 30 MiB of the
host's memory and half a second of CPU) are imported only once a client needs
them: when the first connection waits on the socket, or earlier when one is
announced (:meth:`CompanionServer.warm`: a terminal opened in Neovim, the agent
panel's agent started). They are imported in a worker thread, off the server
loop, which keeps running what is posted to it; connections that arrive
meanwhile wait in the listen backlog. A host whose user never runs a CLI never
loads them (issue 25 item 4).

Everything that belongs to the server (sessions, context, diffs) lives on this
thread's asyncio loop; other threads reach it only through :meth:`call_soon`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .early import listening_socket
from .security import (
    ASGIApp,
    RequestGuard,
)
from .tools import IDE_PATH, ToolRegistry

if TYPE_CHECKING:
    import uvicorn.server

    from .connections import ConnectionTable
    from .session_cap import SessionCap
    from .sessions import SessionStream, SessionStreams

log = logging.getLogger(__name__)

# The listen queue once serving: clients wait there while the server accepts a few
# at a time (connections.accept_batch).
LISTEN_QUEUE = 1024


class ServerExitedError(RuntimeError):
    """Uvicorn returned without an exception although nobody asked it to exit."""


class SessionListener(Protocol):
    async def session_opened(self, stream: SessionStream) -> None: ...

    def session_closed(self, session_id: str) -> None: ...


@dataclass
class ServerOptions:
    token: str
    # The user's options (keep_alive_seconds, max_request_bytes): no default here,
    # the option schema (lua/gemini_companion/options.lua) holds it.
    keep_alive_seconds: float
    max_body_bytes: int
    host: str = "127.0.0.1"
    # Open connections kept at most; past it idle ones are closed (connections.py).
    max_connections: int = 100
    # Seconds a connection may take to send a request's headers.
    header_timeout_seconds: float = 10.0
    # An MCP session with no request in flight and no open event stream for this
    # long is ended (its id then answers 404 and the client initializes again); a
    # connected CLI always holds its stream, so only abandoned sessions expire.
    session_idle_seconds: float = 600.0
    # Sessions open at once, per endpoint; past it the one idle the longest (no
    # request in flight, no open stream) is ended to make room (session_cap.py).
    max_sessions: int = 256
    # The agent child's own token on /mcp, and who hears of its sessions (agent_ide.py).
    agent_token: str | None = None
    agent_session: Callable[[str], None] | None = None


class CompanionServer:
    """One run of the MCP server. Create a new one to restart (the SDK's session
    manager can run only once)."""

    def __init__(
        self,
        options: ServerOptions,
        endpoints: Mapping[str, ToolRegistry],
        listener: SessionListener,
        sock: socket.socket | None = None,
        on_serving: Callable[[], None] | None = None,
    ) -> None:
        """``endpoints`` maps each served path to its tools; the IDE spec's ``/mcp``
        is required and is the only one whose sessions the listener hears about.
        ``sock``: a socket already listening (early.py), else one is made here.
        ``on_serving``: called on the server loop once the stack is loaded and serves."""
        if IDE_PATH not in endpoints:
            raise ValueError(f"the IDE endpoint {IDE_PATH} is required")
        self.options = options
        self._endpoints = dict(endpoints)
        self._listener = listener
        self._loop = asyncio.new_event_loop()
        self._sock = sock if sock is not None else listening_socket(options.host)
        self.port: int = self._sock.getsockname()[1]
        self.streams: SessionStreams | None = None
        self.connections: ConnectionTable | None = None
        # Each endpoint's session table (session_cap.py), once the app is built.
        self.session_caps: dict[str, SessionCap] = {}
        self._uvicorn: uvicorn.server.Server | None = None
        self._thread = threading.Thread(
            target=self._run, name="gemini-companion-server", daemon=True
        )
        self._on_exit: Callable[[BaseException | None], None] | None = None
        self._exit_requested = False
        self._on_serving = on_serving
        # Why the stack was loaded: None while at rest, then "warm" (announced by
        # warm()) or "connection" (a client was already waiting). Server loop only.
        self._woken_by: str | None = None
        self._wake: asyncio.Future[None] | None = None
        # Set once the stack is loaded and Uvicorn serves (thread-safe: tests, benches).
        self.serving = threading.Event()

    # -- called from other threads -------------------------------------------------

    def start(self, on_exit: Callable[[BaseException | None], None] | None = None) -> None:
        """Start the server thread. ``on_exit`` runs on that thread once the server has
        ended, before its loop closes: with None after :meth:`request_exit`, else with
        why it ended by itself (the error raised, or :class:`ServerExitedError`)."""
        self._on_exit = on_exit
        from .allocator import allocator

        allocator.one_heap()  # before the host's first thread (this one)
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

    def warm(self) -> bool:
        """A client is coming (a terminal opened, the agent started): load the server
        stack now, in a worker thread, and warm it up, rather than when the client's
        first connection waits for it. Thread-safe, never waits; False when the loop
        is gone."""
        return self.call_soon(self._wake_up, "warm")

    def _wake_up(self, why: str) -> None:
        if self._woken_by is None:
            self._woken_by = why
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def request_exit(self) -> None:
        """Ask the server to exit; never waits. Graceful shutdown (bounded by
        ``timeout_graceful_shutdown``: an open SSE stream never ends by itself) goes on
        in the server thread; :meth:`join` waits for it."""

        def exit_now() -> None:
            self._exit_requested = True
            self._wake_up("exit")
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

    async def _until_needed(self) -> None:
        """Return once the stack is needed: a connection waits on the socket (the
        loop watches it for one), or :meth:`warm` or an exit was asked."""
        if self._woken_by is not None:
            return
        loop = asyncio.get_running_loop()
        self._wake = loop.create_future()
        fd = self._sock.fileno()
        loop.add_reader(fd, self._wake_up, "connection")
        try:
            await self._wake
        finally:
            loop.remove_reader(fd)
            self._wake = None

    async def _serve(self) -> None:
        await self._until_needed()
        if self._exit_requested:
            return
        woken_by = self._woken_by
        log.info("loading the server stack (%s)", woken_by)
        # Imported off the loop: meanwhile it runs what is posted to it (the agent
        # panel starts its agent at once, issue 25 item 1).
        from .server_stack import import_server_stack

        await asyncio.to_thread(import_server_stack)
        import anyio
        from uvicorn.config import Config
        from uvicorn.server import Server

        from .connections import ConnectionLimits, ConnectionTable, accept_batch, protocol_class

        app, lifespans = self._build_app()
        self.connections = ConnectionTable(
            ConnectionLimits(
                max_connections=self.options.max_connections,
                header_timeout=self.options.header_timeout_seconds,
            )
        )
        config = Config(
            app,
            lifespan="on",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=1,
            ws="none",
            # h11 with a header deadline and a connection cap (connections.py)
            http=protocol_class(self.connections),
            # The event loop accepts up to this many connections in one go, before
            # the cap sees any: a few, so a flood never reaches the descriptor
            # limit. The listen queue is made long again once serving (_started).
            backlog=accept_batch(self.connections.limits),
        )
        server = Server(config)
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
                tg.start_soon(self._started, server, app, woken_by == "warm")
                await server.serve(sockets=[self._sock])
                tg.cancel_scope.cancel()

    async def _started(self, server: uvicorn.server.Server, app: ASGIApp, warm_up: bool) -> None:
        """Once Uvicorn serves: say so, and warm the app up when a client was only
        announced (one already waiting warms it with its own requests, and a
        throwaway session beside them would only slow them down)."""
        while not server.started:  # noqa: ASYNC110 (uvicorn offers a flag, no event)
            await asyncio.sleep(0.002)
        # Serving set the socket's listen queue to the accept batch: a client that
        # connects during a flood waits in a longer one, not for its SYN to be sent
        # again a second later.
        with contextlib.suppress(OSError):
            self._sock.listen(LISTEN_QUEUE)
        if warm_up:
            await self._warm_up(app)
        self.serving.set()
        if self._on_serving is not None:
            self._on_serving()

    async def _warm_up(self, app: ASGIApp) -> None:
        """Run one throwaway MCP session through the whole app.

        The first request of each kind costs the SDK and pydantic 10-25 ms of lazy
        set-up (about 50 ms for initialize, tools/list and tools/call together, ten
        times a later one): paid here, in the server thread, rather than by the
        first CLI that connects. It goes straight to the ASGI app, so no socket,
        no CLI session (no GET stream) and nothing the user can see."""
        from .warm_up import warm_up

        started = time.perf_counter()
        try:
            for path in self._endpoints:  # /mcp first, then /tools (the agent's)
                await warm_up(app, self.options.token, self.port, path)
        except Exception:
            log.warning("warming the server up failed", exc_info=True)
            return
        log.info("server warmed up in %.1f ms", (time.perf_counter() - started) * 1000)

    def _build_app(self) -> tuple[ASGIApp, list[contextlib.AbstractAsyncContextManager[Any]]]:
        from .bodies import BigProposals
        from .server_stack import PathRouter, sdk_app
        from .session_cap import SessionCap
        from .sessions import SessionStreams

        listener = self._listener
        routes: dict[str, ASGIApp] = {}
        lifespans: list[contextlib.AbstractAsyncContextManager[Any]] = []
        for path, registry in self._endpoints.items():
            app = sdk_app(
                path,
                registry,
                max_body_bytes=self.options.max_body_bytes,
                session_idle_seconds=self.options.session_idle_seconds,
                max_sessions=self.options.max_sessions,
            )
            capped = SessionCap(app, max_sessions=self.options.max_sessions)
            self.session_caps[path] = capped
            if path == IDE_PATH:
                self.streams = SessionStreams(
                    capped, on_open=listener.session_opened, on_close=listener.session_closed
                )
                # A big openDiff's proposal is set aside before the SDK sees the body.
                routes[path] = BigProposals(self.streams)
            else:
                routes[path] = capped
                lifespans.append(app.router.lifespan_context(app))
        guard = RequestGuard(
            PathRouter(routes, lifespan=routes[IDE_PATH]),
            token=self.options.token,
            port=self.port,
            max_body_bytes=self.options.max_body_bytes,
            paths=frozenset(routes),
            agent_token=self.options.agent_token,
            agent_session=self.options.agent_session,
        )
        return guard, lifespans


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
