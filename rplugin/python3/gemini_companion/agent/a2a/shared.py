"""The one A2A server the plugin starts for all the panel's conversations: each
conversation's transport is a task of its own on it. Started by the first
transport that needs it (with the secret every transport then sends), stopped
when the last one lets it go."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import LocalServer


class SharedServer:
    """The server and the transports on it. Use on the server loop only."""

    def __init__(self) -> None:
        self.server: LocalServer | None = None
        self.secret = ""
        self.users: set[object] = set()
        self.lock = asyncio.Lock()

    def live(self) -> LocalServer | None:
        server = self.server
        return server if server is not None and server.returncode is None else None

    def release(self, user: object, server: LocalServer) -> bool:
        """``user`` is done with ``server``: True when nobody else uses it (the
        caller stops it)."""
        self.users.discard(user)
        if server is not self.server:
            return True
        if self.users and server.returncode is None:
            return False
        self.server = None
        return True


def shared_server(shared: dict[str, Any]) -> SharedServer:
    """The conversations' one server, made on first use in the transports' shared dict."""
    server = shared.get("a2a")
    if not isinstance(server, SharedServer):
        server = shared["a2a"] = SharedServer()
    return server
