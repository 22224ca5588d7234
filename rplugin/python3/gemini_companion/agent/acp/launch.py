"""The Gemini CLI started in one process, not two (issue 31 item 3).

``gemini`` 0.61.0 starts by starting itself again: its first Node process loads
the CLI only to work out a heap limit (half the machine's memory, as
``--max-old-space-size``), then runs a second Node process with it and
``GEMINI_CLI_NO_RELAUNCH=true``, and waits for it. In ACP mode nothing else asks
for that second process (only the interactive UI restarts itself), so the panel
starts the second one directly: the same variable, the same heap limit through
``NODE_OPTIONS``. It saves about 400 ms of every start (bench/panel_cost.py).

Only for a command that runs the Gemini CLI (``gemini``, or one naming
``gemini.js`` or ``@google/gemini-cli``), and only where the environment
says nothing of it: a ``GEMINI_CLI_NO_RELAUNCH`` of the user's (``agent.acp.env``,
even empty: the CLI then starts itself again as it would) and a
``--max-old-space-size`` already in ``NODE_OPTIONS`` are kept.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..child import AgentProcess

NO_RELAUNCH = "GEMINI_CLI_NO_RELAUNCH"
HEAP_FLAG = "--max-old-space-size"
_NAMES = frozenset({"gemini", "gemini.js", "gemini.cmd", "gemini.exe"})


def runs_gemini_cli(cmd: Sequence[str]) -> bool:
    """``cmd`` starts the Gemini CLI: ``gemini …``, or names its script or package
    (``node …/gemini.js``, ``npx @google/gemini-cli``, a wrapper around either)."""
    if cmd and os.path.basename(cmd[0]) in _NAMES:
        return True
    return any(
        os.path.basename(word) == "gemini.js" or "@google/gemini-cli" in word for word in cmd
    )


def half_memory_mb() -> int | None:
    """Half the machine's memory in MiB (the CLI's heap limit), or None when unknown."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    return total // (2 * 1024 * 1024) if total > 0 else None


def start_env(cmd: Sequence[str], env: Mapping[str, str]) -> dict[str, str]:
    """The environment to start ``cmd`` with: ``env``, and for the Gemini CLI what
    its own relaunch would give its second process."""
    out = dict(env)
    if NO_RELAUNCH in out or not runs_gemini_cli(cmd):
        return out
    options = out.get("NODE_OPTIONS", "")
    if HEAP_FLAG not in options:
        heap = half_memory_mb()
        if heap is None:
            return out  # the CLI works it out in its own second process
        out["NODE_OPTIONS"] = f"{options} {HEAP_FLAG}={heap}".strip()
    out[NO_RELAUNCH] = "true"
    return out


async def start(
    cmd: Sequence[str], *, cwd: str, env: Mapping[str, str], log: logging.Logger
) -> AgentProcess:
    """Start the ACP agent ``cmd`` (its stdin a pipe) with :func:`start_env`'s
    environment: what prespawn.py and process.py both start."""
    from ..child import AgentProcess

    return await AgentProcess.start(cmd, cwd=cwd, env=start_env(cmd, env), log=log, stdin_pipe=True)
