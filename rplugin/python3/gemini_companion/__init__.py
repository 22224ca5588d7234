"""gemini-companion.nvim: the pynvim remote-plugin entry point.

The only module that imports pynvim. Each handler forwards to a plain object
(:class:`~gemini_companion.companion.Companion`). pynvim's plugin host runs it in a
process of its own that Neovim starts as a job without waiting
(lua/gemini_companion/host.lua). It defines no function, command or autocmd of
Neovim's remote-plugin kind: ``:UpdateRemotePlugins`` registers nothing for it, so
Neovim's shared python3 host never loads a second companion. The CLI waits for the
discovery file all the same, so this module imports nothing of its own at load
time: the companion is imported by the first handler that needs it, and the server
stack later still, in the server thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pynvim

from . import pythonpath

if TYPE_CHECKING:
    from .companion import Companion
    from .nvim_editor import NvimEditor

log = logging.getLogger("gemini_companion")
vim_log_error = 4

# Before anything imports the dependencies: the plugin's venv behind the host's own
# packages when the host is shared (pythonpath.py says why).
venv_status = pythonpath.add_venv()


@pynvim.plugin
class GeminiCompanionPlugin:
    # Created on first use by __getattr__. Not a property: pynvim inspects every
    # attribute of the plugin when it instantiates it (on the first call, while
    # Neovim waits), and a property would import the companion right then.
    _companion: Companion
    _editor: NvimEditor

    def __init__(self, nvim: pynvim.Nvim) -> None:
        self._nvim = nvim
        _plugins.append(self)

    def __getattr__(self, name: str) -> Any:
        if name == "_editor":
            from .nvim_editor import NvimEditor

            self._editor = NvimEditor(self._nvim)
            return self._editor
        if name == "_companion":
            from .companion import Companion

            self._companion = Companion(self._editor)
            return self._companion
        raise AttributeError(name)

    def _existing(self) -> Companion | None:
        companion: Companion | None = self.__dict__.get("_companion")
        return companion

    @pynvim.rpc_export("gemini_companion_host_info")
    def query_info(self, query_id: int, request: Mapping[str, Any]) -> None:
        """checkhealth's question, answered by a message rather than a reply."""
        self._editor.host_info(query_id, self._info(request))

    def _info(self, request: Mapping[str, Any]) -> dict[str, Any]:
        # ``request["packages"]`` (distribution names) asks for their installed
        # versions; looked up only then, it costs milliseconds.
        info: dict[str, Any] = {
            "channel": self._nvim.channel_id,
            "python": sys.executable,
            "python_version": ".".join(map(str, sys.version_info[:3])),
            "venv": venv_status,
            "state": c.state() if (c := self._existing()) else {"running": False},
        }
        if isinstance(request, Mapping) and request.get("packages"):
            info["packages"] = pythonpath.package_versions([str(n) for n in request["packages"]])
        return info

    @pynvim.rpc_export("gemini_companion_start")
    def start(self, raw: Mapping[str, Any]) -> None:
        # The server thread imports its packages later; a host without them is told
        # now, naming them and the fix, rather than by a server that dies.
        missing = pythonpath.missing_packages()
        self._editor.host_info(0, self._info({}))  # query 0: the host's hello
        try:
            from . import run  # noqa: F401 (the run's own imports: one missing is named)
            from .logfile import configure_logging
            from .start_options import StartOptions
        except ImportError as exc:
            missing = [exc.name or str(exc), *missing]
        if missing:
            from .early import discard

            discard()  # nothing will serve the early socket: its file must go
            self._cannot_start(missing)
            return
        try:
            if raw.get("log_file"):
                configure_logging(str(raw["log_file"]), str(raw["log_level"]))
            self._companion.start(StartOptions.from_lua(raw))
        except Exception as exc:
            log.exception("start failed")
            self._notify_error(f"Gemini companion failed to start: {exc}")

    def _cannot_start(self, missing: Sequence[str]) -> None:
        names = ", ".join(repr(name) for name in dict.fromkeys(missing))
        plural = len(set(missing)) > 1
        problem = (
            f"the Python package{'s' if plural else ''} {names}"
            f" {'are' if plural else 'is'} missing for {sys.executable}"
        )
        # host_lacks: the next start ends this host and runs a fresh one, which
        # finds what a build or an install added meanwhile.
        self._editor.publish_state({"running": False, "error": problem, "host_lacks": True})
        self._notify_error(
            f"Gemini companion cannot start: {problem}. Run :GeminiCompanionBuild, then"
            " :GeminiCompanionStart (:checkhealth gemini_companion tells more)."
        )

    def _notify_error(self, message: str) -> None:
        self._editor.notify(message, vim_log_error)

    @pynvim.rpc_export("gemini_companion_stop")
    def stop(self) -> None:
        # Guarded like the two below: without a companion (never started, or its
        # packages missing) there is nothing to stop and no error to raise.
        if (companion := self._existing()) is not None:
            companion.stop()

    @pynvim.rpc_export("gemini_companion_workspace")
    def workspace(self, directories: Sequence[str]) -> None:
        if (companion := self._existing()) is not None:
            companion.set_workspace(directories)

    @pynvim.rpc_export("gemini_companion_context")
    def context(self, kind: str, *args: Any) -> None:
        if (companion := self._existing()) is not None:
            companion.context_event(kind, args)

    @pynvim.rpc_export("gemini_companion_diff_accept")
    def diff_accept(
        self, diff_id: int, body: Any, eol: bool, fileformat: str, option: str | None = None
    ) -> None:
        if (companion := self._existing()) is not None:
            companion.diff_accepted(diff_id, body, eol, fileformat, option)

    @pynvim.rpc_export("gemini_companion_diff_reject")
    def diff_reject(self, diff_id: int, option: str | None = None) -> None:
        if (companion := self._existing()) is not None:
            companion.diff_rejected(diff_id, option)

    @pynvim.rpc_export("gemini_companion_tool_result")
    def tool_result(self, call_id: int, ok: bool, value: Any = None) -> None:
        if (companion := self._existing()) is not None:
            companion.tool_result(call_id, ok, value)

    @pynvim.rpc_export("gemini_companion_agent")
    def agent(self, action: str, args: Mapping[str, Any] | None = None) -> None:
        self._companion.agent_request(action, args or {})

    @pynvim.shutdown_hook
    def shutdown(self) -> None:
        # Neovim is quitting and waits for this process to exit: the run's cleanup
        # (views, discovery file) gets a few milliseconds, the server thread none; an
        # agent the panel started gets a moment to stop (companion.AGENT_EXIT_SECONDS).
        if (companion := self._existing()) is not None:
            if companion.running:
                companion.stop(wait=0.02)
            companion.wait_for_agents()


