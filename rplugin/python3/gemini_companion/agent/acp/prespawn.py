"""The ACP agent started before the panel's session is built (issue 31 item 3).

``gemini --acp`` takes over a second to start, and nothing of the plugin's own is
needed for it to begin: its command, folder and environment are in the panel's
``open`` request. So the run starts it first (:func:`begin`, before the session,
its view and the transport are imported and built, tens of milliseconds) and
writes it ``initialize`` (wire.py's, handshake.py's first request); the
transport's spawn (process.py) adopts it (:func:`take`) when its command, folder
and environment are the ones it would start, and its connection does not send
that first request again (wire.py's ``ChildStdio.written_already``). A process nobody adopts within
:data:`UNCLAIMED_SECONDS` (the open failed before its start) is stopped.

Imports only what starting the process needs: this runs before the rest loads.
Use on the server loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

UNCLAIMED_SECONDS = 30.0

# A test hook replaces the transport (agent/service.py's TEST_TRANSPORT_VAR): no
# ACP child is started for it.
TEST_TRANSPORT_VAR = "GEMINI_COMPANION_TEST_TRANSPORT"


@dataclass
class _Started:
    cmd: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    task: asyncio.Task[asyncio.subprocess.Process]
    expiry: asyncio.TimerHandle | None = field(default=None)
    # The line of ``initialize`` written to it as it started.
    written: bytes | None = None


_waiting: list[_Started] = []


def begin(cmd: Sequence[str], cwd: str, env: Mapping[str, str]) -> bool:
    """Start ``cmd`` in ``cwd`` with ``env`` as the transport would (launch.py's
    ``start``), without waiting: the process is created by the loop's next
    callback, so a caller that posts the rest of its work after this call has the
    agent starting before that work. False (and nothing started) when one started
    already waits."""
    if _waiting or not cmd:
        return False
    from . import launch

    loop = asyncio.get_running_loop()

    async def start() -> asyncio.subprocess.Process:
        agent = await launch.start(cmd, cwd=cwd, env=env, log=log)
        process = agent.process
        # ``initialize`` on its way at once, as the transport's connection will send
        # it (its first request: id 0); the agent reads it once it has started.
        from .wire import ChildStdio, initialize_params

        line = ChildStdio.encode(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()}
        )
        if process.stdin is not None:
            process.stdin.write(line)
            started.written = line
        return process

    # The task's first step (the fork) is the next callback of the loop: the caller
    # posts the rest of its work after this call, so the fork comes first.
    started = _Started(tuple(cmd), cwd, dict(env), loop.create_task(start()))
    started.task.add_done_callback(lambda t: t.cancelled() or t.exception())
    started.expiry = loop.call_later(UNCLAIMED_SECONDS, lambda: _expire(started))
    _waiting.append(started)
    return True


def begin_for_open(raw: Mapping[str, object], env: Mapping[str, str]) -> bool:
    """:func:`begin` for the panel's ``open`` request ``raw`` (agent/service.py's
    ``AgentOptions``), ``env`` the environment the transport would give the agent
    before ``agent.acp.env``. Nothing for A2A, a test transport or an ``open``
    that is not well formed (the service says what is wrong)."""
    if raw.get("protocol") != "acp" or env.get(TEST_TRANSPORT_VAR):
        return False
    acp = raw.get("acp")
    if not isinstance(acp, Mapping):
        return False
    try:
        from .options import AcpOptions

        options = AcpOptions.from_mapping(acp)
    except (KeyError, TypeError, ValueError):
        return False
    cwd = str(raw.get("workspace") or os.getcwd())
    return begin(options.cmd, cwd, {**env, **options.env})


async def take(
    cmd: Sequence[str], cwd: str, env: Mapping[str, str]
) -> tuple[asyncio.subprocess.Process | None, bytes | None]:
    """The process :func:`begin` started with this command, folder and environment,
    handed over once, and the line of ``initialize`` already written to it (the
    connection's first request: not to be sent again); (None, None) when there is
    none (or it failed to start: the caller's own start reports why). One that
    does not match is stopped."""
    if not _waiting:
        return None, None
    started = _waiting.pop()
    if started.expiry is not None:
        started.expiry.cancel()
    if (started.cmd, started.cwd, started.env) != (tuple(cmd), cwd, dict(env)):
        await _stop(started)
        return None, None
    try:
        process = await started.task
    except Exception:
        return None, None
    return process, started.written


def _expire(started: _Started) -> None:
    if started in _waiting:
        _waiting.remove(started)
        log.info("the agent started for a panel that did not take it: stopped")
        asyncio.get_running_loop().create_task(_stop(started))


async def _stop(started: _Started) -> None:
    from ..child import AgentProcess

    with contextlib.suppress(Exception):
        process = await started.task
        await AgentProcess(process, log).stop()


async def discard() -> None:
    """Stop any process not taken (the run ends)."""
    while _waiting:
        started = _waiting.pop()
        if started.expiry is not None:
            started.expiry.cancel()
        await _stop(started)


class EarlyOpen:
    """The run's agent requests in order, the agent of an ``open`` started first.

    An ``open`` that will start an ACP agent starts it (:func:`begin_for_open`) and
    is handled on the loop's next turn, with every request that came meanwhile
    (a prompt sent with the open) held behind it in order."""

    def __init__(
        self,
        handle: Callable[[str, Mapping[str, Any]], None],
        env: Callable[[], Mapping[str, str]],
    ) -> None:
        """``handle``: what handles a request; ``env``: the agent's environment
        before ``agent.acp.env`` (the run's, with the terminals' variables)."""
        self._handle = handle
        self._env = env
        self._held: list[tuple[str, Mapping[str, Any]]] | None = None

    def request(self, action: str, args: Mapping[str, Any], *, starts: bool) -> None:
        """``starts``: an ``open`` now would start the agent (no session yet)."""
        if self._held is not None:
            self._held.append((action, args))
            return
        if action == "open" and starts and begin_for_open(args, self._env()):
            self._held = [(action, args)]
            asyncio.get_running_loop().call_soon(self._release)
            return
        self._handle(action, args)

    def _release(self) -> None:
        held, self._held = self._held or [], None
        for action, args in held:
            self._handle(action, args)
