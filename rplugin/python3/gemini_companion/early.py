"""The server's socket and discovery file, published before anything else loads.

A CLI can connect only once the discovery file names a listening port, and the
host's own start (pynvim, then the companion) takes tens of milliseconds more
than an interpreter needs to bind a socket and write a file. So when the host is
started to run the companion, its start command (lua/gemini_companion/host.lua)
runs :func:`listen` first, before pynvim is imported: the socket listens at once
and connections wait in its backlog until the server accepts them; the companion
adopts both (:func:`take`) when Lua's ``start`` arrives. It imports only C modules,
``os`` and ``discovery.py`` (no ``socket``, ``json``, ``typing``, ``logging``: each
millisecond here delays the discovery file; `python -X importtime` shows them).

Neovim learns the port from here too (:func:`announce`): the host is an RPC job
whose stdout is Neovim's end of the channel, and before pynvim exists on it this
module writes one msgpack-rpc notification there by hand, the same ``state``
message the companion sends later (host.lua's ``_receive``), so the terminal
variables are exported while pynvim and the server stack still load. The state
says "running" because it is: the socket listens, and a CLI connecting now waits
in its backlog until the server accepts it.
"""

from __future__ import annotations

import _signal  # the C modules: ``socket``, ``struct`` and ``signal`` cost imports more
import _socket
import _struct
import binascii
import os
import time

from .discovery import (
    DiscoveryError,
    DiscoveryFile,
    discovery_dir,
    remove_published,
    workspace_path_value,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    import types
    from collections.abc import Mapping, Sequence

_URLSAFE = bytes.maketrans(b"+/", b"-_")


def new_token() -> str:
    """A new bearer token: 256 random bits, URL-safe base64 (``secrets.token_urlsafe(32)``
    without importing ``secrets`` or ``base64``, which cost milliseconds here)."""
    encoded = binascii.b2a_base64(os.urandom(32), newline=False).rstrip(b"=")
    return encoded.translate(_URLSAFE).decode("ascii")


def listening_socket(host: str = "127.0.0.1") -> socket.socket:
    """A non-blocking TCP socket listening on ``host`` at a port the system picks."""
    import socket

    return socket.socket(fileno=_listening(host).detach())


def _listening(host: str) -> _socket.socket:
    # IPPROTO_TCP given explicitly: asyncio sets TCP_NODELAY on accepted sockets only
    # when their proto says TCP, and with proto 0 every response written in pieces
    # (an SSE stream) met Nagle and delayed ACKs: ~45 ms per request.
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, _socket.IPPROTO_TCP)
    try:
        sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv")
REMOTE_MARKER_VARS = ("SSH_CONNECTION", "VSCODE_REMOTE_CONTAINERS_SESSION", "REMOTE_CONTAINERS")


def in_container_without_remote_marker(env: Mapping[str, str]) -> bool:
    """True where the CLI would look for the IDE at ``host.docker.internal``.

    The CLI assumes that inside a container the editor runs on the host, unless one
    of the remote markers is set (client-behaviour.md, "IDE mode: transport"). Here
    Neovim and the CLI share the container, so terminals get ``REMOTE_CONTAINERS``.
    """
    return any(os.path.exists(p) for p in CONTAINER_MARKERS) and not any(
        env.get(name) for name in REMOTE_MARKER_VARS
    )


def terminal_env(
    discovery: DiscoveryFile, workspace_path: str, env: Mapping[str, str]
) -> dict[str, str]:
    """Variables every job Neovim starts should see while the server runs."""
    variables = {
        "GEMINI_CLI_IDE_SERVER_PORT": str(discovery.port),
        "GEMINI_CLI_IDE_WORKSPACE_PATH": workspace_path,
        "GEMINI_CLI_IDE_AUTH_TOKEN": discovery.auth_token,
        "GEMINI_CLI_IDE_PID": str(discovery.pid),
    }
    if in_container_without_remote_marker(env):
        variables["REMOTE_CONTAINERS"] = "true"
    return variables


class EarlyListener:
    """A socket listening and the discovery file naming it, not yet served."""

    def __init__(
        self, sock: _socket.socket, token: str, discovery: DiscoveryFile, workspace_path: str
    ) -> None:
        self._sock = sock
        self.token = token
        self.discovery = discovery
        self.workspace_path = workspace_path
        self.started_at = time.time()

    def state(self) -> dict[str, object]:
        """The running state, as ``ServerRun.state()`` will publish it (no sessions
        yet), marked ``loading`` until the companion publishes its own."""
        return {
            "running": True,
            "loading": True,
            "env": terminal_env(self.discovery, self.workspace_path, os.environ),
            "sessions": [],
            "workspace_path": self.workspace_path,
            "port": self.discovery.port,
            "discovery_file": self.discovery.path,
            "started_at": self.started_at,
        }

    def socket(self) -> socket.socket:
        """The listening socket, as the ``socket`` module's object (for asyncio)."""
        import socket

        return socket.socket(fileno=self._sock.detach())

    def discard(self) -> None:
        self.discovery.remove()
        self._sock.close()


