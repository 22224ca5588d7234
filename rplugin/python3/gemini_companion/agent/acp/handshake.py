"""Opening a session with the agent: ``initialize`` (fs capabilities: the agent
reads and writes files through Neovim; :func:`initialize`), ``session/new`` or
``session/load`` with the plugin's MCP servers, ``authenticate`` when the agent
asks for a login and the user chose a method (:class:`Handshake`); and the wait
before loading a session started in this minute (Gemini CLI 0.61.0 would
overwrite it)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..mcp_servers import acp_mcp_server
from ..model import Notice, SessionUpdate
from ..transport import TransportError
from .wire import AUTH_REQUIRED, PROTOCOL_VERSION, AgentError, initialize_params

if TYPE_CHECKING:
    from ..model import AgentEvent
    from ..transport import TransportContext
    from .sessions import SessionStore

log = logging.getLogger(__name__)

Request = Callable[[str, Mapping[str, Any]], Awaitable[Any]]


class Hello(NamedTuple):
    """What ``initialize``'s answer told (the first conversation's on the shared
    agent, given to the others: shared.py keeps it as this tuple)."""

    capabilities: dict[str, Any]
    auth_methods: list[dict[str, Any]]
    agent: dict[str, Any]

    def update(self) -> SessionUpdate:
        # The same keys as the A2A transport's: checkhealth shows them.
        return SessionUpdate(
            {"agent": self.agent.get("name"), "agent_version": self.agent.get("version")}
        )


async def initialize(request: Request, loading: asyncio.Future[None] | None = None) -> Hello:
    """``initialize``; ``loading``: the modules that read the answer, loading meanwhile."""
    raw = await request("initialize", initialize_params())
    if loading is not None:
        await loading
    from . import messages as schema

    response = schema.InitializeResponse.model_validate(raw)
    if response.protocol_version != PROTOCOL_VERSION:
        raise TransportError(
            f"the agent speaks ACP version {response.protocol_version}; the plugin speaks"
            f" version {PROTOCOL_VERSION}: update the plugin or the agent"
        )
    info = response.agent_info
    return Hello(
        dict(raw.get("agentCapabilities") or {}),
        [m for m in raw.get("authMethods") or [] if isinstance(m, dict)],
        {"name": info.name, "version": info.version} if info else {},
    )


@dataclass(frozen=True)
class SessionFacts:
    """What the answer to ``session/new`` or ``session/load`` offers."""

    mode: str | None = None
    modes: tuple[str, ...] = ()
    model: Any = None
    models: tuple[str, ...] = ()

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> SessionFacts:
        modes = raw.get("modes") or {}
        models = raw.get("models") or {}
        return cls(
            modes.get("currentModeId"),
            tuple(str(m["id"]) for m in modes.get("availableModes") or [] if "id" in m),
            models.get("currentModelId"),
            tuple(str(m["modelId"]) for m in models.get("availableModels") or [] if "modelId" in m),
        )

    def update(self, session_id: str) -> SessionUpdate:
        return SessionUpdate(
            {
                "session_id": session_id,
                "mode": self.mode,
                "modes": list(self.modes) or None,
                "model": self.model,
                "models": list(self.models) or None,
            }
        )


class Handshake:
    """A session started or loaded on the agent ``request`` reaches, with the
    workspace and MCP servers of ``context`` and the login ``auth_method``."""

    def __init__(
        self,
        context: TransportContext,
        auth_method: str | None,
        request: Request,
        emit: Callable[[AgentEvent], None],
        store: SessionStore,
    ) -> None:
        self.context = context
        self._auth_method = auth_method
        self._request = request
        self._emit = emit
        self._store: SessionStore | None = store

    async def open(self, hello: Hello, session_id: str | None = None) -> tuple[str, Any]:
        """``session/new`` (``session_id`` None) or ``session/load``: the session's id
        and the agent's answer."""
        params: dict[str, Any] = {
            "cwd": self.context.workspace,
            "mcpServers": self._mcp_servers(hello),
        }
        method = "session/new"
        if session_id is not None:
            params = {"sessionId": session_id, **params}
            method = "session/load"
        try:
            raw = await self._request(method, params)
        except AgentError as exc:
            if exc.code != AUTH_REQUIRED:
                raise
            await self._authenticate(str(exc), hello)
            raw = await self._request(method, params)
        if session_id is None:
            return str(raw["sessionId"]), raw
        return session_id, raw or {}

    async def wait_before_load(self, session_id: str) -> None:
        """Before ``session/load`` of ``session_id``: see :meth:`_wait_for_a_new_minute`."""
        await self._wait_for_a_new_minute(session_id)

    async def _authenticate(self, why: str, hello: Hello) -> None:
        offered = {str(m.get("id")): m for m in hello.auth_methods}
        wanted = self._auth_method
        if wanted is None or wanted not in offered:
            choices = "; ".join(f"{mid!r} ({m.get('name') or mid})" for mid, m in offered.items())
            hint = (
                f"agent.acp.auth_method {wanted!r} is not one of them"
                if wanted
                else "set agent.acp.auth_method to one of them"
            )
            raise TransportError(
                f"the agent needs a login ({why}). Its login methods: {choices}: {hint},"
                " or set GEMINI_API_KEY, or log in once with `gemini` in a terminal"
            )
        log.info("authenticating with %s", wanted)
        try:
            await self._request("authenticate", {"methodId": wanted})
        except AgentError as exc:
            raise TransportError(f"logging in with {wanted!r} failed: {exc}") from None

    def _mcp_servers(self, hello: Hello) -> list[dict[str, Any]]:
        mcp = hello.capabilities.get("mcpCapabilities") or {}
        servers = []
        for server in self.context.mcp_servers:
            converted = acp_mcp_server(server)
            if converted is None:
                log.warning("skipping an MCP server ACP cannot describe: %r", server)
            elif converted.get("type") in ("http", "sse") and not mcp.get(converted["type"]):
                log.warning("the agent takes no %s MCP servers: %s", converted["type"], server)
            else:
                servers.append(converted)
        return servers

    async def _wait_for_a_new_minute(self, session_id: str) -> None:
        """Gemini CLI 0.61.0 names a session's chat file by the UTC minute it was
        created, and a load starts a new record named by its own minute: in the
        creation minute both get the same name, the conversation is overwritten and
        the load fails. A session the panel created less than a minute ago (the
        history's record) is loaded once the minute has turned. (The minute of an
        earlier load does not matter: its record is not the conversation's file,
        and chat_files.py removes it.)"""
        assert self._store is not None
        created = await asyncio.to_thread(self._store.created_at, session_id)
        if not created:
            return
        # A few seconds of margin: the CLI's clock reading is not ours.
        boundary = (int(created + 5) // 60 + 1) * 60
        wait = boundary - time.time()
        if wait > 0:
            self._emit(
                Notice(
                    f"Waiting {wait:.0f} s: Gemini CLI loses a conversation loaded in the"
                    " minute it started."
                )
            )
            await asyncio.sleep(wait)
