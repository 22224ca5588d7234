"""The real Gemini CLI ``IdeClient`` (npm ``@google/gemini-cli-core``), driven by
``tests/interop/ide_client_driver.mjs`` in a Node child process."""

from __future__ import annotations

import contextlib
import fcntl
import json
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness import INTEROP, ROOT

DRIVER = INTEROP / "ide_client_driver.mjs"


def interop_available() -> bool:
    return (INTEROP / "node_modules" / "@google" / "gemini-cli-core").is_dir() and bool(
        shutil.which("node")
    )


def ensure_interop_packages() -> None:
    """Install the pinned npm packages into the git-ignored tests/interop/node_modules,
    once: pytest-xdist's workers take turns (a lock file in .cache/)."""
    if interop_available():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is needed to install @google/gemini-cli-core for the interop tests")
    lock = ROOT / ".cache" / "interop-install.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released as the file closes
        if interop_available():  # another worker installed them meanwhile
            return
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=INTEROP,
            check=True,
            timeout=900,
        )


class IdeClientProcess:
    """``IdeClient`` in a child process with pipes; events arrive on a queue."""

    def __init__(self, env: Mapping[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            ["node", str(DRIVER)],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.strip()
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    self.events.put(json.loads(line))

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send(self, **command: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def expect(
        self,
        event: str,
        predicate: Callable[[dict[str, Any]], bool] = lambda _e: True,
        timeout: float = 20,
    ) -> dict[str, Any]:
        """The next event named ``event`` that satisfies ``predicate``."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"IdeClient: no {event!r} event within {timeout}s; saw {self.seen[-5:]!r}; "
                    f"stderr tail: {''.join(self.stderr[-10:])}"
                )
            try:
                item = self.events.get(timeout=remaining)
            except queue.Empty:
                continue
            self.seen.append(item)
            if item.get("event") == "error":
                raise AssertionError(f"IdeClient driver error: {item['message']}")
            if item.get("event") == event and predicate(item):
                return item

    def connect(self, timeout: float = 30) -> dict[str, Any]:
        self.send(cmd="connect")
        return self.expect("status", lambda e: "connectMs" in e, timeout)

    def connect_times(self, reconnects: int = 3) -> tuple[float, list[float]]:
        """``connect()``'s time in ms, then that of ``reconnects`` warm reconnects."""
        event = self.connect()
        assert event["status"] == "connected", event
        warm = []
        for _ in range(reconnects):
            self.send(cmd="reconnect")
            again = self.expect("status", lambda e: "connectMs" in e)
            assert again["status"] == "connected", again
            warm.append(float(again["connectMs"]))
        return float(event["connectMs"]), warm

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send(cmd="disconnect")
                self.proc.wait(5)
            except Exception:
                self.proc.kill()
                self.proc.wait(5)
