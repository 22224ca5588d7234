"""HTTP connections: a deadline for each request's headers and a cap on how many
are open, so idle sockets cannot lock the real client out.

Uvicorn holds a connection that never sends a request for ever, and has no cap: a
peer with no token could open ~1000 idle sockets and exhaust Neovim's file
descriptors (its limit is often 1024), after which the CLI could not connect. Here
every connection must have sent a request's headers within ``header_timeout`` of
opening or of its previous response, and past ``max_connections`` the oldest
connection that has never sent a request (else the oldest idle one) is closed to
make room. A request in progress, such as the CLI's event stream, is never closed.

Imported on the server thread only: it imports Uvicorn.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, cast

from uvicorn.protocols.http.h11_impl import H11Protocol

from .sessions import ABORT_EXTENSION

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 100
    header_timeout: float = 10.0


class ConnectionTable:
    """The open connections in the order they opened."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._open: dict[GuardedH11Protocol, None] = {}
        self.evicted = 0
        self.timed_out = 0

    def __len__(self) -> int:
        return len(self._open)

    def admit(self, conn: GuardedH11Protocol) -> None:
        self._open[conn] = None
        if len(self._open) <= self.limits.max_connections:
            return
        victim = self._victim(conn)
        self.evicted += 1
        if self.evicted == 1 or self.evicted % 1000 == 0:
            log.warning(
                "%d connections open (the cap is %d): closing idle ones (%d so far)",
                len(self._open),
                self.limits.max_connections,
                self.evicted,
            )
        victim.close_idle()

    def _victim(self, newcomer: GuardedH11Protocol) -> GuardedH11Protocol:
        """The oldest connection that never sent a request, else the oldest idle one
        between requests, else the newcomer itself."""
        idle = None
        for conn in self._open:
            if conn is newcomer or conn.transport.is_closing():
                continue
            if conn.cycle is None:
                return conn
            if idle is None and conn.cycle.response_complete:
                idle = conn
        return idle or newcomer

    def discard(self, conn: GuardedH11Protocol) -> None:
        self._open.pop(conn, None)


class GuardedH11Protocol(H11Protocol):
    """Uvicorn's HTTP/1.1 protocol with a header deadline and the connection cap."""

    table: ConnectionTable  # set on the subclass that protocol_class() makes

    _deadline: asyncio.TimerHandle | None = None
    _armed_for: Any = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()
        self.table.admit(self)

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


def protocol_class(table: ConnectionTable) -> type[GuardedH11Protocol]:
    """A protocol class bound to ``table``, for ``uvicorn.Config(http=...)``."""
    return type("CompanionH11Protocol", (GuardedH11Protocol,), {"table": table})
