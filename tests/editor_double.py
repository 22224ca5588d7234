"""An :class:`~gemini_companion.editor.Editor` that records what Lua would be told.

Used where the Python side is tested without Neovim (the diff controller, the
companion's lifecycle): the messages are the RPC surface ``host.lua`` receives,
so asserting on them is asserting on what the Lua side would see. Thread-safe, as
the real one is: the server thread and the test's thread both use it.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Mapping
from typing import Any

from harness import wait_for


class RecordingEditor:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.answers: dict[str, Any] = {}

    def _record(self, name: str, *args: Any) -> None:
        with self._lock:
            self.calls.append((name, args))

    def names(self) -> list[str]:
        with self._lock:
            return [name for name, _ in self.calls]

    def of(self, name: str) -> list[tuple[Any, ...]]:
        """The arguments of every ``name`` message so far, oldest first."""
        with self._lock:
            return [args for n, args in self.calls if n == name]

    def states(self) -> list[dict[str, Any]]:
        return [dict(args[0]) for args in self.of("state")]

    def wait_for(
        self, predicate: Callable[[RecordingEditor], Any], what: str, timeout: float = 10
    ) -> Any:
        return wait_for(lambda: predicate(self), timeout, what)

    # -- one-way -----------------------------------------------------------------------

    def publish_state(self, state: Mapping[str, Any]) -> None:
        self._record("state", dict(state))

    def notify(self, message: str, level: int = 2) -> None:
        self._record("notify", message, level)

    def server_stopped(self) -> None:
        self._record("stopped")

    def host_info(self, query_id: int, info: Mapping[str, Any]) -> None:
        self._record("host_info", query_id, dict(info))

    def finish_diff(self, diff_id: int, result: str) -> None:
        self._record("finish", diff_id, result)

    def orphan_diff(self, diff_id: int) -> None:
        self._record("orphan", diff_id)

    def attach_refused(self, request: Mapping[str, Any], outside: list[str], reason: str) -> None:
        self._record("attach_refused", dict(request), list(outside), reason)

    # -- answered ----------------------------------------------------------------------

    def open_diff(self, spec: Mapping[str, Any]) -> concurrent.futures.Future[Any]:
        return self._answer("open", dict(spec))

    def close_diff(self, diff_id: int, result: str) -> concurrent.futures.Future[Any]:
        return self._answer("close", diff_id, result)

    def accept_failed(self, diff_id: int, message: str) -> concurrent.futures.Future[Any]:
        return self._answer("accept_failed", diff_id, message)

    def _answer(self, name: str, *args: Any) -> concurrent.futures.Future[Any]:
        self._record(name, *args)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(self.answers.get(name, True))
        return future
