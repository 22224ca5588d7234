"""The one ``gemini --acp`` process all the panel's conversations share: each
conversation's transport holds one ACP session on it (``session/new`` again on
the same connection; Gemini CLI 0.61.0 keeps its sessions in a map by id). What
the agent sends goes to the transport whose session it names; the process is
started by the first transport that needs it and stopped when the last one lets
it go, and its exit reaches every transport on it.

A cancelled turn the agent does not end in time (``agent.acp.cancel_timeout``) is
left to it when other conversations use the process (:meth:`SharedAgent.leave`):
its session is forgotten (what the agent still sends for it reaches no
conversation: updates dropped, a permission answered ``cancelled``, other requests
refused) and the conversation goes on in a new session of the same process."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .process import AgentChild

log = logging.getLogger(__name__)


class AcpTransport(Protocol):
    """What the shared agent calls of a conversation's transport (transport.py's)."""

    @property
    def session_id(self) -> str | None: ...
    async def _handle(self, method: str, params: Any, is_notification: bool) -> Any: ...
    def _on_update(self, params: Any) -> None: ...
    def _garbage(self, child: AgentChild, line: bytes) -> None: ...
    def _refused(self, child: AgentChild, why: str) -> None: ...
    async def _exited(self, child: AgentChild) -> None: ...


class SharedAgent:
    """The agent process and the transports on it. Use on the server loop only."""

    def __init__(self) -> None:
        self.child: AgentChild | None = None
        self.users: list[AcpTransport] = []
        # initialize's answer, read by the first transport: (capabilities, login
        # methods, the agent's name and version), given to the others.
        self.hello: tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]] | None = None
        self.lock = asyncio.Lock()
        # Sessions left with a turn the agent did not end (leave()): never routed.
        self.left: set[str] = set()

    def live(self) -> AgentChild | None:
        """The process, while it runs and has answered ``initialize``."""
        child = self.child
        if child is not None and child.returncode is None and self.hello is not None:
            return child
        return None

    def attach(self, transport: AcpTransport, child: AgentChild) -> None:
        self.child = child
        if transport not in self.users:
            self.users.append(transport)

    def release(self, transport: AcpTransport, child: AgentChild) -> bool:
        """``transport`` is done with ``child``: True when nobody else uses it (the
        caller stops it)."""
        if transport in self.users:
            self.users.remove(transport)
        if child is not self.child:
            return True
        if self.users and child.returncode is None:
            return False
        self.child, self.hello = None, None
        self.left.clear()
        return True

    def leave(self, transport: AcpTransport, session_id: str) -> bool:
        """``transport``'s cancelled turn in ``session_id`` did not end in time. True
        when other transports use the process (it stays for them): the session is
        forgotten from now on. False when none does (the caller stops the process)."""
        if not any(user is not transport for user in self.users):
            return False
        self.left.add(session_id)
        return True

    def _left(self, params: Any) -> bool:
        return type(params) is dict and params.get("sessionId") in self.left

    def owner(self, params: Any) -> AcpTransport | None:
        """The transport whose session ``params`` names (the first one when it names
        none it knows: that one answers as a single session does)."""
        session_id = params.get("sessionId") if type(params) is dict else None
        for transport in self.users:
            if session_id is not None and transport.session_id == session_id:
                return transport
        return self.users[0] if self.users else None

    async def handle(self, method: str, params: Any, is_notification: bool) -> Any:
        left = self._left(params)
        owner = None if left else self.owner(params)
        if owner is None:
            from acp.exceptions import RequestError

            if is_notification:
                return None
            if left and method == "session/request_permission":
                return {"outcome": {"outcome": "cancelled"}}
            why = "that session was cancelled" if left else "no session of the client takes it"
            raise RequestError(-32603, f"refused: {why}")
        return await owner._handle(method, params, is_notification)

    def on_update(self, params: Any) -> None:
        if self._left(params):
            return
        owner = self.owner(params)
        if owner is not None:
            owner._on_update(params)

    def garbage(self, child: AgentChild, line: bytes) -> None:
        if self.users:
            self.users[0]._garbage(child, line)

    def refused(self, child: AgentChild, why: str) -> None:
        if self.users:
            self.users[0]._refused(child, why)

    async def watch(self, child: AgentChild) -> None:
        """Tell every transport on ``child`` when it exits."""
        await child.wait()
        for transport in list(self.users):
            await transport._exited(child)


def shared_agent(shared: dict[str, Any]) -> SharedAgent:
    """The conversations' one agent, made on first use in the transports' shared dict."""
    agent = shared.get("acp")
    if not isinstance(agent, SharedAgent):
        agent = shared["acp"] = SharedAgent()
    return agent
