"""Opening a session with the agent: ``initialize`` (fs capabilities: the agent
reads and writes files through Neovim), ``session/new`` or ``session/load`` with
the plugin's MCP servers, ``authenticate`` when the agent asks for a login and
the user chose a method; and the wait before loading a session started in this
minute (Gemini CLI 0.61.0 would overwrite it)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from ..mcp_servers import acp_mcp_server
from ..model import Notice, SessionUpdate
from ..transport import TransportError
from .chat_files import LoadLeftovers
from .grants import WriteGrants
from .process import AgentChild
from .turns import AcpTurns
from .wire import AUTH_REQUIRED, PROTOCOL_VERSION, AgentError, error_text, initialize_params

log = logging.getLogger(__name__)


class AcpHandshake(AcpTurns):
    """initialize, login, and the session's start or load."""

    async def _initialize(
        self, child: AgentChild, loading: asyncio.Future[None] | None = None
    ) -> None:
        raw = await self._request("initialize", initialize_params())
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
        self._greeted(
            dict(raw.get("agentCapabilities") or {}),
            [m for m in raw.get("authMethods") or [] if isinstance(m, dict)],
            {"name": info.name, "version": info.version} if info else {},
        )

    def _greeted(
        self,
        capabilities: dict[str, Any],
        auth_methods: list[dict[str, Any]],
        agent: dict[str, Any],
    ) -> None:
        """What initialize's answer told (by this conversation's, or by the first
        conversation's on the shared agent: shared.py)."""
        self._capabilities = capabilities
        self._auth_methods = auth_methods
        self._agent = agent
        # The same keys as the A2A transport's: checkhealth shows them.
        self._emit(
            SessionUpdate(
                {"agent": self._agent.get("name"), "agent_version": self._agent.get("version")}
            )
        )

    async def _new_session(self) -> None:
        params = {"cwd": self.context.workspace, "mcpServers": self._mcp_servers()}
        try:
            raw = await self._request("session/new", params)
        except AgentError as exc:
            if exc.code != AUTH_REQUIRED:
                raise
            await self._authenticate(str(exc))
            raw = await self._request("session/new", params)
        session_id = str(raw["sessionId"])
        self._session_started(raw, session_id)
        assert self._store is not None
        await asyncio.to_thread(self._store.touch, session_id, self.context.workspace)

    async def _load(self, session_id: str) -> None:
        params = {
            "sessionId": session_id,
            "cwd": self.context.workspace,
            "mcpServers": self._mcp_servers(),
        }
        # Updates of the loaded session (its history) must not be taken for the old one's.
        previous, self._session_id = self._session_id, session_id
        assert self._updates is not None
        self._updates.reset()
        leftovers = LoadLeftovers({**self.context.env, **self.options.env}, session_id)
        await asyncio.to_thread(leftovers.before)
        try:
            try:
                raw = await self._request("session/load", params)
            except AgentError as exc:
                if exc.code != AUTH_REQUIRED:
                    raise
                await self._authenticate(str(exc))
                raw = await self._request("session/load", params)
        except BaseException as exc:
            self._session_id = previous
            if isinstance(exc, AgentError):  # marked in the history, saying why
                assert self._store is not None
                await asyncio.to_thread(
                    self._store.failed, session_id, self.context.workspace, error_text(exc)
                )
            raise
        finally:
            await asyncio.to_thread(leftovers.remove)  # chat_files.py: what the CLI deletes
        self._session_started(raw or {}, session_id)
        assert self._store is not None
        await asyncio.to_thread(self._store.loaded, session_id, self.context.workspace)

    async def _authenticate(self, why: str) -> None:
        offered = {str(m.get("id")): m for m in self._auth_methods}
        wanted = self.options.auth_method
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

    def _session_started(self, raw: Mapping[str, Any], session_id: str) -> None:
        self._session_id = session_id
        modes = raw.get("modes") or {}
        # A new session: no grant carries over; its first mode is the user's own
        # configuration (settings, flags).
        self._grants = WriteGrants()
        self._grants.user_mode(modes.get("currentModeId"))
        models = raw.get("models") or {}
        self._current_model = models.get("currentModelId")
        self._modes = [str(m["id"]) for m in modes.get("availableModes") or [] if "id" in m]
        self._models = [
            str(m["modelId"]) for m in models.get("availableModels") or [] if "modelId" in m
        ]
        self._emit(
            SessionUpdate(
                {
                    "session_id": session_id,
                    "mode": modes.get("currentModeId"),
                    "modes": self._modes or None,
                    "model": models.get("currentModelId"),
                    "models": self._models or None,
                }
            )
        )

    def _mcp_servers(self) -> list[dict[str, Any]]:
        mcp = self._capabilities.get("mcpCapabilities") or {}
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
