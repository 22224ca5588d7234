"""The agent's own IDE connection, told apart from every other IDE client.

With IDE mode on, the ``gemini --acp`` child the agent panel starts is also an IDE
client of the companion (client-behaviour.md, "With IDE mode on"), and so is any
``gemini`` in a terminal: both reach ``/mcp``. An ``openDiff`` from the child is
the twin of the edit the panel reviews (agent/review.py), answered by the user's
one answer there; an ``openDiff`` from any other client is that client's own diff,
and must never receive the panel's answer (issue 29 item 4).

So the child gets a connection of its own: a token no other client is given, in a
discovery file only it reads. Gemini CLI reads first the legacy file
``gemini-ide-server-<PID>.json`` of the IDE PID ``$GEMINI_CLI_IDE_PID`` names
(client-behaviour.md, "IDE mode: discovery"): the child's environment names this
process (the Python host; a terminal's names Neovim), whose file holds the agent's
token. Every MCP session a request with that token names is the agent's
(:meth:`AgentIde.seen`, from the request guard, security.py); :meth:`AgentIde.owns`
answers the review. The file is written when the agent first starts, rewritten
with the workspace, and removed with the server's own (or as the process ends).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .discovery import _FILE_PREFIX, _FILE_SUFFIX, DiscoveryFile
from .early import new_token

MAX_SESSIONS = 64
"""MCP sessions remembered as the agent's (a child opens one; a restart another)."""


class AgentDiscoveryFile(DiscoveryFile):
    """The agent's discovery file, ``gemini-ide-server-<pid>.json``: the legacy
    name, which only a CLI whose IDE PID is ``pid`` reads (none of a terminal's)."""

    __slots__ = ()

    @property
    def path(self) -> str:
        return os.path.join(self.directory, f"{_FILE_PREFIX}{self.pid}{_FILE_SUFFIX}")


class AgentIde:
    """The agent's token, its discovery file and the MCP sessions it opened. Its
    sessions are read and written on the server loop only."""

    def __init__(self, directory: str) -> None:
        self.token = new_token()
        self.pid = os.getpid()
        self._directory = directory
        self._file: AgentDiscoveryFile | None = None
        self._removed = False
        self._written: str | None = None  # the workspace path written
        self._sessions: dict[str, None] = {}

    def env(
        self, terminal_env: Mapping[str, str], workspace_path: str, port: int
    ) -> dict[str, str]:
        """The agent child's IDE variables: the terminals', naming its own file and
        token (the file written now for the server on ``port``, if not yet)."""
        if self._file is None and not self._removed:
            self._file = AgentDiscoveryFile(self._directory, self.pid, port, self.token)
        if (
            self._file is not None
            and self._written != workspace_path
            and self._file.write(workspace_path)
        ):
            self._written = workspace_path
        return {
            **terminal_env,
            "GEMINI_CLI_IDE_PID": str(self.pid),
            "GEMINI_CLI_IDE_AUTH_TOKEN": self.token,
        }

    def workspace_changed(self, workspace_path: str) -> None:
        """The workspace changed: the file, once written, names the new one."""
        if self._file is not None and self._written not in (None, workspace_path):
            self.env({}, workspace_path, self._file.port)

    def seen(self, session_id: str) -> None:
        """A request with the agent's token named MCP session ``session_id``."""
        sessions = self._sessions
        if session_id in sessions:
            return
        sessions[session_id] = None
        if len(sessions) > MAX_SESSIONS:
            del sessions[next(iter(sessions))]

    def closed(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def owns(self, session_id: str) -> bool:
        """MCP session ``session_id`` is the agent's own IDE connection."""
        return session_id in self._sessions

    def remove(self) -> None:
        """Remove the file for good (the server stops)."""
        self._removed = True
        if self._file is not None:
            self._file.remove()
