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
and bearer token (the file is 0600).

The directory goes with the server, however it ends: the host removes it when
the server stops; the server's preload (``loopback.cjs``) removes it when the
server process ends, which Linux makes happen when the host dies (``:qa``, or a
kill of Neovim or of the host); and a home whose processes were all killed before
they could is removed at the next start (:func:`remove_stale`). The host holds an
exclusive ``flock`` on the home's ``.lock`` for as long as it uses the home: a
home whose lock can be taken has no owner left.

Entries the user's ``.gemini`` does not have yet and the server creates land in
the private home and go with it. No ``trust`` is set: the server asks before it
calls one of Neovim's tools, as the ACP agent does, and the panel offers "always
allow" in its answer.
"""

from __future__ import annotations

import contextlib
import fcntl
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
PREFIX = "gemini-companion-a2a-"
LOCK = ".lock"
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
        self._lock: int | None = None

    @classmethod
    def create(
        cls,
        env: Mapping[str, str],
        servers: Sequence[McpServer | Mapping[str, Any]],
        version: str,
    ) -> PrivateHome:
        """Make the home for a server started with ``env`` (its ``GEMINI_CLI_HOME``
        or ``HOME`` names the user's), giving it ``servers``."""
        path = tempfile.mkdtemp(prefix=PREFIX)  # 0700
        home = cls(path)
        try:
            home._lock = _take_lock(path, create=True)
            if home._lock is None:  # cannot be: nobody else knows the new folder
                raise OSError(f"{path} is locked by another process")
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
        lock, self._lock = self._lock, None
        if lock is not None:
            os.close(lock)


def _take_lock(home: str, *, create: bool = False) -> int | None:
    """An open descriptor of ``home``'s lock file, locked exclusively; None when
    another process holds the lock. Not inherited by child processes."""
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | (os.O_CREAT | os.O_EXCL if create else 0)
    fd = os.open(os.path.join(home, LOCK), flags, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_stale(directory: str | None = None) -> list[str]:
    """Remove the private homes in ``directory`` (the temporary folder) that this
    user's processes left behind: those whose lock nobody holds. A home in use by
    another Neovim is locked and kept; a folder without a lock file (being made at
    this moment, or by another program) is left alone. Returns what was removed."""
    directory = directory or tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not entry.is_dir(follow_symlinks=False) or st.st_uid != os.getuid():
                continue
            lock = _take_lock(entry.path)
        except OSError:  # no lock file, or not ours to open
            continue
        if lock is None:
            continue  # in use
        try:
            shutil.rmtree(entry.path)
            removed.append(entry.path)
            log.info("removed %s, left behind by an A2A server that was killed", entry.path)
        except OSError as exc:
            log.warning("could not remove %s: %s", entry.path, exc)
        finally:
            os.close(lock)
    return removed


def _entries(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []
