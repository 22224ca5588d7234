"""Agent child processes, for both protocols: started, tied to Neovim, stopped
with one policy, their output in the log.

- Started in a process group of its own (stopping it stops the shells and tools
  it started) and, on Linux, asked to receive SIGTERM when the thread that
  started it (the server loop's) ends, even if Neovim is killed (PDEATHSIG).
- Stopped with one policy (:meth:`AgentProcess.stop`): its stdin closed (when it
  is a pipe) and SIGTERM to its group, at once (``gemini --acp`` 0.61.0 with a
  session open does not exit within 2 s of the end of its input, and exits
  cleanly, code 0, on SIGTERM; the A2A server exits on SIGTERM); then, if it
  has not exited within :data:`GRACE_SECONDS`, SIGKILL to its group, waited
  for up to :data:`GRACE_SECONDS`. Even when the process exited by itself its
  group gets the SIGTERM: the shells and tools it started go too.
- What it prints that is not the protocol (stderr, and stdout for a server
  that speaks HTTP) goes to the log a line at a time, ``"<label>: <line>"``, the
  last lines kept for an error message (:meth:`AgentProcess.tail`).

Use on the server loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

GRACE_SECONDS = 2.0
TAIL_LINES = 20


def _die_with_parent() -> Any:
    """A ``preexec_fn`` that asks Linux to end the child when the thread that
    started it (the server loop's) ends, even if Neovim is killed; None elsewhere.
    Looked up before the fork: the child only makes one system call."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM)

    return preexec


class AgentProcess:
    """One started agent process (see the module docstring)."""

    def __init__(self, process: asyncio.subprocess.Process, log: logging.Logger) -> None:
        self.process = process
        self._log = log
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._readers: list[asyncio.Task[None]] = []

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        log: logging.Logger,
        stdin_pipe: bool = False,
    ) -> AgentProcess:
        """Start ``argv``; stdout and stderr are pipes (read them with
        :meth:`log_lines`, or stdout as the protocol), stdin a pipe with
        ``stdin_pipe`` else ``/dev/null``. Raises :class:`OSError` when it cannot
        start (the caller says what to install)."""
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if stdin_pipe else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with_parent(),
        )
        return cls(process, log)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def log_lines(
        self,
        stream: asyncio.StreamReader | None,
        label: str,
        on_line: Callable[[str], None] | None = None,
    ) -> asyncio.Task[None]:
        """Read ``stream`` a line at a time until it ends: each non-empty line to the
        log (``"<label>: <line>"``) and the tail, then to ``on_line``. A line longer
        than the stream's buffer is skipped."""
        assert stream is not None
        task = asyncio.get_running_loop().create_task(self._read(stream, label, on_line))
        self._readers.append(task)
        return task

    async def _read(
        self,
        stream: asyncio.StreamReader,
        label: str,
        on_line: Callable[[str], None] | None,
    ) -> None:
        while True:
            try:
                raw = await stream.readline()
            except ValueError:  # a line longer than the buffer: skip it
                continue
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip()
            if not line:
                continue
            self._tail.append(line)
            self._log.info("%s: %s", label, line)
            if on_line is not None:
                on_line(line)

    async def readers_done(self) -> None:
        """Until every stream read by :meth:`log_lines` has ended."""
        await asyncio.gather(*self._readers, return_exceptions=True)

    def tail(self, count: int = TAIL_LINES) -> list[str]:
        """The last ``count`` lines the process printed (outside the protocol)."""
        return list(self._tail)[-count:]

    async def stop(self) -> int | None:
        """Stop it with the one policy (module docstring); its exit code."""
        process = self.process
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), GRACE_SECONDS)
            if process.returncode is not None:
                break
        for task in self._readers:
            task.cancel()
        self._readers = []
        return process.returncode
