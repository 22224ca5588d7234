"""The A2A transport: the Gemini CLI agent over A2A with the ``development-tool``
extension, through the official ``a2a-sdk``.

Either connects to ``agent.a2a.url`` or starts ``agent.a2a.cmd`` (server.py: in
the workspace, on loopback, its output in the plugin's log). What client-behaviour.md says about the
real server shapes this module:

- one HTTP connection kept open for the task's life (the server aborts a task
  whose connection ends between turns), and no read timeout on streams;
- a stream that breaks while its task lives is followed again
  (``tasks/resubscribe``, then ``tasks/get``; :meth:`A2ATransport._resume`);
  0.25.2 has cancelled that turn by then, which the reconnect shows;
- a turn ends with ``input-required`` (0.25.2) or ``completed`` (the RFC) and the
  end of the stream (the SDK drops ``final``);
- slash commands are REST on 0.25.2 (``GET /listCommands``, ``POST
  /executeCommand``) and the extension's JSON-RPC methods for an RFC agent
  (``commands/get``, ``command/execute``), which a2a-sdk does not have;
- 0.25.2 hangs when an answer carries modified content: the answer goes without
  it and, once the agent's write succeeded, the user's version is written over it
  (``_finish_modified_edit``), so the file ends with what the user accepted; the
  agent is told in the next prompt. That write goes to the path the user reviewed,
  through Neovim's buffer or off the loop on disk, by the agent's file rules
  (agent/files.py: the path policy, regular files only); if it cannot, the user's
  text is kept in a private file the message names.

What the user was shown is what is answered: a confirmation whose tool call
comes again, still waiting, with another path, command, kind or tool
(:func:`_changes`) is refused: shown as cancelled, the user told, and the agent
answered with a rejection once its stream ends (:meth:`A2ATransport._after_stream`).

Over 400 lines: connecting, streaming, resuming, answering and slash commands all
read and change one task's state (task, context, the calls and what the user was
shown of them); split apart, each piece would carry that state to the others.

Long because it is one class, the A2A client's state machine: the task's life
(connect, stream, resume), confirmations as they were shown, the user's version
written and slash commands share its state. The jobs that stand alone are out:
server.py (the started server), devtool.py (the extension's encodings),
gemini_home.py, ``agent/files.py`` and ``agent/mcp_servers.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import re
import secrets
import tempfile
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from ...paths import shown as shown_path
from ..model import (
    CommandsUpdate,
    Confirmation,
    MessageChunk,
    Notice,
    Prompt,
    SessionUpdate,
    StatusChange,
    ThoughtChunk,
    ToolCall,
    ToolCallUpdate,
    ToolOutput,
    TurnEnd,
)
from ..transport import EventSink, Transport, TransportError, plugin_version
from . import devtool
from .server import LocalServer

if TYPE_CHECKING:
    import httpx
    from a2a.client import Client

log = logging.getLogger(__name__)
TERMINAL_STATES = {"completed", "failed", "canceled", "rejected"}
TURN_END_STATES = TERMINAL_STATES | {"input-required", "auth-required"}
RESUME_ATTEMPTS = 3


def _changes(shown: Confirmation, now: Confirmation) -> list[str]:
    """What differs between the question the user was shown and ``now``: what
    would run or be written (the text proposed may change: the user's answer
    carries the text they accepted)."""
    out = []
    for name in ("kind", "file_path", "command", "directory", "server", "tool"):
        before, after = getattr(shown, name), getattr(now, name)
        if before != after:
            out.append(f"{name.replace('_', ' ')} {before!r} became {after!r}")
    return out


def _keep(path: str, text: str) -> str:
    """Save ``text`` (the user's version of ``path``) in a private file; its path."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(path))[:60]
    fd, kept = tempfile.mkstemp(prefix="gemini-companion-yours-", suffix=f"-{name}")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return kept


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


class A2ATransport(Transport):
    protocol = "a2a"

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._events: EventSink | None = None
        self._server: LocalServer | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._http: httpx.AsyncClient | None = None
        self._client: Client | None = None
        self._base_url = ""
        self._rpc_url = ""
        self.dialect = devtool.CODER_AGENT
        self.task_id = ""
        self.context_id = ""
        self.state = ""
        self._connected = False
        self._stopping = False
        self._modified: dict[str, tuple[str, str]] = {}  # call id -> (path, user's text)
        self._shown: dict[str, Confirmation] = {}  # call id -> the question the user sees
        self._refused: set[str] = set()  # calls changed after they were shown
        self._refusals: list[tuple[str, Confirmation]] = []  # to answer after the stream
        self._writes: set[asyncio.Task[None]] = set()  # the user's versions being written
        self._notes: list[str] = []  # for the agent, with the next prompt
        self._calls: dict[str, ToolCall] = {}
        self._seen: set[str] = set()  # ids of the current task's messages already shown
        self._conversation: tuple[str, str, str] | None = None  # while a command's task runs
        self.server_version = ""
        self.extension_uri = ""
        # Sent with every request to agent.a2a.url (a started server gets its secret).
        self.headers: dict[str, str] = {}
        self.secret = ""  # the started server's

    # -- lifecycle --------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def events(self) -> EventSink:
        assert self._events is not None
        return self._events

    def _options(self) -> Mapping[str, Any]:
        return self.context.options

    async def start(self, events: EventSink) -> None:
        import httpx

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
            # A new server knows no task: the conversation starts again.
            self.task_id = self.context_id = self.state = ""
            # The started server answers only requests with this secret (loopback.cjs).
            self.secret = secrets.token_urlsafe(32)
            self._base_url = await self._start_server(self.secret)
            headers["Authorization"] = f"Bearer {self.secret}"
        # One connection for the task's life: no keep-alive expiry; no read
        # timeout (streams are quiet while the model thinks or a tool runs).
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(30.0, read=None),
            limits=httpx.Limits(max_keepalive_connections=4, keepalive_expiry=None),
        )
        try:
            await self._connect()
        except Exception:
            await self.stop()
            raise
        self._connected = True

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

    async def _restore_task(self) -> None:
        """Reconnected to an agent that may still hold the task: ``tasks/get`` tells
        whether it is alive; if so, follow-ups stay on it, else a new one starts."""
        from a2a.types import a2a_pb2
        from google.protobuf import json_format  # type: ignore[import-untyped]

        assert self._client is not None
        try:
            task = await self._client.get_task(a2a_pb2.GetTaskRequest(id=self.task_id))
        except Exception as exc:
            log.info("task %s is gone: %s", self.task_id, exc)
            self.task_id = self.state = ""
            self.events.emit(SessionUpdate({"task_id": None}))
            return
        update = devtool.from_sdk({"task": json_format.MessageToDict(task)})
        self.state = update.state
        if update.state in TERMINAL_STATES:
            self.task_id = ""
            self.events.emit(SessionUpdate({"task_id": None}))
            return
        self.events.emit(Notice(f"Reconnected: task {self.task_id} is {update.state}.", "info"))

    async def _start_server(self, secret: str) -> str:
        await self._kill()
        env = {**self.context.env, **dict(self._options().get("env") or {})}
        cmd = [str(c) for c in self._options()["cmd"]]
        server = await LocalServer.start(
            cmd,
            env,
            self.context.workspace,
            self.context.mcp_servers,
            plugin_version(),
            secret=secret,
        )
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
        server, self._server = self._server, None
        if server is not None:
            await server.stop()

    async def _close_http(self) -> None:
        client, self._client = self._client, None
        http, self._http = self._http, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
        if http is not None:
            with contextlib.suppress(Exception):
                await http.aclose()

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
        from google.protobuf import json_format

        message = a2a_pb2.Message(message_id=str(uuid.uuid4()), role=a2a_pb2.Role.ROLE_USER)
        if self.task_id:
            message.task_id = self.task_id
        if self.context_id:
            message.context_id = self.context_id
        for part in parts:
            if isinstance(part, str):
                message.parts.add(text=part)
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

    async def _consume(self, stream: AsyncIterator[Any], *, to_turn_end: bool = False) -> None:
        """Stream a turn's events; a stream that breaks while the task is alive is
        followed again (:meth:`_resume`)."""
        try:
            await self._follow(stream, to_turn_end=to_turn_end)
        except (asyncio.CancelledError, TransportError):
            raise
        except Exception as exc:
            if self._stopping:
                return
            server = self._server
            if server is not None and server.returncode is not None:
                return  # the watcher says why
            log.warning("the A2A stream broke: %s", exc, exc_info=True)
            if self.task_id and self.state not in TERMINAL_STATES and self._client is not None:
                await self._resume(exc)
                return
            await self._dropped(exc)

    async def _follow(self, stream: AsyncIterator[Any], *, to_turn_end: bool = False) -> None:
        """Handle a stream's events; ``to_turn_end``: stop at the end of the turn (a
        resubscription may stay open while the task waits for the user)."""
        from google.protobuf import json_format

        async for event in stream:
            update = devtool.from_sdk(json_format.MessageToDict(event))
            self._handle(update)
            if to_turn_end and update.state in TURN_END_STATES:
                break

    async def _dropped(self, exc: BaseException) -> None:
        self._connected = False
        await self._close_http()
        raise TransportError(
            f"the connection to the A2A agent dropped ({exc}); the next prompt reconnects"
        ) from exc

    async def _resume(self, exc: BaseException) -> None:
        """The stream of a running task broke (the connection, not the task, ended):
        resubscribe to the task (``tasks/resubscribe``; a2a-sdk's ``subscribe``) to
        follow it live, then ``tasks/get`` for its state and the messages the break
        cost. Messages already shown are known by their ids and not shown again;
        tool calls are updated in place. An agent that refuses the resubscription
        (the task ended meanwhile, or it cannot) is read with ``tasks/get`` alone."""
        from a2a.types import a2a_pb2

        task_id = self.task_id
        self.events.emit(
            Notice(
                f"The connection to the agent dropped while task {task_id} was running"
                f" ({exc}); reconnecting to the task.",
                "warning",
            )
        )
        self.events.emit(StatusChange("working", "reconnecting to the agent"))
        for attempt in range(1, RESUME_ATTEMPTS + 1):
            client = self._client
            if client is None:
                break
            try:
                await self._follow(
                    client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=task_id)),
                    to_turn_end=True,
                )
            except (asyncio.CancelledError, TransportError):
                raise
            except Exception as refused:  # ended, unknown, not supported, or down
                log.info("resubscribing to task %s (try %d): %s", task_id, attempt, refused)
            try:
                task = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
            except (asyncio.CancelledError, TransportError):
                raise
            except Exception as failed:
                log.info("tasks/get %s (try %d): %s", task_id, attempt, failed)
                exc = failed
                continue
            from google.protobuf import json_format

            if self.state not in TURN_END_STATES:
                self.events.emit(StatusChange("working"))  # no longer "reconnecting"
            self._handle(devtool.from_sdk({"task": json_format.MessageToDict(task)}))
            if self.state in TURN_END_STATES:
                self.events.emit(
                    Notice(f"Reconnected to task {task_id}: it is {self.state}.", "info")
                )
                return
            # Still running and the stream gone again: follow it once more.
        await self._dropped(exc)

    def _handle(self, update: devtool.Update) -> None:
        events = self.events
        if update.task_id and update.task_id != self.task_id:
            self.task_id = update.task_id
            self._seen.clear()
            events.emit(SessionUpdate({"task_id": update.task_id}))
        for earlier in update.history:
            self._handle(earlier)
        if update.message_id:
            if update.message_id in self._seen:  # shown already (a restored task)
                update = dataclasses.replace(update, texts=[], data=[])
            else:
                self._seen.add(update.message_id)
        if update.context_id and update.context_id != self.context_id:
            self.context_id = update.context_id
            events.emit(SessionUpdate({"context_id": update.context_id}))
        if update.kind == "artifact":
            match = re.match(r"tool-(.+)-output$", update.artifact_id)
            if match:
                events.emit(ToolOutput(match.group(1), "".join(update.texts), update.append))
            return
        dialect, kind = update.event_kind()
        if dialect and dialect != self.dialect:
            self.dialect = dialect
            events.emit(SessionUpdate({"dialect": dialect}))
        error = update.error()
        if error:
            events.emit(Notice(error, "error"))
        if kind in ("tool-call-update", "tool-call-confirmation", "thought") or (
            not kind and update.data
        ):
            self._handle_data(kind, update.data)
            if kind:
                return
        if kind in ("text-content", "") or update.kind == "message":
            for text in update.texts:
                events.emit(MessageChunk(text))
        elif kind == "citation":
            for text in update.texts:
                events.emit(Notice(text, "info"))
        if update.state:
            self.state = update.state
            if update.state in TERMINAL_STATES and self._conversation is not None:
                self._back_to_conversation()
            if update.state == "failed" and update.texts and kind == "state-change":
                events.emit(Notice(" ".join(update.texts), "error"))
            if (
                update.state in TURN_END_STATES
                and kind in ("state-change", "")
                and not any(
                    c.confirmation is not None and c.status == "pending"
                    for c in self._calls.values()
                )
            ):
                events.emit(TurnEnd(update.state))
            elif update.state == "working":
                events.emit(StatusChange("working"))

    def _handle_data(self, kind: str, parts: list[Any]) -> None:
        """Tool calls and thoughts (DataParts); without a kind (a task's history)
        each is read by its shape."""
        events = self.events
        for data in parts:
            if not isinstance(data, Mapping):
                continue
            call = devtool.tool_call(self.dialect, data) if kind != "thought" else None
            if call is not None:
                call = self._as_shown(call)
                self._calls[call.id] = call
                events.emit(ToolCallUpdate(call))
                if call.status == "succeeded" and call.id in self._modified:
                    self._finish_modified_edit(call.id)
            elif kind == "thought" or (
                not kind and "subject" in data and set(data) <= {"subject", "description"}
            ):
                events.emit(
                    ThoughtChunk(str(data.get("description") or ""), str(data.get("subject") or ""))
                )

    def _as_shown(self, call: ToolCall) -> ToolCall:
        """``call`` as the panel may show it: a question the user is looking at never
        changes under them. The first confirmation of a call is what the user sees
        until they answer; the same call waiting again with another path, command,
        kind or tool is refused (cancelled here, rejected to the agent after the
        stream), and a refused call never asks again."""
        conf = call.confirmation
        if call.id in self._refused:
            return call.but(confirmation=None, status="cancelled") if conf is not None else call
        if conf is None or call.status != "pending":
            self._shown.pop(call.id, None)  # answered or ended: a new question is new
            return call
        shown = self._shown.setdefault(call.id, conf)
        changes = _changes(shown, conf)
        if not changes:
            return call
        self._refused.add(call.id)
        self._refusals.append((call.id, shown))
        why = "; ".join(changes)
        log.warning("tool call %s changed after it was shown: %s", call.id, why)
        self.events.emit(
            Notice(
                f"The agent changed tool call {call.id} after it was shown to you ({why}):"
                " refused. Nothing of it runs; the agent is told.",
                "warning",
            )
        )
        self._notes.append(
            f"[Tool call {call.id} was refused: it changed after the user was shown it"
            f" ({why}). Ask again as a new tool call if it is still needed.]"
        )
        before = self._calls.get(call.id, call)
        return before.but(confirmation=None, status="cancelled", error=f"changed: {why}")

    def _back_to_conversation(self) -> None:
        """A slash command's task ended: follow-ups go to the conversation again."""
        assert self._conversation is not None
        self.task_id, self.context_id, self.state = self._conversation
        self._conversation = None
        self._seen.clear()
        self.events.emit(
            SessionUpdate({"task_id": self.task_id or None, "context_id": self.context_id or None})
        )

    def _finish_modified_edit(self, call_id: str) -> None:
        """The agent wrote its proposal: write the user's version (off the stream:
        :meth:`_after_stream` waits for it before the turn ends)."""
        path, text = self._modified.pop(call_id)
        task = asyncio.get_running_loop().create_task(self._write_users_version(path, text))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write_users_version(self, path: str, text: str) -> None:
        """Write ``text`` to ``path`` (the path the user reviewed) by the rules of the
        agent's own writes: through Neovim's buffer when the file is loaded, else on
        disk off the loop, regular files only, within the path policy."""
        from ..files import EditorFiles, FileAccessError

        try:
            await EditorFiles(self.context.editor, self.context.paths).write(path, text)
        except FileAccessError as exc:
            try:
                kept = await asyncio.to_thread(_keep, path, text)
            except OSError as failed:
                log.error("could not keep the user's version of %s: %s", path, failed)
                kept = "nowhere: it could not be saved either"
            self.events.emit(
                Notice(
                    f"Your edited version of {shown_path(path)} was not written: {exc}."
                    f" Your text is kept in {kept} .",
                    "error",
                )
            )
            return
        self.events.emit(
            Notice(
                f"Wrote your edited version of {shown_path(path)} (the A2A server 0.25.2 cannot"
                " take modified content: it wrote its proposal, then the plugin wrote yours).",
                "info",
            )
        )
        self._notes.append(
            f"[The user edited your proposed change to {path} before accepting it; the file"
            " now holds the user's version. Read it again before changing it.]"
        )

    # -- the transport's interface -------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> None:
        text = prompt.text
        mentions = [ref.mention() for ref in prompt.references]
        if mentions:
            text = " ".join(mentions) + "\n" + text
        if self._notes:
            text = "\n".join(self._notes) + "\n" + text
            self._notes = []
        if self.state in TERMINAL_STATES:
            self.task_id = ""  # a finished task takes no more messages: a new one, same context
        await self._send([text])

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
                self._modified[call_id] = (shown.file_path, new_content)
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

    # -- slash commands -----------------------------------------------------------------

    async def _rpc(self, method: str, params: Mapping[str, Any]) -> Any:
        """One JSON-RPC call of the extension's own methods (not in a2a-sdk)."""
        assert self._http is not None
        body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
        response = await self._http.post(self._rpc_url, json=body)
        payload = response.json()
        if "error" in payload:
            raise TransportError(f"{method}: {payload['error'].get('message', payload['error'])}")
        return payload.get("result")

    async def _load_commands(self) -> None:
        assert self._http is not None
        try:
            if self.dialect == devtool.RFC:
                result = await self._rpc("commands/get", {})
                raw = devtool.get(result, "commands")
            else:
                response = await self._http.get(f"{self._base_url}/listCommands")
                response.raise_for_status()
                raw = response.json().get("commands")
        except Exception as exc:
            log.warning("listing the agent's slash commands failed: %s", exc)
            return
        self.events.emit(CommandsUpdate(devtool.slash_commands(raw)))

    async def run_command(self, name: str, args: str) -> None:
        if self.dialect == devtool.RFC:
            await self._run_rfc_command(name, args)
        else:
            await self._run_rest_command(name, args)

    async def _run_rfc_command(self, name: str, args: str) -> None:
        from a2a.types import a2a_pb2

        result = await self._rpc("command/execute", {"command_path": name.split(), "args": args})
        status = str(devtool.get(result, "status") or "")
        message = devtool.get(result, "message")
        if "FAILED" in status.upper():
            raise TransportError(f"/{name}: {message or 'failed to start'}")
        if message:
            self.events.emit(MessageChunk(str(message)))
        execution = devtool.get(result, "execution_id")
        if execution and self._client is not None:
            # The command runs as a task of its own: its confirmations are answered
            # on it; once it ends, prompts go back to the conversation's task.
            if self._conversation is None:
                self._conversation = (self.task_id, self.context_id, self.state)
            stream = self._client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=str(execution)))
            await self._consume(stream, to_turn_end=True)
        self.events.emit(TurnEnd())

    async def _run_rest_command(self, name: str, args: str) -> None:
        assert self._http is not None
        body = {"command": name, "args": args.split() if args else []}
        async with self._http.stream("POST", f"{self._base_url}/executeCommand", json=body) as r:
            if r.headers.get("content-type", "").startswith("text/event-stream"):
                async for line in r.aiter_lines():
                    if line.startswith("data:"):
                        payload = json.loads(line[5:].strip())
                        result = payload.get("result")
                        if isinstance(result, Mapping):
                            self._handle(devtool.from_v03(result))
                self.events.emit(TurnEnd())
                return
            raw = await r.aread()
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = {"error": raw.decode("utf-8", "replace")}
        if r.status_code >= 400 or (isinstance(payload, Mapping) and "error" in payload):
            error = payload.get("error") if isinstance(payload, Mapping) else payload
            raise TransportError(f"/{name}: {error}")
        self.events.emit(MessageChunk(_command_output(payload)))
        self.events.emit(TurnEnd())


def _command_output(payload: Any) -> str:
    if isinstance(payload, Mapping):
        data = payload.get("data")
        if isinstance(data, str):
            return data
        if data is not None:
            return json.dumps(data, ensure_ascii=False, indent=2)
    return json.dumps(payload, ensure_ascii=False, indent=2)
