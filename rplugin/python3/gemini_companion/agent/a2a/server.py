"""The A2A server the plugin starts (``agent.a2a.cmd``, default the npm package
``@google/gemini-cli-a2a-server``): its command, environment, private Gemini home
(gemini_home.py) and process (agent/child.py: tied to Neovim, stopped with the
one policy, its output in the log under this module's logger).

It runs in the workspace, on the port it picks and prints, behind ``loopback.cjs``
(a Node preload): bound to 127.0.0.1 (0.25.2 listens on every interface
otherwise), answering only requests with the secret the transport makes for each
start (0.25.2 has no authentication of its own), and removing its private home as
the process ends (Linux ends it when the host dies). Stale homes of servers
killed with their host are removed before each start (gemini_home.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..child import AgentProcess
from ..mcp_servers import McpServer
from ..transport import TransportError
from .gemini_home import PrivateHome, remove_stale

# The server's own output is logged as "gemini_companion.agent.a2a.server: stderr: ...".
log = logging.getLogger(__name__)

LOOPBACK_PRELOAD = Path(__file__).with_name("loopback.cjs")
PRELOAD_VARS = "GEMINI_COMPANION_A2A_"  # TOKEN, HOME, NODE_OPTIONS: read by loopback.cjs
READY = re.compile(r"Agent Server started on https?://[^:/\s]+:(\d+)")
START_TIMEOUT = 120.0
CREDENTIALS = ("GEMINI_API_KEY", "USE_CCPA")
INSTALL_HINT = (
    "install it (npm install -g @google/gemini-cli-a2a-server), or set agent.a2a.cmd to"
    " its command, or agent.a2a.url to a running A2A agent"
)


def resolve_command(cmd: list[str], env: Mapping[str, str], cwd: str) -> list[str]:
    """``cmd`` with its program found on ``PATH``.

    The npm package's bin is a symlink to ``a2a-server.mjs``, which starts only when
    run under its own file name (0.25.2 compares ``argv[1]`` with it): the symlink
    is resolved so the server starts whichever way it was installed.
    """
    program = shutil.which(cmd[0], path=env.get("PATH")) or (
        cmd[0] if os.path.isfile(os.path.join(cwd, cmd[0])) else None
    )
    if program is None:
        raise TransportError(f"the A2A server command {cmd[0]!r} was not found: {INSTALL_HINT}")
    real = os.path.realpath(program)
    if real.endswith((".mjs", ".js", ".cjs")):
        program = real
    return [program, *cmd[1:]]


def _node_option_quote(value: str) -> str:
    """``value`` as one word of ``NODE_OPTIONS`` (double quotes, backslash escapes)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def server_env(env: Mapping[str, str], workspace: str, secret: str) -> dict[str, str]:
    """The server's environment: ``env`` (Neovim's, the terminals' variables and
    ``agent.a2a.env``) with its port left to it, the loopback preload and its
    ``secret``, its workspace and a git identity."""
    if not any(env.get(name) for name in CREDENTIALS):
        raise TransportError(
            "the A2A server needs credentials: set GEMINI_API_KEY (a Gemini API key),"
            " or USE_CCPA=true with a Google login and GOOGLE_CLOUD_PROJECT, in the"
            " environment Neovim starts with (or in agent.a2a.env)"
        )
    env = {name: value for name, value in env.items() if not name.startswith(PRELOAD_VARS)}
    env.pop("CODER_AGENT_PORT", None)  # unset: the server picks a free port
    # The preload takes its variables out of the environment and gives the server's
    # children the user's NODE_OPTIONS back: the agent's commands inherit neither.
    node_options = env.get("NODE_OPTIONS", "")
    if node_options:
        env[PRELOAD_VARS + "NODE_OPTIONS"] = node_options
    preload = f"--require {_node_option_quote(str(LOOPBACK_PRELOAD))}"
    env["NODE_OPTIONS"] = f"{node_options} {preload}".strip()
    env[PRELOAD_VARS + "TOKEN"] = secret
    env.setdefault("CODER_AGENT_WORKSPACE_PATH", workspace)
    # Its checkpoints are commits in a shadow repository: they need an identity.
    env.setdefault("GIT_AUTHOR_NAME", "Gemini agent")
    env.setdefault("GIT_AUTHOR_EMAIL", "gemini-agent@localhost")
    env.setdefault("GIT_COMMITTER_NAME", env["GIT_AUTHOR_NAME"])
    env.setdefault("GIT_COMMITTER_EMAIL", env["GIT_AUTHOR_EMAIL"])
    return env


