"""gemini-companion.nvim: the pynvim remote-plugin entry point.

The only module that imports pynvim. Each handler forwards to a plain object
(:class:`~gemini_companion.companion.Companion`). Importing this module must stay
cheap: Neovim waits for it while the host starts, so the server stack is imported
later, in the server thread.
"""

from __future__ import annotations

import concurrent.futures
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pynvim

from .companion import Companion, StartOptions
from .editor import ERROR, INFO
from .logfile import configure_logging

log = logging.getLogger("gemini_companion")

_PUBLISH_STATE = "require('gemini_companion.state')._update(...)"
_NOTIFY = "require('gemini_companion.state')._notify(...)"


class NvimEditor:
    """:class:`~gemini_companion.editor.Editor` over pynvim; safe from any thread."""

    def __init__(self, nvim: pynvim.Nvim) -> None:
        self._nvim = nvim

    def _schedule(self, fn: Any) -> None:
        def guarded() -> None:
            try:
                fn()
            except Exception:  # never let a traceback reach :messages
                log.exception("call into Neovim failed")

        self._nvim.async_call(guarded)

    def publish_state(self, state: Mapping[str, Any]) -> None:
        self._schedule(lambda: self._nvim.exec_lua(_PUBLISH_STATE, dict(state), async_=True))

    def notify(self, message: str, level: int = INFO) -> None:
        self._schedule(lambda: self._nvim.exec_lua(_NOTIFY, message, level, async_=True))

    def call_lua(self, code: str, args: Sequence[Any] = ()) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(self._nvim.exec_lua(code, *args))
            except Exception as exc:
                future.set_exception(exc)

        self._nvim.async_call(run)
        return future


@pynvim.plugin
class GeminiCompanionPlugin:
    def __init__(self, nvim: pynvim.Nvim) -> None:
        self._nvim = nvim
        self._companion = Companion(NvimEditor(nvim))

    @pynvim.function("GeminiCompanionHostInfo", sync=True)
    def host_info(self, args: Sequence[Any]) -> dict[str, Any]:
        """Start-up handshake: the channel to notify, and what checkhealth reports."""
        return {
            "channel": self._nvim.channel_id,
            "python": sys.executable,
            "python_version": ".".join(map(str, sys.version_info[:3])),
            "state": self._companion.state(),
        }

    @pynvim.rpc_export("gemini_companion_start")
    def start(self, raw: Mapping[str, Any]) -> None:
        try:
            if raw.get("log_file"):
                configure_logging(str(raw["log_file"]), str(raw.get("log_level") or "info"))
            self._companion.start(StartOptions.from_lua(raw))
        except Exception as exc:
            log.exception("start failed")
            NvimEditor(self._nvim).notify(f"Gemini companion failed to start: {exc}", ERROR)

    @pynvim.rpc_export("gemini_companion_stop")
    def stop(self) -> None:
        self._companion.stop()

    @pynvim.rpc_export("gemini_companion_workspace")
    def workspace(self, directories: Sequence[str]) -> None:
        self._companion.set_workspace(directories)

    @pynvim.shutdown_hook
    def shutdown(self) -> None:
        self._companion.stop()
