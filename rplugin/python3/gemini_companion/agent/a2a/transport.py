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

:class:`A2ATransport` holds small parts, each with its own job and a narrow
interface, built in its ``__init__``: ``connection.py`` (the HTTP client, the
agent's card, the server the plugin started), ``events.py`` (updates to the
panel's events, and what the user was shown of each call), ``resume.py`` (the
stream, followed again when it breaks) and ``commands.py`` (slash commands). The
state they share (the task, its context and dialect, the notes for the agent) is
one dataclass, ``state.py``'s :class:`~.state.A2ATask`, handed to the parts that
need it; this module holds the panel's interface (connecting, prompts, answers,
cancel) and ties the parts together.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..attach import AttachError, embedded_text
from ..image import Image
from ..model import Prompt, Reference
from ..transport import EventSink, Transport, TransportContext, TransportError
from . import devtool
from .commands import SlashCommands
from .connection import A2AConnection
from .events import EventMapper
from .resume import TaskStream
from .state import TERMINAL_STATES, A2ATask

if TYPE_CHECKING:
    from ...paths import PathPolicy

log = logging.getLogger(__name__)


class A2ATransport(Transport):
    """The panel's client of the A2A agent: its life (connect, start the server,
    stop), prompts, the user's answers and cancel."""

    protocol = "a2a"

    def __init__(self, context: TransportContext) -> None:
        super().__init__(context)
        task = self._task = A2ATask()
        self._connection = A2AConnection(context, task, task.emit)
        self._updates = EventMapper(context, task)
        self._stream = TaskStream(self._connection, self._updates, task)
        self._commands = SlashCommands(self._connection, self._stream, task)

    # -- what the task and the connection show (tests, health) ---------------------------

    @property
    def connected(self) -> bool:
        return self._connection.connected

    @property
    def dialect(self) -> str:
        return self._task.dialect

    @property
    def task_id(self) -> str:
        return self._task.task_id

    @property
    def context_id(self) -> str:
        return self._task.context_id

    @property
    def state(self) -> str:
        return self._task.state

    @property
    def secret(self) -> str:
        """The started server's (every conversation on it sends it)."""
        return self._connection.secret

    @property
    def headers(self) -> dict[str, str]:
        """Sent with every request to ``agent.a2a.url``."""
        return self._connection.headers

    @headers.setter
    def headers(self, headers: dict[str, str]) -> None:
        self._connection.headers = headers

    # -- the transport's interface -------------------------------------------------------

    async def start(self, events: EventSink) -> None:
        self._task.sink = events
        self._updates.reset()
        connection = self._connection
        await connection.open()
        try:
            await connection.connect()
            await self._commands.load()
            if self._task.task_id:
                await self._stream.restore_task()
        except Exception:
            await self.stop()
            raise
        connection.ready()

    async def stop(self) -> None:
        await self._connection.close()
        task = self._task
        task.task_id = task.context_id = ""
        task.conversation = None

    def health(self) -> Mapping[str, Any]:
        connection = self._connection
        return {
            "url": connection.base_url,
            "dialect": self._task.dialect,
            "version": connection.server_version,
            "extension": connection.extension_uri,
        }

    async def prompt(self, prompt: Prompt) -> None:
        task = self._task
        text = prompt.text
        if task.notes:
            text = "\n".join(task.notes) + "\n" + text
            task.notes.clear()
        # 0.25.2 passes text parts to the model and drops file parts: each reference
        # is a text part of its own, holding what it attaches. An image has no text:
        # it goes as a file part (its bytes), for the agents that take them.
        parts: list[Any] = [text]
        for ref in prompt.references:
            parts.append(await asyncio.to_thread(_reference_part, ref, self.context.paths()))
        parts.extend(prompt.images)
        if task.state in TERMINAL_STATES:
            task.task_id = ""  # a finished task takes no more messages: a new one, same context
        await self._send(parts)

    async def run_command(self, name: str, args: str) -> None:
        await self._commands.run(name, args)

    async def answer(self, call_id: str, option_id: str | None, new_content: str | None) -> None:
        if self._updates.refused(call_id):
            return  # refused when it changed after it was shown; the agent is told
        dialect = self._task.dialect
        if option_id is None:
            # Rejected, and the agent offered no reject option. 0.25.2's own
            # cancellation is the outcome "cancel"; the RFC defines none but the
            # task's cancel, which skips the call: never an allow option.
            if dialect == devtool.CODER_AGENT:
                option_id = "cancel"
            else:
                await self.cancel()
                return
        # The question the user answered: the first the call asked (events.py).
        shown = self._updates.answered(call_id)
        send = new_content
        if new_content is not None and dialect == devtool.CODER_AGENT:
            if shown is not None and shown.file_path:
                self._updates.edited(call_id, shown.file_path, new_content, shown.new_content or "")
            send = None
        await self._send([devtool.confirmation_answer(dialect, call_id, option_id, send)])

    async def cancel(self) -> None:
        from a2a.types import a2a_pb2

        client, task_id = self._connection.client, self._task.task_id
        if client is None or not task_id:
            return
        try:
            await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
        except Exception as exc:
            log.info("cancel_task: %s", exc)

    # -- messages ---------------------------------------------------------------------

    def _message(self, parts: list[Any], first: bool) -> Any:
        from a2a.types import a2a_pb2
        from google.protobuf import json_format  # type: ignore[import-untyped]

        task = self._task
        message = a2a_pb2.Message(message_id=str(uuid.uuid4()), role=a2a_pb2.Role.ROLE_USER)
        if task.task_id:
            message.task_id = task.task_id
        if task.context_id:
            message.context_id = task.context_id
        for part in parts:
            if isinstance(part, str):
                message.parts.add(text=part)
            elif isinstance(part, Image):  # a file part: its bytes, type and name
                message.parts.add(raw=part.data, media_type=part.mime, filename=part.name)
            else:
                json_format.ParseDict({"data": part}, message.parts.add())
        if first:
            json_format.ParseDict(
                devtool.agent_settings(task.dialect, self.context.workspace), message.metadata
            )
        return message

    async def _send(self, parts: list[Any]) -> None:
        """Send a message on the task and stream its events until the turn ends."""
        from a2a.types import a2a_pb2

        client = self._connection.client
        if client is None:
            raise TransportError("not connected to the A2A agent")
        first = not self._task.task_id
        request = a2a_pb2.SendMessageRequest(message=self._message(parts, first))
        await self._stream.consume(client.send_message(request))
        await self._after_stream()

    async def _after_stream(self) -> None:
        """What waits for the end of a stream: the user's versions being written,
        and the rejections of tool calls changed after they were shown."""
        from a2a.types import a2a_pb2

        while (refusal := await self._updates.next_refusal()) is not None:
            call_id, shown = refusal
            dialect = self._task.dialect
            reject = next(
                (o.id for o in shown.options if o.kind in ("reject_once", "reject_always")),
                "cancel" if dialect == devtool.CODER_AGENT else None,
            )
            client = self._connection.client
            if client is None:
                return
            if reject is None:  # the RFC defines no other way to skip a call
                await self.cancel()
                continue
            answer = devtool.confirmation_answer(dialect, call_id, reject, None)
            request = a2a_pb2.SendMessageRequest(message=self._message([answer], False))
            await self._stream.consume(client.send_message(request))


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
