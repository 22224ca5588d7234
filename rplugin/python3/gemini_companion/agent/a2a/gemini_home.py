"""A private Gemini home for the A2A server the plugin starts: how it gets
Neovim's tools.

The A2A server 0.25.2 takes MCP servers only from ``mcpServers`` in its settings
(``<home>/.gemini/settings.json`` and the workspace's ``.gemini/settings.json``,
merged key by key: a workspace list replaces the user's) and from extensions
(``<home>/.gemini/extensions/<name>/gemini-extension.json``, read as they are:
neither ``${VAR}`` expansion nor ``gemini extensions link``'s links), where
``<home>`` is ``GEMINI_CLI_HOME`` or else the user's home. The plugin writes into
neither the user's home nor the workspace; it gives the server a home of its own
instead: a fresh directory (0700) whose ``.gemini`` links every entry of the
user's ``.gemini`` (settings, credentials, history, extensions: the server
behaves as it would without the plugin) and adds one extension,
``gemini-companion-nvim``, naming the plugin's ``/tools`` endpoint with its URL
and bearer token (the file is 0600). The directory goes when the server stops.

Entries the user's ``.gemini`` does not have yet and the server creates land in
the private home and go with it. No ``trust`` is set: the server asks before it
calls one of Neovim's tools, as the ACP agent does, and the panel offers "always
allow" in its answer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from ..mcp_servers import McpServer, settings_mcp_server

log = logging.getLogger(__name__)

EXTENSION_NAME = "gemini-companion-nvim"
GEMINI_DIR = ".gemini"
EXTENSIONS = "extensions"


def user_gemini_dir(env: Mapping[str, str]) -> str:
    """The ``.gemini`` the server would use without the plugin."""
    base = env.get("GEMINI_CLI_HOME") or env.get("HOME") or os.path.expanduser("~")
    return os.path.join(base, GEMINI_DIR)


class PrivateHome:
    """One server's private Gemini home (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def create(
        cls,
        env: Mapping[str, str],
        servers: Sequence[McpServer | Mapping[str, Any]],
        version: str,
    ) -> PrivateHome:
        """Make the home for a server started with ``env`` (its ``GEMINI_CLI_HOME``
        or ``HOME`` names the user's), giving it ``servers``."""
        path = tempfile.mkdtemp(prefix="gemini-companion-a2a-")  # 0700
        home = cls(path)
        try:
            home._fill(user_gemini_dir(env), servers, version)
        except OSError:
            home.remove()
            raise
        return home

    def _fill(
        self, user: str, servers: Sequence[McpServer | Mapping[str, Any]], version: str
    ) -> None:
        mine = os.path.join(self.path, GEMINI_DIR)
        os.mkdir(mine, 0o700)
        entries = _entries(user)
        for name in entries:
            if name != EXTENSIONS:
                os.symlink(os.path.join(user, name), os.path.join(mine, name))
        # The fallback .env beside the home (the server reads <home>/.env last).
        dotenv = os.path.join(os.path.dirname(user), ".env")
        if os.path.isfile(dotenv):
            os.symlink(dotenv, os.path.join(self.path, ".env"))
        extensions = os.path.join(mine, EXTENSIONS)
        os.mkdir(extensions, 0o700)
        for name in _entries(os.path.join(user, EXTENSIONS)):
            if name != EXTENSION_NAME:
                os.symlink(os.path.join(user, EXTENSIONS, name), os.path.join(extensions, name))
        entries_of: dict[str, Any] = {}
        for server in servers:
            converted = settings_mcp_server(server)
            if converted is not None:
                server_name, entry = converted
                entries_of[server_name] = {**entry, "description": "The Neovim of this agent panel"}
        if not entries_of:
            return
        own = os.path.join(extensions, EXTENSION_NAME)
        os.mkdir(own, 0o700)
        manifest = {
            "name": EXTENSION_NAME,
            "version": version,
            "description": "Neovim's diagnostics, open buffers, selection and language"
            " servers as tools (gemini-companion.nvim's agent panel)",
            "mcpServers": entries_of,
        }
        fd = os.open(
            os.path.join(own, "gemini-extension.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600
        )
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2)
        log.info("the A2A server's home %s has the MCP servers %s", self.path, list(entries_of))

    def remove(self) -> None:
        """Remove the home (links only: nothing of the user's is followed)."""
        with contextlib.suppress(OSError):
            shutil.rmtree(self.path)


def _entries(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []
