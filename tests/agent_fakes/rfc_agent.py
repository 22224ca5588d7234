"""An A2A agent that speaks the development-tool extension as the RFC writes it
(a2a-development-tool-extension.md), built on a2a-sdk's server side, for the
transport's tests: metadata keyed by the extension URI, upper-case kinds, the flat
``ToolCall`` through PENDING (with options) -> EXECUTING -> SUCCEEDED, the
client's ``ToolCallConfirmation`` checked on arrival, and the extension's own
JSON-RPC methods ``commands/get`` and ``command/execute`` (which a2a-sdk does not
know: a small ASGI layer in front of its JSON-RPC route answers them).

Prompts (the last word decides): ``shell`` asks to run a command; ``edit <path>``
asks to write a file and writes whatever content the answer carries
(``file_details``); ``mcp`` asks for an MCP tool (server and tool, four options);
``info`` asks a generic confirmation (a description with a URL); ``several`` asks
all three at once (MCP, info, shell, in that order); ``drop pending`` /
``drop asking`` / ``drop ended`` / ``drop working`` drop the SSE connection
mid-task (after a PENDING tool call; before one; before a text and the end;
before a text that waits for the client to resubscribe); anything else gets a
thought and a text answer. Each turn ends ``input-required`` (waiting for answers) or ``completed``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import uuid
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2 as pb
from gemini_companion.agent.a2a.devtool import EXTENSION_URI
from google.protobuf import json_format

OPTIONS = [
    {"id": "proceed_once", "name": "Allow once"},
    {"id": "proceed_always", "name": "Allow always"},
    {"id": "cancel", "name": "Reject"},
]
MCP_OPTIONS = [
    {"id": "proceed_always_server", "name": "Always allow every tool of nvim"},
    {"id": "proceed_always_tool", "name": "Always allow getDiagnostics"},
    {"id": "proceed_once", "name": "Allow once"},
    {"id": "cancel", "name": "Reject"},
]
INFO_OPTIONS = [
    {"id": "proceed_once", "name": "Fetch it"},
    {"id": "cancel", "name": "Do not fetch"},
]
MCP_CALL = {
    "tool_call_id": "mcp-1",
    "status": "PENDING",
    "tool_name": "getDiagnostics",
    "description": "Read the diagnostics of main.py",
    "input_parameters": {"path": "main.py"},
    "confirmation_request": {
        "options": MCP_OPTIONS,
        "mcp_details": {"server_name": "nvim", "tool_name": "getDiagnostics"},
    },
}
INFO_CALL = {
    "toolCallId": "info-1",  # the other proto3 JSON spelling
    "status": "PENDING",
    "toolName": "WebFetch",
    "description": "Fetch a page",
    "confirmationRequest": {
        "options": INFO_OPTIONS,
        "genericDetails": {"description": "Fetch https://example.com/docs and summarise it"},
    },
}
COMMANDS = [
    {
        "name": "memory",
        "description": "Manage the agent's memory",
        "sub_commands": [
            {"name": "show", "description": "Show the memory"},
            {
                "name": "add",
                "description": "Add a fact to the memory",
                "arguments": [{"name": "fact", "description": "what", "is_required": True}],
            },
        ],
    },
    {
        "name": "restore",
        "description": "Restore a checkpoint (asks first)",
        "arguments": [{"name": "checkpoint", "description": "which", "is_required": True}],
    },
]
COMMAND_KEY = "fake-command"  # the fake's own: a command's task carries its path and args


def shell_call(call_id: str, command: str) -> dict[str, Any]:
    return {
        "tool_call_id": call_id,
        "status": "PENDING",
        "tool_name": "ShellTool",
        "description": "List the files",
        "input_parameters": {"command": command},
        "confirmation_request": {
            "options": OPTIONS,
            "execute_details": {"command": command, "working_directory": "/w"},
        },
    }


def call_id_of(call: dict[str, Any]) -> str:
    return str(call.get("tool_call_id") or call["toolCallId"])


def options_of(call: dict[str, Any]) -> list[dict[str, Any]]:
    request = call.get("confirmation_request") or call.get("confirmationRequest") or {}
    return list(request["options"])


class Dropper:
    """ASGI layer in front of a2a-sdk's app: answers the extension's own methods,
    and aborts a streaming response right after the chunk that carries ``marker``
    (the connection is lost, the task goes on: what a dropped network does)."""

    def __init__(self, app: Any, agent: RfcAgent) -> None:
        self.app = app
        self.agent = agent

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and payload.get("method") in (
            "commands/get",
            "command/execute",
        ):
            await self._extension(payload, send)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def sending(message: Any) -> None:
            await send(message)
            marker = self.agent.drop_marker
            if (
                marker
                and message["type"] == "http.response.body"
                and marker.encode() in message.get("body", b"")
            ):
                self.agent.drop_marker = ""
                self.agent.drops += 1
                raise ConnectionAbortedError("the fake drops the connection")

        await self.app(scope, replay, sending)

    async def _extension(self, payload: dict[str, Any], send: Any) -> None:
        params = payload.get("params") or {}
        self.agent.extension_calls.append((payload["method"], params))
        if payload["method"] == "commands/get":
            result: dict[str, Any] = {"commands": COMMANDS}
        else:
            result = await self.agent.execute_command(
                list(params.get("command_path") or params.get("commandPath") or []),
                str(params.get("args") or ""),
            )
        body = json.dumps({"jsonrpc": "2.0", "id": payload.get("id"), "result": result}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


class Handler(DefaultRequestHandler):
    """a2a-sdk's handler that also tells the agent when a client has resubscribed
    (after the first event went out: the subscriber's tap is in place by then)."""

    def __init__(self, agent: RfcAgent, *args: Any) -> None:
        super().__init__(agent, *args)
        self.agent = agent

    async def on_subscribe_to_task(  # type: ignore[override]
        self, params: pb.SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        self.agent.subscriptions.append(params.id)
        first = True
        async for event in super().on_subscribe_to_task(params, context):
            yield event
            if first:
                first = False
                self.agent.subscribed(params.id)


class RfcAgent(AgentExecutor):
    def __init__(self) -> None:
        self.confirmations: list[dict[str, Any]] = []
        self.cancels: list[str] = []  # the ids of the tasks cancelled
        self.settings: list[dict[str, Any]] = []
        self.pending: dict[str, dict[str, Any]] = {}  # call id -> the ToolCall asked
        self.extension_calls: list[tuple[str, dict[str, Any]]] = []
        self.commands_run: list[tuple[list[str], str]] = []
        self.memory: list[str] = []
        self.subscriptions: list[str] = []
        self.drop_marker = ""
        self.drops = 0
        self.handler: Handler | None = None
        self._subscribed: dict[str, asyncio.Event] = {}

    def _subscription(self, task_id: str) -> asyncio.Event:
        return self._subscribed.setdefault(task_id, asyncio.Event())

    def subscribed(self, task_id: str) -> None:
        self._subscription(task_id).set()

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
        metadata = {EXTENSION_URI: {"kind": kind, "model": "fake"}}
        await queue.enqueue_event(status_event(context, state, metadata, text=text, data=data))

    async def _text(self, queue: EventQueue, context: RequestContext, text: str) -> None:
        await self._status(
            queue, context, pb.TaskState.TASK_STATE_WORKING, "TEXT_CONTENT", text=text
        )

    async def _done(self, queue: EventQueue, context: RequestContext) -> None:
        await self._status(queue, context, pb.TaskState.TASK_STATE_COMPLETED, "STATE_CHANGE")

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
        if COMMAND_KEY in metadata:
            await self._command(context, event_queue, metadata[COMMAND_KEY])
            return
        if EXTENSION_URI in metadata:
            self.settings.append(metadata[EXTENSION_URI])
        await self._status(event_queue, context, working, "STATE_CHANGE")
        for part in message.parts:
            if part.HasField("data"):
                answer = json_format.MessageToDict(part)["data"]
                await self._answered(context, event_queue, answer)
                return
        text = " ".join(p.text for p in message.parts if p.text)
        last = text.split()[-1] if text.split() else ""
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
        elif text.startswith("drop "):
            await self._drop(context, event_queue, last)
        elif last in ("shell", "mcp", "info", "several"):
            calls = {
                "shell": [shell_call("sh-1", "ls -la")],
                "mcp": [MCP_CALL],
                "info": [INFO_CALL],
                "several": [MCP_CALL, INFO_CALL, shell_call("sh-1", "ls -la")],
            }[last]
            await self._ask(context, event_queue, *calls)
        else:
            await self._status(
                event_queue,
                context,
                working,
                "THOUGHT",
                data={"subject": "Considering", "description": "what to say"},
            )
            await self._text(event_queue, context, "RFC hello")
            await self._done(event_queue, context)

    async def _drop(self, context: RequestContext, queue: EventQueue, how: str) -> None:
        """The stream is cut (``Dropper``) right after the event carrying the marker;
        the task itself goes on."""
        if how == "pending":
            self.drop_marker = "sh-drop"
            await self._ask(context, queue, shell_call("sh-drop", "make test"))
            return
        if how == "asking":  # the client learns of the call from the task alone
            self.drop_marker = "Let me run the tests."
            await self._text(queue, context, "Let me run the tests.")
            await self._status(
                queue,
                context,
                pb.TaskState.TASK_STATE_WORKING,
                "THOUGHT",
                data={"subject": "Planning", "description": "run the tests"},
            )
            await self._ask(context, queue, shell_call("sh-drop", "make test"))
            return
        self.drop_marker = "Before the drop."
        await self._text(queue, context, "Before the drop.")
        if how == "working":
            # Live again only once the client has come back for the task.
            await self._subscription(context.task_id or "").wait()
            await self._text(queue, context, "After the drop.")
        else:
            await self._text(queue, context, "While you were away.")
        await self._done(queue, context)

    async def _ask(
        self, context: RequestContext, queue: EventQueue, *calls: dict[str, Any]
    ) -> None:
        for call in calls:
            self.pending[call_id_of(call)] = call
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
        if call is None or option not in {o["id"] for o in options_of(call)}:
            await self._status(
                queue,
                context,
                pb.TaskState.TASK_STATE_FAILED,
                "STATE_CHANGE",
                text=f"bad confirmation {answer}",
            )
            return
        # The whole ToolCall on every update (the RFC), without the question now.
        asked = ("status", "confirmation_request", "confirmationRequest")
        base = {key: value for key, value in call.items() if key not in asked}
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
            output = f"done ({option})"
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
        if self.pending:  # others still wait for the user
            await self._status(
                queue, context, pb.TaskState.TASK_STATE_INPUT_REQUIRED, "STATE_CHANGE"
            )
            return
        await self._text(queue, context, "After the tool.")
        await self._done(queue, context)

    # -- slash commands ----------------------------------------------------------------

    async def execute_command(self, path: list[str], args: str) -> dict[str, Any]:
        """``command/execute``: a task runs the command; its events stream to the
        client that subscribes to ``execution_id``."""
        self.commands_run.append((path, args))
        known = {
            " ".join([c["name"], s["name"]]) for c in COMMANDS for s in c.get("sub_commands", [])
        }
        known |= {c["name"] for c in COMMANDS}
        name = " ".join(path)
        if name not in known:
            return {"status": "FAILED_TO_START", "message": f"unknown command /{name}"}
        assert self.handler is not None
        message = pb.Message(message_id=str(uuid.uuid4()), role=pb.Role.ROLE_USER)
        message.parts.add(text=f"/{name} {args}".strip())
        json_format.ParseDict({COMMAND_KEY: {"path": path, "args": args}}, message.metadata)
        task = await self.handler.on_message_send(
            pb.SendMessageRequest(
                message=message, configuration=pb.SendMessageConfiguration(return_immediately=True)
            ),
            ServerCallContext(),
        )
        assert isinstance(task, pb.Task)
        # /restore asks first: the RFC's status for a command paused on a shell command.
        status = "AWAITING_SHELL_CONFIRMATION" if name == "restore" else "STARTED"
        return {"execution_id": task.id, "status": status}

    async def _command(
        self, context: RequestContext, queue: EventQueue, command: dict[str, Any]
    ) -> None:
        # The client subscribes after command/execute answered: wait for it, so it
        # sees every event (a real agent would keep them in the task's history).
        await self._subscription(context.task_id or "").wait()
        await self._status(queue, context, pb.TaskState.TASK_STATE_WORKING, "STATE_CHANGE")
        name, args = " ".join(command["path"]), str(command.get("args") or "")
        if name == "memory show":
            facts = "\n".join(f"- {fact}" for fact in self.memory) or "(empty)"
            await self._text(queue, context, f"Memory:\n{facts}")
        elif name == "memory add":
            self.memory.append(args)
            await self._text(queue, context, f"Remembered: {args}")
        elif name == "restore":
            await self._ask(context, queue, shell_call("restore-1", f"git checkout {args}"))
            return
        else:
            await self._text(queue, context, f"/{name} needs a sub-command")
        await self._done(queue, context)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.cancels.append(str(context.task_id))
        await self._status(event_queue, context, pb.TaskState.TASK_STATE_CANCELED, "STATE_CHANGE")


def status_event(
    context: RequestContext,
    state: int,
    metadata: dict[str, Any],
    *,
    text: str | None = None,
    data: dict[str, Any] | None = None,
) -> pb.TaskStatusUpdateEvent:
    """A status update of ``context``'s task in ``state``, its message holding ``text``
    and ``data`` (each a part when given), with ``metadata``."""
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
    json_format.ParseDict(metadata, event.metadata)
    return event


@contextmanager
def serving(app: Any, sock: socket.socket) -> Iterator[None]:
    """Serve the ASGI ``app`` on the bound ``sock`` in a thread for the block's span."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        while not server.started:  # uvicorn offers only this flag
            threading.Event().wait(0.01)
        yield
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()


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
def rfc_agent(
    extension_uri: str = EXTENSION_URI,
    *,
    card_url: str | None = None,
    rpc_path: str = "/",
    host: str = "127.0.0.1",
) -> Iterator[tuple[str, RfcAgent]]:
    """Serve the fake on ``host`` (a loopback address) in a thread; yields its URL and
    the executor. ``rpc_path``: where it answers JSON-RPC; ``card_url``: the URL its
    card names (by default its own, at ``rpc_path``)."""
    from starlette.applications import Starlette

    sock = socket.socket()
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    url = f"http://{host}:{port}"
    agent = RfcAgent()
    agent_card = card(card_url or url + rpc_path, extension_uri)
    handler = Handler(agent, InMemoryTaskStore(), agent_card)
    agent.handler = handler
    app = Starlette(
        routes=[*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, rpc_path)]
    )
    with serving(Dropper(app, agent), sock):
        yield url, agent


def main() -> None:
    """Serve the fake until killed, printing its URL (for trying the panel by hand)."""
    with rfc_agent() as (url, _):
        print(url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
