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
never reset; the cap is restored as soon as the grace has passed.

Near the process's descriptor limit (``RLIMIT_NOFILE``, whatever it is: the
headroom is a quarter of it, at most ``fd_margin``, counted against every
descriptor the process has open) there is no grace: connections with no request
in progress are closed at once, oldest first, those that sent nothing before
those that sent part of a request's headers (issue 32 item 7: a flood of those
held every descriptor until the header deadline, and the real client could not
connect), before those between requests. The cap itself is lowered to fit the
descriptors the process has, and the server accepts at most a few connections
before the table sees them (:func:`accept_batch`), so a flood cannot reach the
limit between two looks.

Imported on the server thread only: it imports Uvicorn.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
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
    # Descriptors kept free below the process's limit (at most a quarter of it):
    # closer, no grace is given (fd_margin()).
    fd_margin: int = 128


class ConnectionTable:
    """The open connections in the order they opened."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._open: dict[GuardedH11Protocol, None] = {}
        self.evicted = 0
        self.timed_out = 0
        self._recheck: asyncio.TimerHandle | None = None
        # Descriptors the process holds besides the connections, counted now and
        # again when the limit is near.
        self._others = max(_open_descriptors(), 0)
        self._others_counted = float("-inf")

    def __len__(self) -> int:
        return len(self._open)

    @property
    def max_connections(self) -> int:
        """The cap: the configured one, lowered to fit the descriptors there are."""
        room = _descriptor_limit() - fd_margin(self.limits) - self._others
        return max(1, min(self.limits.max_connections, room))

    def admit(self, conn: GuardedH11Protocol) -> None:
        self._open[conn] = None
        self.make_room()

    def make_room(self) -> None:
        """Close quiet connections past the cap, oldest first (never a newcomer's
        request on its way); if some must wait out their grace, look again then.
        Near the descriptor limit, any without a request in progress, at once."""
        over = len(self._open) - self.max_connections
        if over <= 0:
            return
        now = asyncio.get_running_loop().time()
        urgent = self._near_limit(now)
        grace = 0.0 if urgent else self.limits.idle_grace
        fresh: list[GuardedH11Protocol] = []
        partial: list[GuardedH11Protocol] = []
        idle: list[GuardedH11Protocol] = []
        for conn in self._open:
            if conn.transport.is_closing() or not conn.quiet(now, grace, urgent):
                continue
            if conn.cycle is not None:
                idle.append(conn)
            else:
                (partial if conn.sent_part else fresh).append(conn)
        for victim in (fresh + partial + idle)[:over]:
            over -= 1
            self.evicted += 1
            if self.evicted == 1 or self.evicted % 1000 == 0:
                log.warning(
                    "%d connections open (the cap is %d): closing idle ones (%d so far)",
                    len(self._open),
                    self.max_connections,
                    self.evicted,
                )
            victim.close_idle()
        if over > 0 and self._recheck is None:
            self._recheck = asyncio.get_running_loop().call_later(
                self.limits.idle_grace, self._look_again
            )

    def _near_limit(self, now: float) -> bool:
        """The process's open descriptors are within the headroom of its limit
        (the other descriptors are counted again at most every 0.2 s)."""
        threshold = _descriptor_limit() - fd_margin(self.limits)
        if len(self._open) + self._others < threshold and now - self._others_counted < 0.2:
            return False
        counted = _open_descriptors()
        if counted >= 0:
            self._others = max(counted - len(self._open), 0)
            self._others_counted = now
        return len(self._open) + self._others >= threshold

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
    sent_part = False  # bytes came before its first request began

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._quiet_since = self.loop.time()
        self._arm()
        self.table.admit(self)

    def data_received(self, data: bytes) -> None:
        self._quiet_since = float("inf")  # bytes came: no longer quiet until answered
        self.sent_part = self.cycle is None  # before its first request: part of one
        super().data_received(data)

    def quiet(self, now: float, grace: float, urgent: bool = False) -> bool:
        """Between requests (none begun, or the last one answered), with nothing
        received for ``grace`` seconds (``urgent``: whatever came) and no byte
        waiting in the socket."""
        if self.cycle is not None and not self.cycle.response_complete:
            return False
        if not urgent and now - self._quiet_since < grace:
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


def _open_descriptors() -> int:
    """How many descriptors this process has open (-1 where that cannot be read)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder)) - 1  # less the one listing it
        except OSError:
            continue
    return -1


def fd_margin(limits: ConnectionLimits) -> int:
    """Descriptors kept free below the process's limit: a quarter of the limit, at
    most ``limits.fd_margin``."""
    return max(8, min(limits.fd_margin, _descriptor_limit() // 4))


def accept_batch(limits: ConnectionLimits) -> int:
    """How many connections the server may accept before the table sees them (the
    event loop accepts up to its listen backlog in one go): a quarter of the
    headroom, so a flood never crosses the limit between two looks."""
    return max(4, fd_margin(limits) // 4)


def protocol_class(table: ConnectionTable) -> type[GuardedH11Protocol]:
    """A protocol class bound to ``table``, for ``uvicorn.Config(http=...)``."""
    return type("CompanionH11Protocol", (GuardedH11Protocol,), {"table": table})
