"""The A2A transport: the Gemini CLI agent over A2A with the ``development-tool``
extension, through the official ``a2a-sdk``.

Either connects to ``agent.a2a.url`` or starts ``agent.a2a.cmd`` (server.py: in
the workspace, on loopback, its output in the plugin's log). What client-behaviour.md says about the
real server shapes this package:

- one HTTP connection kept open for the task's life (the server aborts a task
  whose connection ends between turns), and no read timeout on streams;
- a stream that breaks while its task lives is followed again (resume.py);
- a turn ends with ``input-required`` (0.25.2) or ``completed`` (the RFC) and the
  end of the stream (the SDK drops ``final``);
- slash commands are REST on 0.25.2 and JSON-RPC for an RFC agent (commands.py);
- 0.25.2 hangs when an answer carries modified content: the answer goes without
  it, and the user's version is written once the agent's write succeeded
  (events.py).

What the user was shown is what is answered: a confirmation whose tool call
comes again, still waiting, with another path, command, kind or tool is refused
(events.py), and the agent answered with a rejection once its stream ends
(:meth:`A2ATransport._after_stream`).

:class:`A2ATransport` is the top of a ladder of classes, one module each, that
share one task's state (task, context, the calls and what the user was shown of
them): ``state.py`` (that state), ``events.py`` (updates to the panel's events),
``resume.py`` (the stream, followed again when it breaks), ``commands.py``
(slash commands), and this module (connecting, the server's life, prompts,
answers, cancel).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..attach import AttachError, embedded_text
from ..image import Image
from ..model import Notice, Prompt, Reference, SessionUpdate, StatusChange
from ..transport import EventSink, TransportError, plugin_version
from . import devtool
from .commands import A2ACommands
from .server import LocalServer
from .state import TERMINAL_STATES

if TYPE_CHECKING:
    from ...paths import PathPolicy

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


class A2ATransport(A2ACommands):
    """The panel's client of the A2A agent: its life (connect, start the server,
    stop), prompts, the user's answers and cancel."""

    async def start(self, events: EventSink) -> None:
        import httpx

        from .wire import CleanTextTransport

        self._events = events
        self._stopping = False
        url = self._options().get("url")
        self._calls.clear()
        self._modified.clear()
        self._shown.clear()
        self._refused.clear()
        self._refusals.clear()
        headers = dict(self.headers)
        if url:
            self._base_url = str(url).rstrip("/")
        else:
            # A server (re)started knows no task: the conversation starts again.
            self.task_id = self.context_id = self.state = ""
            self._base_url = await self._start_server()
            # The started server answers only requests with this secret (loopback.cjs).
            headers["Authorization"] = f"Bearer {self.secret}"
        # One connection for the task's life: no keep-alive expiry; no read
        # timeout (streams are quiet while the model thinks or a tool runs).
        # Text that is not valid Unicode is replaced before a2a-sdk parses it (wire.py).
        network = httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_keepalive_connections=4, keepalive_expiry=None)
        )
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(30.0, read=None),
            transport=CleanTextTransport(network, self._text_replaced),
        )
        try:
            await self._connect()
        except Exception:
            await self.stop()
            raise
        self._connected = True

    def _text_replaced(self) -> None:
        self.events.emit(
            Notice(
                "The agent sent text that is not valid Unicode (a lone surrogate or bytes"
                " that are not UTF-8): it is shown as \ufffd.",
                "warning",
            )
        )

    async def _connect(self) -> None:
        from a2a.client import ClientConfig, ClientFactory
        from a2a.client.card_resolver import A2ACardResolver

        assert self._http is not None
        try:
            card = await A2ACardResolver(self._http, self._base_url).get_agent_card()
        except Exception as exc:
            raise TransportError(
                f"no A2A agent card at {self._base_url}/.well-known/agent-card.json: {exc}"
            ) from exc
        uris = [ext.uri for ext in card.capabilities.extensions]
        try:
            self.dialect = devtool.check_extension(uris)
        except devtool.IncompatibleAgentError as exc:
            raise TransportError(f"incompatible agent: {exc}") from exc
        self.extension_uri = next((u for u in uris if devtool.is_extension(u)), "")
        self.server_version = card.version
        self._pin_interfaces(card)
        self._rpc_url = (
            card.supported_interfaces[0].url if card.supported_interfaces else self._base_url
        )
        factory = ClientFactory(ClientConfig(httpx_client=self._http, streaming=True))
        self._client = factory.create(card)
        self.events.emit(
            SessionUpdate(
                {
                    "dialect": self.dialect,
                    "agent": card.name,
                    "agent_version": card.version,
                    "url": self._base_url,
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
        await self._load_commands()
        if self.task_id:
            await self._restore_task()

    def _pin_interfaces(self, card: Any) -> None:
        """Prompts go where the plugin connected, whatever the card says: to the
        server it started (whose card names it "localhost"), or to ``agent.a2a.url``.
        A card's own URL is used only on the configured URL's origin (another path of
        the same server); one naming another address is replaced, and the user told."""
        configured = bool(self._options().get("url"))
        for interface in card.supported_interfaces:
            if configured and same_origin(interface.url, self._base_url):
                continue
            if configured:
                log.warning("the agent card names %s; using %s", interface.url, self._base_url)
                self.events.emit(
                    Notice(
                        f"The agent card at {self._base_url} names another address"
                        f" ({interface.url}); prompts go to agent.a2a.url, {self._base_url}.",
                        "warning",
                    )
                )
            interface.url = self._base_url + "/"

    async def _start_server(self) -> str:
        """The server the other conversations use (a task of its own on it), or one
        started now (a2a/shared.py)."""
        from .shared import shared_server

        await self._kill()
        shared = shared_server(self.context.shared)
        async with shared.lock:
            server = shared.live()
            if server is None:
                env = {**self.context.env, **dict(self._options().get("env") or {})}
                cmd = [str(c) for c in self._options()["cmd"]]
                shared.secret = secrets.token_urlsafe(32)
                server = await LocalServer.start(
                    cmd,
                    env,
                    self.context.workspace,
                    self.context.mcp_servers,
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
        if self._stopping:
            return
        if self._server is server:
            server.remove_home()
        self._connected = False
        log.error("the A2A server exited with code %s", code)
        self.events.emit(
            StatusChange(
                "error",
                f"the A2A server stopped (exit code {code}); the next prompt starts it"
                f" again{server.tail()}",
            )
        )
        await self._close_http()

    async def _kill(self) -> None:
        from .shared import shared_server

        server, self._server = self._server, None
        if server is not None and shared_server(self.context.shared).release(self, server):
            await server.stop()

    async def stop(self) -> None:
        self._stopping = True
        self._connected = False
        await self._close_http()
        await self._kill()
        if self._watcher is not None:
            self._watcher.cancel()
        self._watcher = None
        self.task_id = self.context_id = ""
        self._conversation = None

    def health(self) -> Mapping[str, Any]:
        return {
            "url": self._base_url,
            "dialect": self.dialect,
            "version": self.server_version,
            "extension": self.extension_uri,
        }

    # -- messages ---------------------------------------------------------------------

    def _message(self, parts: list[Any], first: bool) -> Any:
        from a2a.types import a2a_pb2
        from google.protobuf import json_format  # type: ignore[import-untyped]

        message = a2a_pb2.Message(message_id=str(uuid.uuid4()), role=a2a_pb2.Role.ROLE_USER)
        if self.task_id:
            message.task_id = self.task_id
        if self.context_id:
            message.context_id = self.context_id
        for part in parts:
            if isinstance(part, str):
                message.parts.add(text=part)
            elif isinstance(part, Image):  # a file part: its bytes, type and name
                message.parts.add(raw=part.data, media_type=part.mime, filename=part.name)
            else:
                json_format.ParseDict({"data": part}, message.parts.add())
        if first:
            json_format.ParseDict(
                devtool.agent_settings(self.dialect, self.context.workspace), message.metadata
            )
        return message

    async def _send(self, parts: list[Any]) -> None:
        """Send a message on the task and stream its events until the turn ends."""
        from a2a.types import a2a_pb2

        client = self._client
        if client is None:
            raise TransportError("not connected to the A2A agent")
        first = not self.task_id
        request = a2a_pb2.SendMessageRequest(message=self._message(parts, first))
        await self._consume(client.send_message(request))
        await self._after_stream()

    async def _after_stream(self) -> None:
        """What waits for the end of a stream: the user's versions being written,
        and the rejections of tool calls changed after they were shown."""
        from a2a.types import a2a_pb2

        while self._writes or self._refusals:
            if self._writes:
                await asyncio.gather(*list(self._writes), return_exceptions=True)
                continue
            call_id, shown = self._refusals.pop(0)
            reject = next(
                (o.id for o in shown.options if o.kind in ("reject_once", "reject_always")),
                "cancel" if self.dialect == devtool.CODER_AGENT else None,
            )
            client = self._client
            if client is None:
                return
            if reject is None:  # the RFC defines no other way to skip a call
                await self.cancel()
                continue
            answer = devtool.confirmation_answer(self.dialect, call_id, reject, None)
            request = a2a_pb2.SendMessageRequest(message=self._message([answer], False))
            await self._consume(client.send_message(request))

    # -- the transport's interface -------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> None:
        text = prompt.text
        if self._notes:
            text = "\n".join(self._notes) + "\n" + text
            self._notes = []
        # 0.25.2 passes text parts to the model and drops file parts: each reference
        # is a text part of its own, holding what it attaches. An image has no text:
        # it goes as a file part (its bytes), for the agents that take them.
        parts: list[Any] = [text]
        for ref in prompt.references:
            parts.append(await asyncio.to_thread(_reference_part, ref, self.context.paths()))
        parts.extend(prompt.images)
        if self.state in TERMINAL_STATES:
            self.task_id = ""  # a finished task takes no more messages: a new one, same context
        await self._send(parts)

    async def answer(self, call_id: str, option_id: str | None, new_content: str | None) -> None:
        if call_id in self._refused:
            return  # refused when it changed after it was shown; the agent is told
        if option_id is None:
            # Rejected, and the agent offered no reject option. 0.25.2's own
            # cancellation is the outcome "cancel"; the RFC defines none but the
            # task's cancel, which skips the call: never an allow option.
            if self.dialect == devtool.CODER_AGENT:
                option_id = "cancel"
            else:
                await self.cancel()
                return
        # The question the user answered: the first the call asked (_as_shown).
        shown = self._shown.pop(call_id, None)
        send = new_content
        if new_content is not None and self.dialect == devtool.CODER_AGENT:
            if shown is not None and shown.file_path:
                self._modified[call_id] = (
                    shown.file_path,
                    new_content,
                    shown.new_content or "",
                )
            send = None
        await self._send([devtool.confirmation_answer(self.dialect, call_id, option_id, send)])

    async def cancel(self) -> None:
        from a2a.types import a2a_pb2

        client = self._client
        if client is None or not self.task_id:
            return
        try:
            await client.cancel_task(a2a_pb2.CancelTaskRequest(id=self.task_id))
        except Exception as exc:
            log.info("cancel_task: %s", exc)


def _reference_part(ref: Reference, policy: PathPolicy | None) -> str:
    """The text part of one reference: what it attaches, under its name. A whole
    file is read by the reader every attachment goes through (attach.py): regular
    files only, within the policy, up to its size cap."""
    text = ref.text
    if text is None and ref.start_line is None:
        try:
            text = embedded_text(ref.path, policy)
        except AttachError as exc:
            return f"{ref.mention()} ({exc})"
        if text is None:
            return f"{ref.mention()} (too large or binary to attach: read it yourself)"
    if text is None:
        return ref.mention()
    return f"Content from {ref.mention()}:\n{text}"
