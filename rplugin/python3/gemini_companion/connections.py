"""HTTP connections: a deadline for each request's headers and a cap on how many
are open, so idle sockets cannot lock the real client out.

Uvicorn holds a connection that never sends a request for ever, and has no cap: a
peer with no token could open ~1000 idle sockets and exhaust Neovim's file
descriptors (its limit is often 1024), after which the CLI could not connect. Here
every connection must have sent a request's headers within ``header_timeout`` of
opening or of its previous response, and past ``max_connections`` the oldest
connection that has never sent a request (else the oldest idle one) is closed to
make room. A request in progress, such as the CLI's event stream, is never closed.

Nor is one on its way: a connection is closed to make room only once it has been
quiet for ``idle_grace`` (no byte received since it opened or since its last
response) and no byte waits unread in its socket. A flood of clients that connect
and send at once (1000 tool calls) is therefore served past the cap for a moment,
never reset; the cap is restored as soon as the grace has passed. Only near the
process's descriptor limit is a quiet connection closed without that grace.

Imported on the server thread only: it imports Uvicorn.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import resource
import struct
import termios
from dataclasses import dataclass
from typing import Any, cast

from uvicorn.protocols.http.h11_impl import H11Protocol

from .sessions import ABORT_EXTENSION

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 100
    header_timeout: float = 10.0
    # Seconds a connection must have been quiet before it may be closed to make room.
    idle_grace: float = 5.0
    # Descriptors kept free below the process's limit: closer, no grace is given.
    fd_margin: int = 128


class ConnectionTable:
    """The open connections in the order they opened."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._open: dict[GuardedH11Protocol, None] = {}
        self.evicted = 0
        self.timed_out = 0
        self._recheck: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._open)

    def admit(self, conn: GuardedH11Protocol) -> None:
        self._open[conn] = None
        self.make_room()

    def make_room(self) -> None:
        """Close quiet connections past the cap, oldest first (never a newcomer's
        request on its way); if some must wait out their grace, look again then."""
        over = len(self._open) - self.limits.max_connections
        if over <= 0:
            return
        urgent = len(self._open) >= _descriptor_limit() - self.limits.fd_margin
        grace = 0.0 if urgent else self.limits.idle_grace
        now = asyncio.get_running_loop().time()
        fresh: list[GuardedH11Protocol] = []
        idle: list[GuardedH11Protocol] = []
        for conn in self._open:
            if conn.transport.is_closing() or not conn.quiet(now, grace):
                continue
            (fresh if conn.cycle is None else idle).append(conn)
        for victim in (fresh + idle)[:over]:
            over -= 1
            self.evicted += 1
            if self.evicted == 1 or self.evicted % 1000 == 0:
                log.warning(
                    "%d connections open (the cap is %d): closing idle ones (%d so far)",
                    len(self._open),
                    self.limits.max_connections,
                    self.evicted,
                )
            victim.close_idle()
        if over > 0 and self._recheck is None:
            self._recheck = asyncio.get_running_loop().call_later(
                self.limits.idle_grace, self._look_again
            )

    def _look_again(self) -> None:
        self._recheck = None
        self.make_room()

    def discard(self, conn: GuardedH11Protocol) -> None:
        self._open.pop(conn, None)


class GuardedH11Protocol(H11Protocol):
    """Uvicorn's HTTP/1.1 protocol with a header deadline and the connection cap."""

    table: ConnectionTable  # set on the subclass that protocol_class() makes

    _deadline: asyncio.TimerHandle | None = None
    _armed_for: Any = None
    _quiet_since: float = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._quiet_since = self.loop.time()
        self._arm()
        self.table.admit(self)

    def data_received(self, data: bytes) -> None:
        self._quiet_since = float("inf")  # bytes came: no longer quiet until answered
        super().data_received(data)

    def quiet(self, now: float, grace: float) -> bool:
        """Between requests (none begun, or the last one answered), with nothing
        received for ``grace`` seconds and no byte waiting in the socket."""
        if self.cycle is not None and not self.cycle.response_complete:
            return False
        if now - self._quiet_since < grace:
            return False
        return _unread_bytes(self.transport) == 0

    def connection_lost(self, exc: Exception | None) -> None:
        self.table.discard(self)
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        scope = self.scope
        super().handle_events()
        if self.scope is not scope and self.scope is not None:
            # A request began: let the app close its connection at once (sessions.py
            # drops a client that stopped reading; a plain close would wait for it
            # to read what is already buffered).
            extensions = cast("dict[str, Any]", self.scope.setdefault("extensions", {}))
            extensions[ABORT_EXTENSION] = self.transport.abort

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._quiet_since = self.loop.time()
        if not self.transport.is_closing():
            self._arm()  # the next request's headers must come in time too

    def _arm(self) -> None:
        self._disarm()
        self._armed_for = self.cycle
        self._deadline = self.loop.call_later(self.table.limits.header_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        idle = self.cycle is None or self.cycle.response_complete
        if idle and self.cycle is self._armed_for:  # no request began since it was armed
            self.table.timed_out += 1
            self.close_idle()

    def close_idle(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()


def _unread_bytes(transport: asyncio.BaseTransport) -> int:
    """Bytes received by the system but not yet read from the connection's socket."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        return int(struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0" * 4))[0])
    except OSError:
        return 0


def _descriptor_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def protocol_class(table: ConnectionTable) -> type[GuardedH11Protocol]:
    """A protocol class bound to ``table``, for ``uvicorn.Config(http=...)``."""
    return type("CompanionH11Protocol", (GuardedH11Protocol,), {"table": table})
