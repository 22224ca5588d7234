"""The companion: one MCP server, its discovery file and what the CLI sees.

Lifecycle (ide-companion-spec.md section IV): start the server, then publish the
discovery file; on stop, stop the server and delete the file. Methods here are
called on the pynvim host's thread; work that belongs to the server runs on the
server's loop (see server.py).
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .context import ContextTracker
from .diff import DiffController, PathPolicy
from .discovery import (
    DiscoveryError,
    DiscoveryFile,
    discovery_dir,
    remove_stale_files,
    workspace_path_value,
)
from .editor import ERROR, INFO, WARN, Editor
from .server import CompanionServer, ServerOptions, ToolResult

if TYPE_CHECKING:
    from .sessions import SessionStream

log = logging.getLogger(__name__)

CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv")
REMOTE_MARKER_VARS = ("SSH_CONNECTION", "VSCODE_REMOTE_CONTAINERS_SESSION", "REMOTE_CONTAINERS")


def in_container_without_remote_marker(env: Mapping[str, str]) -> bool:
    """True where the CLI would look for the IDE at ``host.docker.internal``.

    The CLI assumes that inside a container the editor runs on the host, unless one
    of the remote markers is set (client-behaviour.md, "IDE mode: transport"). Here
    Neovim and the CLI share the container, so terminals get ``REMOTE_CONTAINERS``.
    """
    return any(os.path.exists(p) for p in CONTAINER_MARKERS) and not any(
        env.get(name) for name in REMOTE_MARKER_VARS
    )


@dataclass
class StartOptions:
    """What the Lua side passes to ``start`` (see lua/gemini_companion/host.lua)."""

    nvim_pid: int
    workspace_dirs: list[str]
    keep_alive_seconds: float = 15.0
    max_body_bytes: int | None = None
    context_debounce_ms: float = 50.0
    context_trusted: bool | None = None
    allowed_dirs: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_lua(cls, raw: Mapping[str, Any]) -> StartOptions:
        options = cls(
            nvim_pid=int(raw["nvim_pid"]),
            workspace_dirs=[str(d) for d in raw.get("workspace_dirs") or []],
        )
        if raw.get("keep_alive_seconds"):
            options.keep_alive_seconds = float(raw["keep_alive_seconds"])
        if raw.get("max_body_bytes"):
            options.max_body_bytes = int(raw["max_body_bytes"])
        context = raw.get("context")
        if isinstance(context, Mapping):
            if context.get("debounce_ms") is not None:
                options.context_debounce_ms = float(context["debounce_ms"])
            if isinstance(context.get("trusted"), bool):
                options.context_trusted = context["trusted"]
        allowed = raw.get("allowed_dirs")
        if isinstance(allowed, Sequence) and not isinstance(allowed, str):
            options.allowed_dirs = [str(d) for d in allowed]
        options.extra = dict(raw)
        return options


@dataclass
class SessionInfo:
    session_id: str
    connected_at: float


class Companion:
    """Owns at most one running server. Not thread-safe: call from the host thread."""

    def __init__(self, editor: Editor, env: Mapping[str, str] | None = None) -> None:
        self._editor = editor
        self._env = dict(os.environ if env is None else env)
        self._server: CompanionServer | None = None
        self._diffs: DiffController | None = None
        self._context: ContextTracker | None = None
        self._discovery: DiscoveryFile | None = None
        self._workspace_dirs: list[str] = []
        self._allowed_dirs: list[str] = []
        self._workspace_path = ""
        self._sessions: dict[str, SessionInfo] = {}
        self._sessions_lock = threading.Lock()
        self._error: str | None = None
        self.started_at: float | None = None

    # -- lifecycle ---------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self, options: StartOptions) -> None:
        if self._server is not None:
            self._editor.notify("Gemini companion is already running", INFO)
            self.publish_state()
            return
        self._error = None
        token = secrets.token_urlsafe(32)  # 256 bits
        directory = discovery_dir(self._env)
        try:
            server_options = ServerOptions(
                token=token, keep_alive_seconds=options.keep_alive_seconds
            )
            if options.max_body_bytes:
                server_options.max_body_bytes = options.max_body_bytes
            server = CompanionServer(server_options, tools=self._call_tool, listener=self)
        except OSError as exc:
            self._fail(f"could not listen on 127.0.0.1: {exc}")
            return
        discovery = DiscoveryFile(directory, options.nvim_pid, server.port, token)
        self._workspace_dirs = list(options.workspace_dirs)
        self._allowed_dirs = list(options.allowed_dirs)
        self._workspace_path = workspace_path_value(self._workspace_dirs)
        try:
            removed = remove_stale_files(directory, options.nvim_pid)
            if removed:
                log.info("removed stale discovery files: %s", removed)
            discovery.write(self._workspace_path)
        except (OSError, DiscoveryError) as exc:
            server.stop()
            self._fail(f"could not write the discovery file in {directory}: {exc}")
            return
        self._server = server
        self._discovery = discovery
        self._diffs = DiffController(self._editor, self._notify_session, self._path_policy)
        self._context = ContextTracker(
            lambda: server.streams,
            debounce_ms=options.context_debounce_ms,
            trusted=options.context_trusted,
        )
        self.started_at = time.time()
        server.start(on_failure=self._server_failed)
        log.info("listening on 127.0.0.1:%d, discovery file %s", server.port, discovery.path)
        self.publish_state()

    def stop(self) -> None:
        server, discovery, diffs = self._server, self._discovery, self._diffs
        context = self._context
        self._server = None
        self._diffs = None
        self._context = None
        if context is not None and server is not None:
            server.call_soon(context.stop)
        if diffs is not None and server is not None:
            server.call_soon(diffs.orphan_all)  # open views stay, marked, with any edits
        self._discovery = None
        self.started_at = None
        if discovery is not None:
            discovery.remove()
        if server is not None:
            server.stop()
        with self._sessions_lock:
            self._sessions.clear()
        self.publish_state()

    def _fail(self, message: str) -> None:
        self._error = message
        log.error(message)
        self._editor.notify(f"Gemini companion: {message}", ERROR)
        self.publish_state()

    def _server_failed(self, exc: BaseException) -> None:
        # Runs on the server thread as it dies: remove the file so no CLI finds a dead server.
        if self._discovery is not None:
            self._discovery.remove()
        self._editor.notify(
            f"Gemini companion: the server stopped unexpectedly ({exc}); see the log file", ERROR
        )
        # Stop through the usual path (Lua -> host thread), so the state and the
        # terminal variables say "not running" again.
        self._editor.server_stopped()

    # -- workspace -----------------------------------------------------------------

    def set_workspace(self, directories: Sequence[str]) -> None:
        self._workspace_dirs = list(directories)
        value = workspace_path_value(self._workspace_dirs)
        if value == self._workspace_path:
            return
        self._workspace_path = value
        if self._discovery is not None:
            try:
                self._discovery.write(value)
            except (OSError, DiscoveryError) as exc:
                self._editor.notify(
                    f"Gemini companion: could not update the discovery file: {exc}", WARN
                )
        self.publish_state()

    def _path_policy(self) -> PathPolicy:
        """Where diffs may show files: the workspace folders and ``diff.allowed_dirs``."""
        return PathPolicy.of([*self._workspace_dirs, *self._allowed_dirs])

    # -- sessions (SessionListener, called on the server loop) ---------------------

    async def session_opened(self, stream: SessionStream) -> None:
        if self._context is not None:  # first: a new CLI sees the context at once
            await self._context.session_opened(stream)
        with self._sessions_lock:
            self._sessions[stream.session_id] = SessionInfo(stream.session_id, stream.opened_at)
        log.info("CLI session %s connected", stream.session_id)
        self.publish_state()

    def session_closed(self, session_id: str) -> None:
        with self._sessions_lock:
            self._sessions.pop(session_id, None)
        log.info("CLI session %s disconnected", session_id)
        if self._context is not None:
            self._context.session_closed(session_id)
        if self._diffs is not None:
            self._diffs.session_closed(session_id)
        self.publish_state()

    # -- tools (called on the server loop) -----------------------------------------

    async def _call_tool(
        self, session_id: str | None, name: str, arguments: Mapping[str, Any]
    ) -> ToolResult:
        diffs = self._diffs
        if diffs is not None and name == "openDiff":
            return await diffs.open_diff(session_id, arguments)
        if diffs is not None and name == "closeDiff":
            return await diffs.close_diff(session_id, arguments)
        return ToolResult.error(f"Unknown tool: {name}")

    async def _notify_session(
        self, session_id: str, method: str, params: Mapping[str, Any]
    ) -> bool:
        server = self._server
        if server is None or server.streams is None:
            return False
        return await server.streams.notify(session_id, method, params)

    # -- context (called on the host thread) -----------------------------------------

    def context_event(self, kind: str, args: Sequence[Any]) -> None:
        """An editor event forwarded by lua/gemini_companion/context.lua."""
        server, context = self._server, self._context
        if server is not None and context is not None:
            server.call_soon(context.handle, kind, list(args))

    # -- the user's answers to a diff (called on the host thread) -------------------

    def diff_accepted(self, diff_id: int, body: str, eol: bool, fileformat: str) -> None:
        server, diffs = self._server, self._diffs
        if server is not None and diffs is not None:
            server.spawn(lambda: diffs.accepted(diff_id, body, eol, fileformat))

    def diff_rejected(self, diff_id: int) -> None:
        server, diffs = self._server, self._diffs
        if server is not None and diffs is not None:
            server.spawn(lambda: diffs.rejected(diff_id))

    # -- state -----------------------------------------------------------------------

    def terminal_env(self) -> dict[str, str]:
        """Variables every job Neovim starts should see while the server runs."""
        if self._server is None or self._discovery is None:
            return {}
        env = {
            "GEMINI_CLI_IDE_SERVER_PORT": str(self._server.port),
            "GEMINI_CLI_IDE_WORKSPACE_PATH": self._workspace_path,
            "GEMINI_CLI_IDE_AUTH_TOKEN": self._discovery.auth_token,
            "GEMINI_CLI_IDE_PID": str(self._discovery.pid),
        }
        if in_container_without_remote_marker(self._env):
            env["REMOTE_CONTAINERS"] = "true"
        return env

    def state(self) -> dict[str, Any]:
        with self._sessions_lock:
            sessions = [
                {"id": s.session_id, "connected_at": s.connected_at}
                for s in self._sessions.values()
            ]
        state: dict[str, Any] = {
            "running": self._server is not None,
            "env": self.terminal_env(),
            "sessions": sessions,
            "workspace_path": self._workspace_path,
        }
        if self._server is not None and self._discovery is not None:
            state["port"] = self._server.port
            state["discovery_file"] = str(self._discovery.path)
            state["started_at"] = self.started_at
        if self._error is not None:
            state["error"] = self._error
        return state

    def publish_state(self) -> None:
        self._editor.publish_state(self.state())

    @property
    def server(self) -> CompanionServer | None:
        return self._server

    @property
    def discovery_path(self) -> Path | None:
        return None if self._discovery is None else self._discovery.path
