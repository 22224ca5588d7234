"""One run of the companion: the MCP server and what lives as long as it (its
discovery file, the CLI sessions, the context tracker, the open diffs, Neovim's
tools and the agent panel's agent), owned by the run's server loop.

A run ends once, in :meth:`ServerRun.close`: on the loop when stopped, on the
server thread when the server dies, or on the host thread when the loop is
already gone; a stop awaits the agent (:meth:`ServerRun.shutdown`) before the
server exits. :class:`~.companion.Companion` (the host thread) decides which run
is current and only posts to it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .agent_ide import AgentIde
from .context import ContextTracker
from .diff import DiffController
from .discovery import (
    DiscoveryError,
    DiscoveryFile,
    discovery_dir,
    remove_stale_files,
    workspace_path_value,
)
from .early import new_token, terminal_env
from .early import take as take_early
from .editor import ERROR, WARN, Editor
from .paths import PathPolicy
from .server import CompanionServer, ServerOptions
from .start_options import StartOptions
from .tools import IDE_PATH, TOOLS_PATH
from .tools.ide import ide_tools
from .tools.neovim import McpHttpServer, NeovimTools, http_server

if TYPE_CHECKING:
    from .agent.acp.prespawn import EarlyOpen
    from .agent.mcp_servers import McpServer
    from .agent.service import AgentService
    from .sessions import SessionStream

log = logging.getLogger(__name__)


@dataclass
class SessionInfo:
    session_id: str
    connected_at: float


def stopped_state(workspace_path: str, error: str | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {
        "running": False,
        "env": {},
        "sessions": [],
        "workspace_path": workspace_path,
    }
    if error is not None:
        state["error"] = error
    return state


Publish = Callable[["ServerRun | None", dict[str, Any]], None]


class StartError(Exception):
    """Why a start failed, as the user is told."""


class ServerRun:
    """One run of the server and what lives as long as it: the discovery file, the
    CLI sessions, the context tracker and the open diffs.

    Made on the host thread; from :meth:`start` on, everything here runs on the
    server loop, except :meth:`close` (see the module's docstring).
    """

    def __init__(
        self,
        editor: Editor,
        publish: Publish,
        options: StartOptions,
        env: Mapping[str, str],
    ) -> None:
        """Listen and write the discovery file; :class:`StartError` says what failed."""
        self._editor = editor
        self._publish = publish
        self._workspace_dirs = list(options.workspace_dirs)
        self._allowed_dirs = list(options.allowed_dirs)
        self._workspace_path = workspace_path = workspace_path_value(self._workspace_dirs)
        self._env = env
        directory = discovery_dir(env)
        # Listening and published already when the host's start command did it
        # (early.py): adopt its socket, token and file.
        early = take_early(options.nvim_pid)
        if early is not None and early.discovery.directory != directory:
            early.discard()
            early = None
        token = early.token if early is not None else new_token()
        # The agent child's own IDE connection (agent_ide.py): its openDiff alone is
        # the twin of an edit the panel reviews.
        self.agent_ide = AgentIde(directory)
        server_options = ServerOptions(
            token=token,
            keep_alive_seconds=options.keep_alive_seconds,
            max_body_bytes=options.max_body_bytes,
            agent_token=self.agent_ide.token,
            agent_session=self.agent_ide.seen,
        )
        self.diffs = DiffController(
            editor,
            self._notify_session,
            self.path_policy,
            send_event=self._send_event,
            claim=self._agent_claims,
        )
        endpoints = {IDE_PATH: ide_tools(self.diffs)}
        self.tools: NeovimTools | None = None
        if options.tools_enabled:
            self.tools = NeovimTools(
                editor, lambda: self._workspace_dirs, options.tools, self.path_policy
            )
            endpoints[TOOLS_PATH] = self.tools.registry()
        try:
            self.server = CompanionServer(
                server_options,
                endpoints,
                listener=self,
                sock=early.socket() if early is not None else None,
                on_serving=self._serving,
            )
        except OSError as exc:
            raise StartError(f"could not listen on 127.0.0.1: {exc}") from exc
        self._token = token
        self._discovery = DiscoveryFile(directory, options.nvim_pid, self.server.port, token)
        try:
            removed = remove_stale_files(directory, options.nvim_pid, keep=self._discovery.path)
            if removed:
                log.info("removed stale discovery files: %s", removed)
            if early is None or early.workspace_path != workspace_path:
                self._discovery.write(workspace_path)
        except (OSError, DiscoveryError) as exc:
            self.server.discard()
            raise StartError(f"could not write the discovery file in {directory}: {exc}") from exc
        self._sessions: dict[str, SessionInfo] = {}
        self.started_at = time.time()
        server = self.server
        self.context = ContextTracker(
            lambda: server.streams,
            debounce_ms=options.context_debounce_ms,
            trusted=options.context_trusted,
        )
        self._close_lock = threading.Lock()
        self.closed = threading.Event()
        # The agent panel's service: built, driven and stopped on this loop.
        # ``agent_stopped`` (thread-safe) is set while no agent of this run may run.
        self.agent: AgentService | None = None
        self.agent_stopped = threading.Event()
        self.agent_stopped.set()
        self._agent_stop: asyncio.Task[None] | None = None
        self._early_open: EarlyOpen | None = None
        log.info(
            "listening on 127.0.0.1:%d, discovery file %s%s",
            server.port,
            self._discovery.path,
            " (both made as the host started)" if early is not None else "",
        )

    def start(self) -> None:
        """Publish the running state and start the server thread (host thread)."""
        self._publish(self, self.state())
        self.server.start(on_exit=self._server_exited)

    # -- on the server loop ------------------------------------------------------------

    def _serving(self) -> None:
        """The server stack is loaded and serves: Lua's state says so (``serving``)."""
        if not self.closed.is_set():
            self._publish(self, self.state())

    def shutdown(self) -> None:
        """Stop: views stay, marked, with any edits; the file goes; the agent stops
        (awaited: its process gone, its private home removed); then the server exits."""
        self.close(None)
        agent, self.agent = self.agent, None
        if agent is None:
            self.agent_stopped.set()
            self.server.request_exit()
            return

        async def stop_agent() -> None:
            try:
                await agent.stop()
            except Exception:
                log.exception("stopping the agent failed")
            finally:
                self.agent_stopped.set()
                self.server.request_exit()

        self._agent_stop = asyncio.get_running_loop().create_task(stop_agent())

    # -- the agent panel (on the loop) ---------------------------------------------------

    def agent_request(self, action: str, args: Mapping[str, Any]) -> None:
        """A request of lua/gemini_companion/agent, posted by ``Companion``; the agent
        of an ``open`` is started before the rest (agent/acp/prespawn.py)."""
        if self._early_open is None:
            from .agent.acp.prespawn import EarlyOpen

            env = lambda: {**self._env, **self.agent_env()}  # noqa: E731
            self._early_open = EarlyOpen(self._agent_request, env)
        starts = self.agent is None or self.agent.session is None
        self._early_open.request(action, args, starts=starts and not self.closed.is_set())

    def _agent_request(self, action: str, args: Mapping[str, Any]) -> None:
        if self.closed.is_set():
            if action != "stop":
                self._editor.notify(
                    "Gemini agent: the companion is not running (:GeminiCompanionStart)", ERROR
                )
            return
        if self.agent is None:
            if action == "stop":
                return
            from .agent.service import AgentService

            self.agent = AgentService(
                self._editor,
                self._env,
                self.agent_env,
                self._agent_mcp_servers,
                path_policy=self.path_policy,
                ide_notify=self._notify_session,
            )
            self.agent_stopped.clear()
        self.agent.request(action, args)
        if action == "open":
            # The agent will connect to Neovim's tools and, in IDE mode, to /mcp: the
            # server stack loads meanwhile (a no-op once it serves).
            self.server.warm()

    def _agent_mcp_servers(self) -> list[McpServer]:
        """Neovim's tools, as the agent should get them."""
        from .agent.mcp_servers import McpServer

        server = self.tools_server()
        return [McpServer.http(server.name, server.url, server.headers)] if server else []

    async def _agent_claims(self, session_id: str, file_path: str, new_content: str) -> bool | str:
        """An ``openDiff`` the agent panel answers, or refuses (agent/service.py): only
        one from the agent's own IDE connection (agent_ide.py) is its edit's twin."""
        agent = self.agent
        if agent is None:
            return False
        own = self.agent_ide.owns(session_id)
        return await agent.claim_ide_diff(session_id, file_path, new_content, own=own)

    async def diff_accepted(
        self, diff_id: int, text: str | None, eol: bool, fileformat: str, option: str | None
    ) -> None:
        """The user accepted diff ``diff_id``: the agent's edit (its review's registry
        says) or a CLI's (``None``: a kept proposal accepted unchanged)."""
        agent = self.agent
        if agent is not None and agent.owns_diff(diff_id):
            if text is None:  # never kept for an agent's edit (diff.lua): send the text
                self._editor.accept_failed(diff_id, "The proposal could not be sent: accept again.")
            else:
                await agent.diff_accepted(diff_id, text, eol, fileformat, option)
            return
        await self.diffs.accepted(diff_id, text, eol, fileformat)

    async def diff_rejected(self, diff_id: int, option: str | None) -> None:
        agent = self.agent
        if agent is not None and agent.owns_diff(diff_id):
            await agent.diff_rejected(diff_id, option)
            return
        await self.diffs.rejected(diff_id)

    def set_workspace(self, directories: list[str]) -> None:
        self._workspace_dirs = directories
        value = workspace_path_value(directories)
        if self.closed.is_set() or value == self._workspace_path:
            return
        self._workspace_path = value
        try:
            self._discovery.write(value)
            self.agent_ide.workspace_changed(value)
        except (OSError, DiscoveryError) as exc:
            self._editor.notify(
                f"Gemini companion: could not update the discovery file: {exc}", WARN
            )
        self._publish(self, self.state())

    async def session_opened(self, stream: SessionStream) -> None:
        if self.closed.is_set():
            return
        await self.context.session_opened(stream)  # first: a new CLI sees the context at once
        self._sessions[stream.session_id] = SessionInfo(stream.session_id, stream.opened_at)
        log.info("CLI session %s connected", stream.session_id)
        self._publish(self, self.state())

    def session_closed(self, session_id: str) -> None:
        log.info("CLI session %s disconnected", session_id)
        if self.closed.is_set():
            return
        self._sessions.pop(session_id, None)
        self.agent_ide.closed(session_id)
        self.context.session_closed(session_id)
        self.diffs.session_closed(session_id)
        self._publish(self, self.state())

    def path_policy(self) -> PathPolicy:
        """Where diffs may show files: the workspace folders and ``diff.allowed_dirs``."""
        return PathPolicy.of([*self._workspace_dirs, *self._allowed_dirs])

    def tools_server(self) -> McpHttpServer | None:
        """Where an MCP client reaches Neovim's tools (None with ``tools.enabled`` off).
        Safe on any thread: the port and token are fixed for the run."""
        if self.tools is None:
            return None
        return http_server(self.server.port, self._token)

    async def _notify_session(
        self, session_id: str, method: str, params: Mapping[str, Any]
    ) -> bool:
        streams = self.server.streams
        if streams is None:
            return False
        return await streams.notify(session_id, method, params)

    def _send_event(self, session_id: str, event: bytearray) -> bool:
        streams = self.server.streams
        stream = streams.streams.get(session_id) if streams is not None else None
        return stream is not None and stream.post(event)

    def state(self) -> dict[str, Any]:
        if self.closed.is_set():
            return stopped_state(self._workspace_path)
        return {
            "running": True,
            "env": self.terminal_env(),
            "sessions": [
                {"id": s.session_id, "connected_at": s.connected_at}
                for s in self._sessions.values()
            ],
            "workspace_path": self._workspace_path,
            "port": self.server.port,
            # The server stack is loaded (server.py): a CLI connecting now is answered
            # at once, without waiting for it.
            "serving": self.server.serving.is_set(),
            "discovery_file": self._discovery.path,
            "started_at": self.started_at,
        }

    def terminal_env(self) -> dict[str, str]:
        """Variables every job Neovim starts should see while the server runs."""
        return terminal_env(self._discovery, self._workspace_path, self._env)

    def agent_env(self) -> dict[str, str]:
        """:meth:`terminal_env` for the agent's child: its own IDE connection."""
        return self.agent_ide.env(self.terminal_env(), self._workspace_path, self.server.port)

    # -- the end -----------------------------------------------------------------------

    def _server_exited(self, error: BaseException | None) -> None:
        # On the server thread, its loop stopped: nothing else touches this run now.
        if error is not None:
            self.close(error)
        agent, self.agent = self.agent, None
        if agent is not None:
            # The server died by itself (a stop took the agent already): the agent
            # still stops on its own loop, stopped but not closed, before it ends.
            try:
                asyncio.get_event_loop().run_until_complete(agent.stop())
            except Exception:
                log.exception("stopping the agent after the server ended failed")
            finally:
                self.agent_stopped.set()

    def close(self, error: BaseException | None) -> None:
        """End the run, once: open views are told their CLI is gone (they stay, with
        any edits), the discovery file is removed and the stopped state published.
        ``error``: the server died by itself; the user is told, and Lua stops
        forwarding events."""
        with self._close_lock:
            if self.closed.is_set():
                return
            self.closed.set()
        self._discovery.remove()  # first: no CLI may find a server that is going
        self.agent_ide.remove()
        self.context.stop()
        self.diffs.orphan_all()
        if self.tools is not None:
            self.tools.cancel_all()
        self._sessions.clear()
        if error is None:
            self._publish(self, stopped_state(self._workspace_path))
            return
        message = f"the server stopped unexpectedly ({error}); see the log file"
        self._publish(self, stopped_state(self._workspace_path, message))
        self._editor.server_stopped()
        self._editor.notify(f"Gemini companion: {message}", ERROR)