# The listener waiting for the companion (at most one).
_waiting: list[EarlyListener] = []


def listen(args: Sequence[str]) -> None:
    """Listen and write the discovery file for ``args``: Neovim's PID, then the
    workspace folders (the host's command line). Never raises: on any failure
    nothing is left behind, and the companion's own start does the work and reports
    the error."""
    try:
        pid = int(args[0])
        workspace_path = workspace_path_value(args[1:])
    except (ValueError, IndexError, TypeError):
        return
    try:
        sock = _listening("127.0.0.1")
    except OSError:
        return
    token = new_token()
    discovery = DiscoveryFile(discovery_dir(), pid, sock.getsockname()[1], token)
    # Neovim ends its jobs with SIGTERM as it quits, and until pynvim's loop handles
    # it (then host_exited() cleans up) it would kill the process with the file in
    # place: from now on it removes the file first. Held back while the file is
    # written, so that it never comes between the write and its bookkeeping.
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGTERM})
    try:
        _signal.signal(_signal.SIGTERM, _end_on_sigterm)
        discovery.write(workspace_path)
    except (OSError, DiscoveryError):
        sock.close()
        return
    finally:
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGTERM})
    _waiting.append(EarlyListener(sock, token, discovery, workspace_path))


def _end_on_sigterm(signum: int, frame: types.FrameType | None) -> None:
    """SIGTERM before pynvim handles it: remove what was published, then end as the
    signal would have."""
    remove_published(0.2)
    os._exit(128 + signum)


# The one Lua function the Python side calls (as nvim_editor.py does).
RECEIVE = "return require('gemini_companion.host')._receive(...)"


def announce(fd: int = 1) -> None:
    """Tell Neovim the waiting listener's state over ``fd``, the RPC channel's pipe,
    before pynvim takes it over: one notification ``nvim_exec_lua(RECEIVE, ["state",
    state])``. A notification carries no message id, so pynvim's own requests and
    answers on the same pipe later are not confused by it. Never raises."""
    if not _waiting:
        return
    data = pack([2, "nvim_exec_lua", [RECEIVE, ["state", _waiting[-1].state()]]])
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        return


def pack(value: object) -> bytes:
    """``value`` (None, bool, int, float, str, list, dict of those) in msgpack,
    without importing the msgpack package (its import costs milliseconds here)."""
    out = bytearray()
    _pack(value, out)
    return bytes(out)


_DOUBLE = _struct.Struct(">d")


def _pack(value: object, out: bytearray) -> None:
    if value is None:
        out.append(0xC0)
    elif value is True or value is False:
        out.append(0xC3 if value else 0xC2)
    elif isinstance(value, int):
        if 0 <= value < 0x80:
            out.append(value)
        elif -32 <= value < 0:
            out.append(value & 0xFF)
        elif 0 <= value < 1 << 64:
            out.append(0xCF)
            out += value.to_bytes(8, "big")
        elif -(1 << 63) <= value < 0:
            out.append(0xD3)
            out += value.to_bytes(8, "big", signed=True)
        else:
            raise ValueError(f"integer out of msgpack's range: {value}")
    elif isinstance(value, float):
        out.append(0xCB)
        out += _DOUBLE.pack(value)
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        _header(len(raw), out, _STR)
        out += raw
    elif isinstance(value, (list, tuple)):
        _header(len(value), out, _ARRAY)
        for item in value:
            _pack(item, out)
    elif isinstance(value, dict):
        _header(len(value), out, _MAP)
        for key, item in value.items():
            _pack(key, out)
            _pack(item, out)
    else:
        raise TypeError(f"cannot pack {type(value).__name__}")


# The header bytes of a str, an array, a map: (fix form, its limit, 8-, 16-, 32-bit).
_STR = (0xA0, 32, 0xD9, 0xDA, 0xDB)
_ARRAY = (0x90, 16, None, 0xDC, 0xDD)
_MAP = (0x80, 16, None, 0xDE, 0xDF)


def _header(n: int, out: bytearray, kind: tuple[int, int, int | None, int, int]) -> None:
    fix, fix_limit, b8, b16, b32 = kind
    if n < fix_limit:
        out.append(fix | n)
    elif b8 is not None and n < 0x100:
        out += bytes((b8, n))
    elif n < 0x10000:
        out.append(b16)
        out += n.to_bytes(2, "big")
    else:
        out.append(b32)
        out += n.to_bytes(4, "big")


def load_package(package: types.ModuleType, directory: str) -> None:
    """Run the package's ``__init__`` into ``package``, the bare module the host's
    start command made so that this module could load first (without
    ``importlib.util``, whose import costs milliseconds before the discovery file)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        package.__name__,
        os.path.join(directory, "__init__.py"),
        submodule_search_locations=[directory],
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"no package in {directory}")
    package.__spec__ = spec
    package.__loader__ = spec.loader
    package.__file__ = spec.origin
    package.__cached__ = spec.cached  # type: ignore[attr-defined]
    package.__package__ = package.__name__
    package.__path__ = spec.submodule_search_locations  # type: ignore[assignment]
    spec.loader.exec_module(package)


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