class LocalServer:
    """One started A2A server: its process and private home. Use on the server loop."""

    def __init__(self, process: AgentProcess, home: PrivateHome, port: int) -> None:
        self.process = process
        self.home: PrivateHome | None = home
        self.url = f"http://127.0.0.1:{port}"

    @classmethod
    async def start(
        cls,
        cmd: Sequence[str],
        env: Mapping[str, str],
        workspace: str,
        mcp_servers: Sequence[McpServer | Mapping[str, Any]],
        version: str,
        *,
        secret: str,
    ) -> LocalServer:
        """Start ``cmd`` in ``workspace`` and wait until it listens, answering only
        requests with ``secret``; raises :class:`TransportError` with what to do
        when it cannot (nothing is left behind then)."""
        env = server_env(env, workspace, secret)
        argv = resolve_command(list(cmd), env, workspace)
        # Homes of servers killed with their host before anyone could remove them.
        await asyncio.to_thread(remove_stale)
        try:
            # Neovim's tools, through a Gemini home of the server's own (gemini_home.py).
            home = await asyncio.to_thread(PrivateHome.create, env, mcp_servers, version)
        except OSError as exc:
            raise TransportError(f"could not make the A2A server's private home: {exc}") from exc
        env["GEMINI_CLI_HOME"] = home.path
        env[PRELOAD_VARS + "HOME"] = home.path  # removed by the server as it ends
        log.info("starting the A2A server: %s in %s", argv, workspace)
        try:
            process = await AgentProcess.start(argv, cwd=workspace, env=env, log=log)
        except OSError as exc:
            home.remove()
            raise TransportError(f"could not start {argv[0]}: {exc}: {INSTALL_HINT}") from exc
        port: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def ready(line: str) -> None:
            match = READY.search(line)
            if match and not port.done():
                port.set_result(int(match.group(1)))

        process.log_lines(process.process.stdout, "stdout", ready)
        process.log_lines(process.process.stderr, "stderr", ready)
        server = cls(process, home, 0)
        try:
            number = await asyncio.wait_for(server._wait_port(port), START_TIMEOUT)
        except asyncio.TimeoutError:
            await server.stop()
            raise TransportError(
                f"the A2A server did not start within {START_TIMEOUT:.0f} s"
                f" (see the log file){server.tail()}"
            ) from None
        except BaseException:
            await server.stop()
            raise
        server.url = f"http://127.0.0.1:{number}"
        log.info("the A2A server (pid %d) listens on 127.0.0.1:%d", process.pid, number)
        return server

    async def _wait_port(self, port: asyncio.Future[int]) -> int:
        exited = asyncio.ensure_future(self.process.process.wait())
        done, _ = await asyncio.wait({port, exited}, return_when=asyncio.FIRST_COMPLETED)
        if port in done:
            exited.cancel()
            return port.result()
        await self.process.readers_done()
        raise TransportError(
            f"the A2A server exited at start (code {self.returncode}){self.tail()}"
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        return await self.process.process.wait()

    def tail(self) -> str:
        """The server's last lines, for a message (empty when it printed nothing)."""
        lines = self.process.tail(5)
        return (":\n" + "\n".join(lines)) if lines else ""

    def remove_home(self) -> None:
        home, self.home = self.home, None
        if home is not None:
            home.remove()

    async def stop(self) -> None:
        """Stop the process (agent/child.py's policy), then remove its home."""
        try:
            await self.process.stop()
        finally:
            self.remove_home()
