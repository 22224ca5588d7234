"""The agent's slash commands over A2A: REST on 0.25.2 (``GET /listCommands``,
``POST /executeCommand``) and the extension's JSON-RPC methods for an RFC agent
(``commands/get``, ``command/execute``), which a2a-sdk does not have. An RFC
command runs as a task of its own; once it ends, prompts go back to the
conversation's task."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from typing import Any

from ..model import CommandsUpdate, MessageChunk, TurnEnd
from ..transport import TransportError
from . import devtool
from .resume import A2AStream

log = logging.getLogger(__name__)


class A2ACommands(A2AStream):
    """Listing and running the agent's slash commands."""

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
                            update = devtool.from_v03(result)
                            await self._check_paths(update)
                            self._handle(update)
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
