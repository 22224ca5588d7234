"""The agent's slash commands over A2A: REST on 0.25.2 (``GET /listCommands``,
``POST /executeCommand``) and the extension's JSON-RPC methods for an RFC agent
(``commands/get``, ``command/execute``), which a2a-sdk does not have. An RFC
command runs as a task of its own; once it ends, prompts go back to the
conversation's task."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..model import CommandsUpdate, MessageChunk, TurnEnd
from ..transport import TransportError
from . import devtool

if TYPE_CHECKING:
    from .connection import A2AConnection
    from .resume import TaskStream
    from .state import A2ATask

log = logging.getLogger(__name__)


class SlashCommands:
    """Listing and running the agent's slash commands, on ``connection``; a
    command's output streams through ``stream`` like a prompt's; ``task`` is the
    state the conversation's parts share (its dialect, the task prompts go to)."""

    def __init__(self, connection: A2AConnection, stream: TaskStream, task: A2ATask) -> None:
        self._connection = connection
        self._stream = stream
        self._task = task

    async def load(self) -> None:
        http, task = self._connection.http, self._task
        assert http is not None
        try:
            if task.dialect == devtool.RFC:
                result = await self._connection.rpc("commands/get", {})
                raw = devtool.get(result, "commands")
            else:
                response = await http.get(f"{self._connection.base_url}/listCommands")
                response.raise_for_status()
                raw = response.json().get("commands")
        except Exception as exc:
            log.warning("listing the agent's slash commands failed: %s", exc)
            return
        task.events.emit(CommandsUpdate(devtool.slash_commands(raw)))

    async def run(self, name: str, args: str) -> None:
        if self._task.dialect == devtool.RFC:
            await self._run_rfc_command(name, args)
        else:
            await self._run_rest_command(name, args)

    async def _run_rfc_command(self, name: str, args: str) -> None:
        from a2a.types import a2a_pb2

        task = self._task
        result = await self._connection.rpc(
            "command/execute", {"command_path": name.split(), "args": args}
        )
        status = str(devtool.get(result, "status") or "")
        message = devtool.get(result, "message")
        if "FAILED" in status.upper():
            raise TransportError(f"/{name}: {message or 'failed to start'}")
        if message:
            task.events.emit(MessageChunk(str(message)))
        execution = devtool.get(result, "execution_id")
        client = self._connection.client
        if execution and client is not None:
            # The command runs as a task of its own: its confirmations are answered
            # on it; once it ends, prompts go back to the conversation's task.
            if task.conversation is None:
                task.conversation = (task.task_id, task.context_id, task.state)
            stream = client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=str(execution)))
            await self._stream.consume(stream, to_turn_end=True)
        task.events.emit(TurnEnd())

    async def _run_rest_command(self, name: str, args: str) -> None:
        http, events = self._connection.http, self._task.events
        assert http is not None
        body = {"command": name, "args": args.split() if args else []}
        url = f"{self._connection.base_url}/executeCommand"
        async with http.stream("POST", url, json=body) as r:
            if r.headers.get("content-type", "").startswith("text/event-stream"):
                async for line in r.aiter_lines():
                    if line.startswith("data:"):
                        payload = json.loads(line[5:].strip())
                        result = payload.get("result")
                        if isinstance(result, Mapping):
                            await self._stream.take(devtool.from_v03(result))
                events.emit(TurnEnd())
                return
            raw = await r.aread()
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = {"error": raw.decode("utf-8", "replace")}
        if r.status_code >= 400 or (isinstance(payload, Mapping) and "error" in payload):
            error = payload.get("error") if isinstance(payload, Mapping) else payload
            raise TransportError(f"/{name}: {error}")
        events.emit(MessageChunk(_command_output(payload)))
        events.emit(TurnEnd())


def _command_output(payload: Any) -> str:
    if isinstance(payload, Mapping):
        data = payload.get("data")
        if isinstance(data, str):
            return data
        if data is not None:
            return json.dumps(data, ensure_ascii=False, indent=2)
    return json.dumps(payload, ensure_ascii=False, indent=2)
