"""One run of ``gemini --acp``: the child process (agent/child.py: started, tied
to Neovim, stopped with the one policy, its stderr in the log) and the JSON-RPC
connection on its pipes (wire.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import shutil
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..child import AgentProcess
from ..transport import TransportError
from .wire import ChildStdio

if TYPE_CHECKING:
    from acp.connection import Connection

log = logging.getLogger(__name__)

Handler = Callable[[str, Any, bool], Awaitable[Any]]
"""What answers the agent's requests and notifications: (method, params, is_notification)."""


@dataclass
class AgentChild:
    """One run of the agent process and its connection."""

    process: AgentProcess
    connection: Connection
    garbage_lines: int = 0
    refused: set[str] = field(default_factory=set)  # why, for each kind refused so far
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        return await self.process.process.wait()

    async def stop(self) -> None:
        """Close the connection, stop the process (agent/child.py's policy)."""
        with contextlib.suppress(Exception):
            await self.connection.close()
        code = await self.process.stop()
        for task in self.tasks:
            task.cancel()
        log.info("agent stopped (code %s)", code)

    def exit_text(self) -> str:
        """Why the agent is gone, with the last lines of its stderr."""
        code = self.returncode
        if code is None:
            what = "the agent closed its output"
        elif code < 0:
            what = f"the agent was killed (signal {-code})"
        else:
            what = f"the agent exited (code {code})"
        tail = " | ".join(
            line if len(line) <= 160 else line[:157] + "..." for line in self.process.tail(3)
        )
        return what + (f": {tail}" if tail else "") + "; the next prompt starts it again"


async def spawn(
    cmd: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    handler: Handler,
    on_garbage: Callable[[AgentChild, bytes], None],
    on_refused: Callable[[AgentChild, str], None] = lambda child, why: None,
    on_update: Callable[[Any], None] | None = None,
) -> AgentChild:
    """Start the agent in ``cwd`` and connect to it; ``handler`` answers what it
    asks, ``on_garbage`` hears of lines on its stdout that are not ACP,
    ``on_refused`` of messages refused (wire.py's :func:`~.wire.parse_message`);
    ``on_update``, when given, takes the ``session/update`` notifications in place
    of ``handler`` (wire.py's fast path)."""
    from . import prespawn

    try:
        # Started already when the panel's open came (prespawn.py), or now.
        taken, written = await prespawn.take(cmd, cwd, env)
        if taken is not None:
            process = AgentProcess(taken, log)
        else:
            from . import launch

            process = await launch.start(cmd, cwd=cwd, env=env, log=log)
    except OSError as exc:
        # A program named without a path that no PATH folder holds is "not found",
        # also when a folder of PATH is closed to this user (exec then says EACCES).
        found = "/" in cmd[0] or shutil.which(cmd[0], path=env.get("PATH")) is not None
        if not isinstance(exc, FileNotFoundError) and found:
            raise TransportError(f"cannot start the agent ({shlex.join(cmd)}): {exc}") from None
        raise TransportError(
            f"cannot start the agent: {cmd[0]!r} was not found. Install the Gemini CLI"
            " (npm install -g @google/gemini-cli) or set agent.acp.cmd"
        ) from None
    log.info("started %s (pid %d) in %s", shlex.join(cmd), process.pid, cwd)
    try:
        # Milliseconds without the package's __init__ (sdk.py): no schema.
        from acp.connection import Connection
    except BaseException:
        await process.stop()
        raise
    holder: list[AgentChild] = []
    stdio = ChildStdio(
        process.process,
        lambda line: on_garbage(holder[0], line),
        lambda why: on_refused(holder[0], why),
        on_update,
    )
    stdio.written_already(written)  # initialize, when written as it started
    child = AgentChild(process, Connection(handler, stdio))
    holder.append(child)
    process.log_lines(process.process.stderr, "agent stderr")
    return child
