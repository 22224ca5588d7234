"""A conversation's connection to the A2A agent: the HTTP client (one
connection kept open for the task's life, no read timeout on streams, text that
is not valid Unicode replaced: wire.py), a2a-sdk's client made from the agent's
card, and the server the plugin started when there is no ``agent.a2a.url``
(server.py; the one server of all the conversations: shared.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..model import Notice, SessionUpdate, StatusChange
from ..transport import TransportError, plugin_version
from . import devtool
from .server import LocalServer

if TYPE_CHECKING:
    import httpx
    from a2a.client import Client

    from ..model import AgentEvent
    from ..transport import TransportContext
    from .state import A2ATask

log = logging.getLogger(__name__)


def same_origin(url: str, other: str) -> bool:
    """``url`` and ``other`` have one scheme, host and port (RFC 6454)."""
    from urllib.parse import urlsplit

    def origin(u: str) -> tuple[str, str, int | None] | None:
        try:
            parts = urlsplit(u)
            port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
        except ValueError:
            return None
        if not parts.scheme or not parts.hostname:
            return None
        return parts.scheme.lower(), parts.hostname.lower(), port

    mine = origin(url)
    return mine is not None and mine == origin(other)


class A2AConnection:
    """The HTTP line to the agent and the server behind it. Server loop only.

    ``task`` is the conversation's shared state (the dialect the card declares is
    set in it; a server started again knows no task); ``emit`` takes the panel's
    events."""

    def __init__(
        self, context: TransportContext, task: A2ATask, emit: Callable[[AgentEvent], None]
    ) -> None:
        self._context = context
        self._task = task
        self._emit = emit
        self._server: LocalServer | None = None
        self._watcher: asyncio.Task[None] | None = None
        self.http: httpx.AsyncClient | None = None
        self.client: Client | None = None
        self.base_url = ""
        self.rpc_url = ""
        self.connected = False
        self.stopping = False
        self.server_version = ""
        self.extension_uri = ""
        # Sent with every request to agent.a2a.url (a started server gets its secret).
        self.headers: dict[str, str] = {}
        self.secret = ""  # the started server's

    def _options(self) -> Mapping[str, Any]:
        return self._context.options

    def server_exited(self) -> bool:
        """The server the plugin started has exited (its watcher says why)."""
        server = self._server
        return server is not None and server.returncode is not None

    async def open(self) -> None:
        """The HTTP client to the agent, starting its server when there is no URL."""
        import httpx

        from .wire import CleanTextTransport

        self.stopping = False
        url = self._options().get("url")
        headers = dict(self.headers)
        if url:
            self.base_url = str(url).rstrip("/")
        else:
            # A server (re)started knows no task: the conversation starts again.
            task = self._task
            task.task_id = task.context_id = task.state = ""
            self.base_url = await self._start_server()
            # The started server answers only requests with this secret (loopback.cjs).
            headers["Authorization"] = f"Bearer {self.secret}"
        # One connection for the task's life: no keep-alive expiry; no read
        # timeout (streams are quiet while the model thinks or a tool runs).
        # Text that is not valid Unicode is replaced before a2a-sdk parses it (wire.py).
        network = httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_keepalive_connections=4, keepalive_expiry=None)
        )
        self.http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(30.0, read=None),
            transport=CleanTextTransport(network, self._text_replaced),
        )

    def _text_replaced(self) -> None:
        self._emit(
            Notice(
                "The agent sent text that is not valid Unicode (a lone surrogate or bytes"
                " that are not UTF-8): it is shown as \ufffd.",
                "warning",
            )
        )

    async def connect(self) -> None:
        """Read the agent's card (its dialect, set in the task) and make the client."""
        from a2a.client import ClientConfig, ClientFactory
        from a2a.client.card_resolver import A2ACardResolver

        assert self.http is not None
        try:
            card = await A2ACardResolver(self.http, self.base_url).get_agent_card()
        except Exception as exc:
            raise TransportError(
                f"no A2A agent card at {self.base_url}/.well-known/agent-card.json: {exc}"
            ) from exc
        uris = [ext.uri for ext in card.capabilities.extensions]
        try:
            self._task.dialect = devtool.check_extension(uris)
        except devtool.IncompatibleAgentError as exc:
            raise TransportError(f"incompatible agent: {exc}") from exc
        self.extension_uri = next((u for u in uris if devtool.is_extension(u)), "")
        self.server_version = card.version
        self._pin_interfaces(card)
        self.rpc_url = (
            card.supported_interfaces[0].url if card.supported_interfaces else self.base_url
        )
        factory = ClientFactory(ClientConfig(httpx_client=self.http, streaming=True))
        self.client = factory.create(card)
        self._emit(
            SessionUpdate(
                {
                    "dialect": self._task.dialect,
                    "agent": card.name,
                    "agent_version": card.version,
                    "url": self.base_url,
                    "extension": self.extension_uri or None,
                    "extension_version": (
                        devtool.extension_version(self.extension_uri)
                        if self.extension_uri
                        else None
                    ),
                    "pid": self._server.pid if self._server else None,
                }
            )
        )

    def _pin_interfaces(self, card: Any) -> None:
        """Prompts go where the plugin connected, whatever the card says: to the
        server it started (whose card names it "localhost"), or to ``agent.a2a.url``.
        A card's own URL is used only on the configured URL's origin (another path of
        the same server); one naming another address is replaced, and the user told."""
        configured = bool(self._options().get("url"))
        for interface in card.supported_interfaces:
            if configured and same_origin(interface.url, self.base_url):
                continue
            if configured:
                log.warning("the agent card names %s; using %s", interface.url, self.base_url)
                self._emit(
                    Notice(
                        f"The agent card at {self.base_url} names another address"
                        f" ({interface.url}); prompts go to agent.a2a.url, {self.base_url}.",
                        "warning",
                    )
                )
            interface.url = self.base_url + "/"

    async def _start_server(self) -> str:
        """The server the other conversations use (a task of its own on it), or one
        started now (a2a/shared.py)."""
        from .shared import shared_server

        await self._kill()
        shared = shared_server(self._context.shared)
        async with shared.lock:
            server = shared.live()
            if server is None:
                env = {**self._context.env, **dict(self._options().get("env") or {})}
                cmd = [str(c) for c in self._options()["cmd"]]
                shared.secret = secrets.token_urlsafe(32)
                server = await LocalServer.start(
                    cmd,
                    env,
                    self._context.workspace,
                    self._context.mcp_servers,
                    plugin_version(),
                    secret=shared.secret,
                )
                shared.server = server
            shared.users.add(self)
        self.secret = shared.secret
        self._server = server
        self._watcher = asyncio.get_running_loop().create_task(self._watch(server))
        return server.url

    async def _watch(self, server: LocalServer) -> None:
        code = await server.wait()
        if self.stopping:
            return
        if self._server is server:
            server.remove_home()
        self.connected = False
        log.error("the A2A server exited with code %s", code)
        self._emit(
            StatusChange(
                "error",
                f"the A2A server stopped (exit code {code}); the next prompt starts it"
                f" again{server.tail()}",
            )
        )
        await self.close_http()

    async def _kill(self) -> None:
        from .shared import shared_server

        server, self._server = self._server, None
        if server is not None and shared_server(self._context.shared).release(self, server):
            await server.stop()

    async def close(self) -> None:
        """Disconnect, and let the server go (stopped when no conversation uses it)."""
        self.stopping = True
        self.connected = False
        await self.close_http()
        await self._kill()
        if self._watcher is not None:
            self._watcher.cancel()
        self._watcher = None

    def ready(self) -> None:
        """Connected, the task (if any) restored: prompts can be sent."""
        self.connected = True

    async def drop(self) -> None:
        """The connection dropped: the next prompt connects again."""
        self.connected = False
        await self.close_http()

    async def close_http(self) -> None:
        client, self.client = self.client, None
        http, self.http = self.http, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
        if http is not None:
            with contextlib.suppress(Exception):
                await http.aclose()

    async def rpc(self, method: str, params: Mapping[str, Any]) -> Any:
        """One JSON-RPC call of the extension's own methods (not in a2a-sdk)."""
        assert self.http is not None
        body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
        response = await self.http.post(self.rpc_url, json=body)
        payload = response.json()
        if "error" in payload:
            raise TransportError(f"{method}: {payload['error'].get('message', payload['error'])}")
        return payload.get("result")
