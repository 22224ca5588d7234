"""The :class:`~gemini_companion.editor.Editor` over a pynvim ``Nvim`` object.

Safe from any thread: everything goes through ``nvim.async_call``, which runs on
the host's loop where the API may be used. Exceptions are caught and logged, so no
traceback ever reaches the user's ``:messages``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .editor import INFO

if TYPE_CHECKING:
    import concurrent.futures

    import pynvim

log = logging.getLogger(__name__)

_PUBLISH_STATE = "require('gemini_companion.state')._update(...)"
_NOTIFY = "require('gemini_companion.state')._notify(...)"


class NvimEditor:
    """:class:`~gemini_companion.editor.Editor` over pynvim; safe from any thread."""

    def __init__(self, nvim: pynvim.Nvim) -> None:
        self._nvim = nvim

    def _schedule(self, fn: Callable[[], object]) -> None:
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
        import concurrent.futures

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
