"""An A2A agent that speaks the development-tool extension as the RFC writes it
(a2a-development-tool-extension.md), built on a2a-sdk's server side, for the
transport's tests: metadata keyed by the extension URI, upper-case kinds, the flat
``ToolCall`` through PENDING (with options) -> EXECUTING -> SUCCEEDED, and the
client's ``ToolCallConfirmation`` checked on arrival.

Prompts: ``"shell"`` asks to run a command; ``"edit <path>"`` asks to write a
file and writes whatever content the answer carries (``file_details``); anything
else gets a thought and a text answer. Each turn ends ``input-required`` (waiting)
or ``completed``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2 as pb
from gemini_companion.agent.devtool import EXTENSION_URI
from google.protobuf import json_format

OPTIONS = [
    {"id": "proceed_once", "name": "Allow once"},
    {"id": "proceed_always", "name": "Allow always"},
    {"id": "cancel", "name": "Reject"},
]


class RfcAgent(AgentExecutor):
    def __init__(self) -> None:
        self.confirmations: list[dict[str, Any]] = []
        self.settings: list[dict[str, Any]] = []
        self.pending: dict[str, dict[str, Any]] = {}  # call id -> the ToolCall asked

    async def _status(
        self,
        queue: EventQueue,
        context: RequestContext,
        state: int,
        kind: str,
        *,
        text: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        message = pb.Message(
            message_id=str(uuid.uuid4()),
            role=pb.Role.ROLE_AGENT,
            task_id=context.task_id or "",
            context_id=context.context_id or "",
        )
        if text is not None:
            message.parts.add(text=text)
        if data is not None:
            json_format.ParseDict({"data": data}, message.parts.add())
        event = pb.TaskStatusUpdateEvent(
            task_id=context.task_id or "",
            context_id=context.context_id or "",
            status=pb.TaskStatus(state=state, message=message),  # type: ignore[arg-type]
        )
        json_format.ParseDict({EXTENSION_URI: {"kind": kind, "model": "fake"}}, event.metadata)
        await queue.enqueue_event(event)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        working = pb.TaskState.TASK_STATE_WORKING
        if context.current_task is None:
            await event_queue.enqueue_event(
                pb.Task(
                    id=context.task_id or "",
                    context_id=context.context_id or "",
                    status=pb.TaskStatus(state=pb.TaskState.TASK_STATE_SUBMITTED),
                )
            )
        message = context.message
        assert message is not None
        metadata = json_format.MessageToDict(message.metadata) if message.metadata else {}
        if EXTENSION_URI in metadata:
            self.settings.append(metadata[EXTENSION_URI])
        await self._status(event_queue, context, working, "STATE_CHANGE")
        for part in message.parts:
            if part.HasField("data"):
                answer = json_format.MessageToDict(part)["data"]
                await self._answered(context, event_queue, answer)
                return
        text = " ".join(p.text for p in message.parts if p.text)
        if text.endswith("shell"):
            await self._ask(
                context,
                event_queue,
                {
                    "tool_call_id": "sh-1",
                    "status": "PENDING",
                    "tool_name": "ShellTool",
                    "description": "List the files",
                    "input_parameters": {"command": "ls"},
                    "confirmation_request": {
                        "options": OPTIONS,
                        "execute_details": {"command": "ls -la", "working_directory": "/w"},
                    },
                },
            )
            return
        if " edit " in f" {text} ":
            path = text.split("edit ", 1)[1].strip()
            await self._ask(
                context,
                event_queue,
                {
                    "toolCallId": "ed-1",  # the other proto3 JSON spelling
                    "status": "PENDING",
                    "toolName": "Edit",
                    "description": f"Write {path}",
                    "confirmationRequest": {
                        "options": OPTIONS,
                        "fileEditDetails": {
                            "fileName": Path(path).name,
                            "filePath": path,
                            "newContent": "agent's proposal\n",
                        },
                    },
                },
            )
            return
        await self._status(
            event_queue,
            context,
            working,
            "THOUGHT",
            data={"subject": "Considering", "description": "what to say"},
        )
        await self._status(event_queue, context, working, "TEXT_CONTENT", text="RFC hello")
        await self._status(event_queue, context, pb.TaskState.TASK_STATE_COMPLETED, "STATE_CHANGE")

    async def _ask(self, context: RequestContext, queue: EventQueue, call: dict[str, Any]) -> None:
        call_id = call.get("tool_call_id") or call["toolCallId"]
        self.pending[call_id] = call
        await self._status(
            queue, context, pb.TaskState.TASK_STATE_WORKING, "TOOL_CALL_UPDATE", data=call
        )
        await self._status(queue, context, pb.TaskState.TASK_STATE_INPUT_REQUIRED, "STATE_CHANGE")

    async def _answered(
        self, context: RequestContext, queue: EventQueue, answer: dict[str, Any]
    ) -> None:
        self.confirmations.append(answer)
        working = pb.TaskState.TASK_STATE_WORKING
        call_id = answer.get("tool_call_id")
        option = answer.get("selected_option_id")
        call = self.pending.pop(str(call_id), None)
        # The ToolCallConfirmation checked on arrival: a known call, one of its options.
        if call is None or option not in {o["id"] for o in OPTIONS}:
            await self._status(
                queue,
                context,
                pb.TaskState.TASK_STATE_FAILED,
                "STATE_CHANGE",
                text=f"bad confirmation {answer}",
            )
            return
        base = {"tool_call_id": call_id, "tool_name": "x"}
        if option == "cancel":
            await self._status(
                queue, context, working, "TOOL_CALL_UPDATE", data={**base, "status": "CANCELLED"}
            )
        else:
            await self._status(
                queue,
                context,
                working,
                "TOOL_CALL_UPDATE",
                data={**base, "status": "EXECUTING", "live_content": "running"},
            )
            output = "done"
            details = answer.get("file_details")
            request = call.get("confirmationRequest") or call.get("confirmation_request") or {}
            edit = request.get("fileEditDetails")
            if edit:
                content = details["new_content"] if details else edit["newContent"]
                await asyncio.to_thread(Path(edit["filePath"]).write_text, content)
                output = f"wrote {edit['filePath']}"
            await self._status(
                queue,
                context,
                working,
                "TOOL_CALL_UPDATE",
                data={**base, "status": "SUCCEEDED", "output": {"text": output}},
            )
        await self._status(queue, context, working, "TEXT_CONTENT", text="After the tool.")
        await self._status(queue, context, pb.TaskState.TASK_STATE_COMPLETED, "STATE_CHANGE")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await self._status(event_queue, context, pb.TaskState.TASK_STATE_CANCELED, "STATE_CHANGE")


def card(url: str, extension_uri: str) -> pb.AgentCard:
    return pb.AgentCard(
        name="RFC fake agent",
        description="The development-tool extension as the RFC writes it",
        version="0.0.1",
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=pb.AgentCapabilities(
            streaming=True,
            extensions=[pb.AgentExtension(uri=extension_uri, required=True)],
        ),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[pb.AgentSkill(id="code", name="code", description="code", tags=["code"])],
    )


@contextmanager
def rfc_agent(extension_uri: str = EXTENSION_URI) -> Iterator[tuple[str, RfcAgent]]:
    """Serve the fake on 127.0.0.1 in a thread; yields its URL and the executor."""
    import uvicorn
    from starlette.applications import Starlette

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    agent = RfcAgent()
    agent_card = card(url + "/", extension_uri)
    handler = DefaultRequestHandler(agent, InMemoryTaskStore(), agent_card)
    app = Starlette(
        routes=[*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, "/")]
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        while not server.started:  # uvicorn offers only this flag
            threading.Event().wait(0.01)
        yield url, agent
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()