# The plugin object pynvim made (one per host), for host_exited().
_plugins: list[GeminiCompanionPlugin] = []


def host_exited(error: BaseException | None = None) -> None:
    """pynvim's loop has ended in the plugin's own host process (host.lua's job runs
    this after ``start_host()`` returns or raises: Neovim quits, closed the channel,
    or sent SIGTERM): the companion's run ends (discovery file, views) within a few
    milliseconds, the log is flushed, and the process exits without the
    interpreter's teardown, which takes over a second with the server's packages
    imported and which Neovim's ``:qa`` would wait for. ``error``: what ended the
    loop; pynvim ends it with an exception on SIGTERM, the usual way out."""
    code = 0
    try:
        # Ending already: a second SIGTERM (Neovim sends one as it quits, maybe after
        # the channel closed) must not cut the wait for the agent's stop short.
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        early = sys.modules.get(f"{__name__}.early")
        if early is not None:
            early.discard()  # published early, never served
        for plugin in _plugins:
            companion = plugin._existing()
            if companion is not None:
                if companion.running:
                    companion.stop(wait=0.02)  # Lua's VimLeavePre may have stopped it
                companion.wait_for_agents()
        if error is not None and not str(error).startswith("Received signal"):
            code = 1  # EOFError: Neovim went away without quitting (it was killed)
            log.warning("the Neovim channel ended: %r", error)
        logging.shutdown()
    finally:
        # Whatever is still published goes, even a run whose stop was posted to a
        # server loop that never got to run it (a quit right after a restart).
        from .discovery import remove_published

        remove_published()
        os._exit(code)
