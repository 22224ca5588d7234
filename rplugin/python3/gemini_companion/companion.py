"""The companion: one MCP server, its discovery file and what the CLI sees.

Lifecycle (ide-companion-spec.md section IV): start the server, then publish the
discovery file; on stop, stop the server and delete the file.

Two threads, one owner. :class:`Companion` is called on the pynvim host's thread
and only decides which :class:`~.run.ServerRun` is current. A run's state (its
sessions, context, diffs, discovery file and the agent panel's agent) is owned by
its server loop (run.py): the host thread posts to it
(``CompanionServer.call_soon``) and never reads it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .discovery import workspace_path_value
from .editor import ERROR, INFO, Editor
from .run import ServerRun
from .run_state import StartError, stopped_state
from .start_options import StartOptions
from .text import received_body
from .tools.neovim import McpHttpServer

log = logging.getLogger(__name__)

# As the process ends (Neovim quits), how long the host waits for the agent panel's
# agent to stop (its process gone, its private home removed): Neovim kills the host
# 2 s after asking it to end.
AGENT_EXIT_SECONDS = 1.5


class Companion:
    """Which server run is current. Call from the host thread only; the run's own
    state lives on its server loop."""

    def __init__(self, editor: Editor, env: Mapping[str, str] | None = None) -> None:
        self._editor = editor
        self._env = dict(os.environ if env is None else env)
        self._run: ServerRun | None = None
        self._workspace_dirs: list[str] = []
        self._workspace_path = ""
        self._error: str | None = None  # why the last start failed
        # What Lua was last told, and by which run: publishing comes from the host
        # thread and from server threads (a stopping run and a new one may overlap),
        # so it is ordered by this lock, and a run that is no longer shown is ignored.
        self._publish_lock = threading.Lock()
        self._shown: ServerRun | None = None
        self._state: dict[str, Any] = stopped_state("")
        # Runs told to shut down whose agent may still be stopping (wait_for_agents).
        self._ending: list[ServerRun] = []

    # -- lifecycle ---------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._run is not None and not self._run.closed.is_set()

    @property
    def run(self) -> ServerRun | None:
        """The current run, if any (tests)."""
        return self._run

    def start(self, options: StartOptions) -> None:
        if self.running:
            if not options.quiet:
                self._editor.notify("Gemini companion is already running", INFO)
            self._publish(self._shown, self._state)
            return
        self._workspace_dirs = list(options.workspace_dirs)
        self._workspace_path = workspace_path_value(self._workspace_dirs)
        try:
            run = ServerRun(self._editor, self._publish, options, self._env)
        except StartError as exc:
            self._fail(str(exc))
            return
        self._error = None
        self._run = run
        with self._publish_lock:
            self._shown = run
        run.start()

    def stop(self, wait: float = 0.0) -> None:
        """Post the run's shutdown to its loop and return at once; clean up here when
        the loop is gone. The server thread winds down by itself.

        ``wait`` (only as the process ends): wait that long for the shutdown, then
        clean up here if the loop has not (it may still be importing the server's
        packages), so the discovery file never outlives the process; then up to
        :data:`AGENT_EXIT_SECONDS` for the agent panel's agent to stop."""
        run, self._run = self._run, None
        if run is None:
            self._publish(None, stopped_state(self._workspace_path, self._error))
        elif not run.server.call_soon(run.shutdown):
            run.close(None)  # the loop is gone: nobody else touches the run now
        else:
            self._ending.append(run)
            if wait > 0 and not run.closed.wait(wait):
                run.close(None)
        if wait > 0:
            self.wait_for_agents()

    def wait_for_agents(self, timeout: float = AGENT_EXIT_SECONDS) -> bool:
        """Wait up to ``timeout`` seconds for the agents of the runs stopped so far to
        stop (their processes gone, their private homes removed): the process is
        about to end. True if they have."""
        deadline = time.monotonic() + timeout
        while self._ending:
            if not self._ending[0].agent_stopped.wait(max(deadline - time.monotonic(), 0)):
                return False
            self._ending.pop(0)
        return True

    def _fail(self, message: str) -> None:
        log.error(message)
        self._error = message
        with self._publish_lock:
            self._shown = None
        # The state first: whoever reads the message finds the reason in the state.
        self._publish(None, stopped_state(self._workspace_path, message))
        self._editor.notify(f"Gemini companion: {message}", ERROR)

    def _publish(self, run: ServerRun | None, state: dict[str, Any]) -> None:
        with self._publish_lock:
            shown = self._shown
            if run is not None and run is not shown:
                return  # a run that was replaced meanwhile
            if run is None and shown is not None and not shown.closed.is_set():
                return  # the host's word while a run speaks for itself
            self._state = state
            self._editor.publish_state(state)

    # -- from Lua (host thread): posted to the run's loop ------------------------------

    def set_workspace(self, directories: Sequence[str]) -> None:
        self._workspace_dirs = list(directories)
        value = workspace_path_value(self._workspace_dirs)
        if value == self._workspace_path:
            return
        self._workspace_path = value
        run = self._run
        if run is None or not run.server.call_soon(run.set_workspace, list(directories)):
            self._publish(None, stopped_state(value, self._error))

    def context_event(self, kind: str, args: Sequence[Any]) -> None:
        """An editor event forwarded by lua/gemini_companion/context.lua. ``terminal``
        (a terminal opened: a CLI may be coming) loads the server stack."""
        run = self._run
        if run is None:
            return
        if kind == "terminal":
            run.server.warm()
            return
        run.server.call_soon(run.context.handle, kind, list(args))

    def diff_accepted(
        self, diff_id: int, body: Any, eol: bool, fileformat: str, option: str | None = None
    ) -> None:
        """``body``: the proposal's lines joined by newlines, ``{file = path}`` for a
        big one (diff.lua's ``proposal_content``), or ``{unchanged = true}`` for a kept
        proposal accepted as it was shown; ``option``: the agent's option the user
        named (an agent's edit only: diff.lua refuses one for a CLI's diff)."""
        text: str | None = None  # None: diff.py sends the proposal as the client sent it
        if not (isinstance(body, Mapping) and body.get("unchanged") is True):
            try:
                text = received_body(body)
            except OSError as exc:
                log.error("reading the accepted text of diff %d failed: %s", diff_id, exc)
                self._editor.accept_failed(diff_id, f"The accepted text could not be read: {exc}")
                return
        run = self._run
        if run is None or not run.server.spawn(
            lambda: run.diff_accepted(diff_id, text, eol, fileformat, option)
        ):
            # No server to send it: the view must say so rather than wait for ever.
            self._editor.orphan_diff(diff_id)

    def diff_rejected(self, diff_id: int, option: str | None = None) -> None:
        run = self._run
        if run is not None:
            run.server.spawn(lambda: run.diff_rejected(diff_id, option))

    def tool_result(self, call_id: int, ok: bool, value: Any) -> None:
        """Neovim answered a tool call (lua/gemini_companion/tools/init.lua)."""
        run = self._run
        if run is not None and run.tools is not None:
            run.server.call_soon(run.tools.resolve, call_id, ok, value)

    def tools_server(self) -> McpHttpServer | None:
        """Where an MCP client reaches Neovim's tools while the server runs: the URL
        and the headers (with the bearer token) to hand an agent (agent/mcp_servers.py
        puts it in each protocol's shape); None when stopped or ``tools.enabled`` is off."""
        run = self._run
        if run is None or run.closed.is_set():
            return None
        return run.tools_server()

    # -- the agent panel: posted to the run's loop ----------------------------------------

    def agent_request(self, action: str, args: Mapping[str, Any]) -> None:
        """A request of lua/gemini_companion/agent (through host.lua): the current
        run builds, drives and stops the agent on its loop."""
        run = self._run
        posted = (
            run is not None
            and self.running
            and run.server.call_soon(run.agent_request, action, dict(args))
        )
        if posted:
            return
        if action != "stop":
            self._editor.notify(
                "Gemini agent: the companion is not running (:GeminiCompanionStart)", ERROR
            )

    # -- state -----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The state Lua was last given (a snapshot: safe on any thread)."""
        return self._state
