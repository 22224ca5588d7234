"""The :class:`~gemini_companion.editor.Editor` over a pynvim ``Nvim`` object.

Every message goes to one Lua function, ``require('gemini_companion.host')._receive``
(``lua/gemini_companion/host.lua``), by name: this is the only Lua code in the
Python package. One-way messages are sent as notifications (``async_=True``), so
nothing waits for them; the others are requests whose answer lands in a future.

Safe from any thread: everything goes through ``nvim.async_call``, which runs on
the host's loop where the API may be used. Exceptions are caught and logged, so no
traceback ever reaches the user's ``:messages``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .editor import INFO

if TYPE_CHECKING:
    import concurrent.futures

    import pynvim

log = logging.getLogger(__name__)

RECEIVE = "return require('gemini_companion.host')._receive(...)"

_HOST_PID = (
    "local c = require('gemini_companion.host').channel return c and vim.fn.jobpid(c) or vim.NIL"
)


DRAW = "nvim_exec_lua"
"""The agent panel's batches on its own channel to Neovim (agent/nvim_channel.py):
``DRAW`` with ``[RECEIVE, ["agent_draw", ops]]``, the same message to the same
``_receive`` as :meth:`NvimEditor.agent_draw`'s."""


def host_pid_request() -> tuple[str, list[Any]]:
    """The request whose answer is the process id of the Neovim's host (that channel
    is used only with the Neovim that started this host)."""
    return "nvim_exec_lua", [_HOST_PID, []]


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

        self._post(guarded)

    def _post(self, fn: Callable[[], object]) -> bool:
        # The session's own call, not ``Nvim.async_call``: that one formats the
        # caller's stack on every call for an error message we never need (``fn``
        # catches its errors): a tenth of the host's CPU while an answer streams
        # (py-spy, issue 25 item 3).
        try:
            self._nvim._session.threadsafe_call(fn)
        except Exception:  # the session is gone (the host is ending): nobody to tell
            log.warning("Neovim is gone; a message to it was dropped")
            return False
        return True

    def _send(self, name: str, *args: Any) -> None:
        """A one-way message: nothing waits for Neovim to run it."""
        self._schedule(lambda: self._nvim.exec_lua(RECEIVE, name, *args, async_=True))

    def _request(self, name: str, *args: Any) -> concurrent.futures.Future[Any]:
        """A message whose answer matters: the future holds it, or the error raised."""
        import concurrent.futures

        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(self._nvim.exec_lua(RECEIVE, name, *args))
            except Exception as exc:
                future.set_exception(exc)

        if not self._post(run):
            future.cancel()  # never posted: whoever awaits it is not left waiting
        return future

    # -- one-way -----------------------------------------------------------------------

    def publish_state(self, state: Mapping[str, Any]) -> None:
        self._send("state", dict(state))

    def notify(self, message: str, level: int = INFO) -> None:
        log.info("message for the user: %s", message)  # Lua shows it cut when long
        self._send("notify", message, level)

    def server_stopped(self) -> None:
        self._send("stopped")

    def host_info(self, query_id: int, info: Mapping[str, Any]) -> None:
        self._send("host_info", query_id, dict(info))

    def finish_diff(self, diff_id: int, result: str) -> None:
        self._send("diff_finish", diff_id, result)

    def orphan_diff(self, diff_id: int) -> None:
        self._send("diff_orphan", diff_id)

    def run_tool(self, call_id: int, name: str, arguments: Mapping[str, Any]) -> None:
        self._send("tool_run", call_id, name, dict(arguments))

    def attach_refused(self, request: Mapping[str, Any], outside: list[str], reason: str) -> None:
        self._send("agent_attach_refused", dict(request), list(outside), reason)

    # -- answered ----------------------------------------------------------------------

    def open_diff(self, spec: Mapping[str, Any]) -> concurrent.futures.Future[Any]:
        return self._request("diff_open", dict(spec))

    def close_diff(self, diff_id: int, result: str) -> concurrent.futures.Future[Any]:
        return self._request("diff_close", diff_id, result)

    def accept_failed(self, diff_id: int, message: str) -> concurrent.futures.Future[Any]:
        return self._request("diff_accept_failed", diff_id, message)

    def read_buffer(self, path: str) -> concurrent.futures.Future[Any]:
        return self._request("buffer_read", path)

    def apply_buffer_edits(
        self, path: str, tick: int, edits: list[dict[str, Any]], options: Mapping[str, Any]
    ) -> concurrent.futures.Future[Any]:
        return self._request("buffer_apply", path, tick, edits, dict(options))

    def agent_draw(self, ops: list[dict[str, Any]]) -> concurrent.futures.Future[Any]:
        """A batch of the panel (agent/view.py): the hot path while an answer streams.

        Sent as a plain msgpack-rpc request whose answer calls back, on pynvim's loop
        without a greenlet, and without ``Nvim.request``'s walk over the arguments
        (plain strings, numbers, lists and dicts: nothing to convert): a third of the
        host's CPU per chunk went there (issue 25 item 3). Called on that loop (the
        answer to one batch sending the next), it is sent at once."""
        import concurrent.futures

        session = getattr(self._nvim._session, "_async_session", None)
        if session is None:  # not the pynvim this was written for: its ordinary request
            return self._request("agent_draw", ops)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        error_wrapper = self._nvim._session.error_wrapper

        def answered(err: Any, result: Any) -> None:
            if err:
                future.set_exception(error_wrapper(err))
            else:
                future.set_result(result)

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                session.request("nvim_exec_lua", [RECEIVE, ["agent_draw", ops]], answered)
            except Exception as exc:
                future.set_exception(exc)

        if threading.current_thread() is getattr(self._nvim._session, "_loop_thread", None):
            run()  # the answer to the last batch is sending the next (agent/view.py)
            return future
        try:
            session.threadsafe_call(run)
        except Exception:  # the loop is gone (the host is ending)
            log.warning("Neovim is gone; a message to it was dropped")
            future.cancel()
        return future
