"""The server's socket and discovery file, published before anything else loads.

A CLI can connect only once the discovery file names a listening port, and the
host's own start (pynvim, then the companion) takes tens of milliseconds more
than an interpreter needs to bind a socket and write a file. So when the host is
started to run the companion, its start command (lua/gemini_companion/host.lua)
runs :func:`listen` first, before pynvim is imported: the socket listens at once
and connections wait in its backlog until the server accepts them; the companion
adopts both (:func:`take`) when Lua's ``start`` arrives. It imports only the few
standard modules it needs and ``discovery.py`` (no logging, no dataclasses: each
millisecond here delays the discovery file).
"""

from __future__ import annotations

import binascii
import json
import os
import socket

from .discovery import DiscoveryError, DiscoveryFile, discovery_dir, workspace_path_value

_URLSAFE = bytes.maketrans(b"+/", b"-_")


def new_token() -> str:
    """A new bearer token: 256 random bits, URL-safe base64 (``secrets.token_urlsafe(32)``
    without importing ``secrets`` or ``base64``, which cost milliseconds here)."""
    encoded = binascii.b2a_base64(os.urandom(32), newline=False).rstrip(b"=")
    return encoded.translate(_URLSAFE).decode("ascii")


def listening_socket(host: str = "127.0.0.1") -> socket.socket:
    """A non-blocking TCP socket listening on ``host`` at a port the system picks."""
    # IPPROTO_TCP given explicitly: asyncio sets TCP_NODELAY on accepted sockets only
    # when their proto says TCP, and with proto 0 every response written in pieces
    # (an SSE stream) met Nagle and delayed ACKs: ~45 ms per request.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class EarlyListener:
    """A socket listening and the discovery file naming it, not yet served."""

    def __init__(
        self, sock: socket.socket, token: str, discovery: DiscoveryFile, workspace_path: str
    ) -> None:
        self.sock = sock
        self.token = token
        self.discovery = discovery
        self.workspace_path = workspace_path

    def discard(self) -> None:
        self.discovery.remove()
        self.sock.close()


# The listener waiting for the companion (at most one).
_waiting: list[EarlyListener] = []


def listen(raw: str) -> None:
    """Listen and write the discovery file for ``raw``, the JSON of
    ``{nvim_pid, workspace_dirs}``. Never raises: on any failure nothing is left
    behind, and the companion's own start does the work and reports the error."""
    try:
        options = json.loads(raw)
        pid = int(options["nvim_pid"])
        workspace_path = workspace_path_value([str(d) for d in options["workspace_dirs"]])
    except (ValueError, KeyError, TypeError):
        return
    try:
        sock = listening_socket()
    except OSError:
        return
    token = new_token()
    discovery = DiscoveryFile(discovery_dir(), pid, sock.getsockname()[1], token)
    try:
        discovery.write(workspace_path)
    except (OSError, DiscoveryError):
        sock.close()
        return
    _waiting.append(EarlyListener(sock, token, discovery, workspace_path))


def take(nvim_pid: int) -> EarlyListener | None:
    """The early listener for this Neovim, handed over once (None if there is none)."""
    early = _waiting.pop() if _waiting else None
    if early is not None and early.discovery.pid != nvim_pid:
        early.discard()
        return None
    return early


def discard() -> None:
    """The companion does not start after all: close the socket, remove the file."""
    while _waiting:
        _waiting.pop().discard()
