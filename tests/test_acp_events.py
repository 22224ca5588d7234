"""ACP session updates as the panel's events (agent/acp/events.py), without a process:
the shapes Gemini CLI 0.61.0 sends (client-behaviour.md, "ACP") and the other kinds
of the schema, validated by the panel's models as the transport does (messages.py,
held against the official package's schema by test_acp_messages.py)."""

from __future__ import annotations

from typing import Any

import pytest
from acp import schema as acp_schema
from gemini_companion.agent.acp import messages as schema
from gemini_companion.agent.acp.client_requests import plain_text_chunk
from gemini_companion.agent.acp.events import (
    PLAN_CALL_ID,
    UpdateTranslator,
    commands_of,
    prompt_blocks,
)
from gemini_companion.agent.mcp_servers import acp_mcp_server
from gemini_companion.agent.model import (
    CommandsUpdate,
    MessageChunk,
    Prompt,
    Reference,
    SessionUpdate,
    ThoughtChunk,
    ToolCallUpdate,
)
from pydantic import ValidationError

SESSION = "s-1"


def update(body: dict[str, Any]) -> Any:
    return schema.SessionNotification.model_validate({"sessionId": SESSION, "update": body}).update


def text(kind: str, value: str) -> Any:
    return update({"sessionUpdate": kind, "content": {"type": "text", "text": value}})


def test_message_and_thought_chunks() -> None:
    t = UpdateTranslator()
    assert t.translate(text("agent_message_chunk", "Hello ")) == [MessageChunk("Hello ")]
    assert t.translate(text("agent_thought_chunk", "**Planning**\nI think")) == [
        ThoughtChunk("I think", subject="Planning")
    ]
    assert t.translate(text("agent_thought_chunk", "no subject")) == [ThoughtChunk("no subject")]


def test_gemini_clis_mode_announcement_is_a_mode_change_not_text() -> None:
    t = UpdateTranslator()
    assert t.translate(text("agent_message_chunk", "[MODE_UPDATE] autoEdit")) == [
        SessionUpdate({"mode": "autoEdit"})
    ]
    mode = update({"sessionUpdate": "current_mode_update", "currentModeId": "plan"})
    assert t.translate(mode) == [SessionUpdate({"mode": "plan"})]


def test_a_tool_call_is_one_call_updated_in_place_with_its_diff() -> None:
    t = UpdateTranslator()
    start = update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "status": "in_progress",
            "title": "Reading notes.txt",
            "kind": "read",
            "locations": [{"path": "/w/notes.txt", "line": 3}],
        }
    )
    [first] = t.translate(start)
    assert isinstance(first, ToolCallUpdate)
    assert first.call.status == "executing"
    assert first.call.locations == ("/w/notes.txt:3",)
    done = update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "completed",
            "content": [
                {"type": "diff", "path": "/w/notes.txt", "oldText": "a\n", "newText": "b\n"}
            ],
        }
    )
    [second] = t.translate(done)
    assert isinstance(second, ToolCallUpdate)
    assert second.call.id == "c1"
    assert second.call.title == "Reading notes.txt"  # kept from the start
    assert second.call.status == "succeeded"
    assert second.call.result is not None
    assert "-a" in second.call.result and "+b" in second.call.result
    failed = update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "failed",
            "content": [{"type": "content", "content": {"type": "text", "text": "boom"}}],
        }
    )
    [third] = t.translate(failed)
    assert isinstance(third, ToolCallUpdate)
    assert third.call.error == "boom"


def test_permission_requests_become_confirmations_of_the_right_kind() -> None:
    t = UpdateTranslator()
    options = [
        schema.PermissionOption.model_validate(o)
        for o in (
            {
                "optionId": "proceed_always",
                "name": "Allow for this session",
                "kind": "allow_always",
            },
            {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
            {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
        )
    ]
    edit = schema.ToolCallUpdate.model_validate(
        {
            "toolCallId": "w1",
            "status": "pending",
            "title": "Writing to notes.txt",
            "kind": "edit",
            "content": [
                {"type": "diff", "path": "/w/notes.txt", "oldText": "old\n", "newText": "new\n"}
            ],
        }
    )
    call = t.permission(edit, options)
    assert call.confirmation is not None
    assert call.confirmation.kind == "edit"
    assert call.confirmation.file_path == "/w/notes.txt"
    assert call.confirmation.new_content == "new\n"
    assert call.confirmation.option(None).id == "proceed_once"  # type: ignore[union-attr]
    assert call.confirmation.option(None, reject=True).id == "cancel"  # type: ignore[union-attr]
    shell = schema.ToolCallUpdate.model_validate(
        {
            "toolCallId": "x1",
            "status": "pending",
            "title": "rm -rf build",
            "kind": "execute",
            "content": [
                {
                    "type": "content",
                    "content": {"type": "text", "text": "[current working directory /w] (clean)"},
                }
            ],
        }
    )
    conf = t.permission(shell, options).confirmation
    assert conf is not None
    assert (conf.kind, conf.command, conf.directory, conf.description) == (
        "exec",
        "rm -rf build",
        "/w",
        "clean",
    )


def test_slash_commands_nest_their_sub_commands() -> None:
    available = [
        schema.AvailableCommand(name="memory", description="Manage memory."),
        schema.AvailableCommand(name="memory show", description="Shows memory."),
        schema.AvailableCommand(name="init", description="Analyzes the project"),
    ]
    commands = commands_of(available)
    names = [n for c in commands for n in c.names()]
    assert names == ["memory", "memory show", "init"]
    event = UpdateTranslator().translate(
        update(
            {
                "sessionUpdate": "available_commands_update",
                "availableCommands": [{"name": "about", "description": "About"}],
            }
        )
    )
    assert isinstance(event[0], CommandsUpdate)
    assert event[0].commands[0].name == "about"


def test_a_plan_is_one_block_updated_in_place() -> None:
    t = UpdateTranslator()
    entries = [
        {"content": "read", "priority": "high", "status": "completed"},
        {"content": "write", "priority": "low", "status": "pending"},
    ]
    [first] = t.translate(update({"sessionUpdate": "plan", "entries": entries}))
    assert isinstance(first, ToolCallUpdate)
    assert first.call.id == PLAN_CALL_ID
    assert first.call.live_output == "[x] read\n[ ] write"
    entries[1]["status"] = "completed"
    [second] = t.translate(update({"sessionUpdate": "plan", "entries": entries}))
    assert isinstance(second, ToolCallUpdate)
    assert second.call.status == "succeeded"


def test_kinds_the_panel_does_not_show_are_ignored() -> None:
    usage = update({"sessionUpdate": "usage_update", "used": 10, "size": 100})
    assert UpdateTranslator().translate(usage) == []


def test_references_become_resource_links_or_embedded_lines() -> None:
    prompt = Prompt(
        "explain",
        (
            Reference("/w/a.py"),
            Reference("/w/b.py", 3, 5, "x = 1\ny = 2\nz = 3\n"),
        ),
    )
    blocks = prompt_blocks(prompt, embedded_context=True)
    assert blocks[0] == {"type": "text", "text": "explain"}
    assert blocks[1] == {"type": "resource_link", "uri": "file:///w/a.py", "name": "a.py"}
    # The CLI joins text blocks and a resource's "@uri" as they come: a separator
    # keeps the user's last word apart from the attachment (issue 32).
    assert blocks[2] == {"type": "text", "text": "\n"}
    assert blocks[3]["type"] == "resource"
    assert blocks[3]["resource"]["uri"] == "file:///w/b.py#L3-5"
    assert blocks[3]["resource"]["text"] == "x = 1\ny = 2\nz = 3\n"
    without = prompt_blocks(prompt, embedded_context=False)
    assert without[2] == {
        "type": "text",
        "text": "\nContent from @/w/b.py#L3-5:\nx = 1\ny = 2\nz = 3\n",
    }
    # what the schema accepts, so the agent does too
    acp_schema.PromptRequest.model_validate({"sessionId": SESSION, "prompt": blocks})


def test_mcp_servers_in_either_shape() -> None:
    assert acp_mcp_server(
        {"name": "nvim", "httpUrl": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}}
    ) == {
        "type": "http",
        "name": "nvim",
        "url": "http://127.0.0.1:1/mcp",
        "headers": [{"name": "A", "value": "b"}],
    }
    assert acp_mcp_server({"name": "s", "command": "srv", "args": ["-x"]}) == {
        "name": "s",
        "command": "srv",
        "args": ["-x"],
        "env": [],
    }
    assert acp_mcp_server({"url": "http://x"}) is None


CHUNK_SHAPES: list[dict[str, Any]] = [
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "plain"}},
    {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "**S**\nt"}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""}},
    {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "[MODE_UPDATE] plan"},
    },
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "m"}, "_meta": {}},
    {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "m", "_meta": None},
    },
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "m", "_meta": 3}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 5}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "text": "m"}},
    {"sessionUpdate": "agent_message_chunk", "content": {"text": "m"}},
    {"sessionUpdate": "agent_message_chunk", "content": "m"},
    {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "m", "annotations": {"priority": 0.5}},
    },
    {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "m", "annotations": {"priority": "high"}},
    },
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "m"}, "x": 1},
    {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "m"}},
]


@pytest.mark.parametrize("body", CHUNK_SHAPES)
@pytest.mark.parametrize("meta", [None, {"k": 1}, "bad"])
def test_a_text_chunk_read_without_the_schemas_models_means_what_they_say_it_means(
    body: dict[str, Any], meta: Any
) -> None:
    """The stream's fast path (client_requests.py) takes only the chunks the schema
    takes as they are; whatever it leaves, the models validate, and the panel sees
    the same events either way (a chunk the schema refuses is ignored)."""
    params: dict[str, Any] = {"sessionId": SESSION, "update": body}
    if meta is not None:
        params["_meta"] = meta
    try:
        by_models = UpdateTranslator().translate(
            schema.SessionNotification.model_validate(params).update
        )
    except ValidationError:
        by_models = []
    chunk = plain_text_chunk(params)
    if chunk is not None:
        assert UpdateTranslator().text_chunk(*chunk) == by_models
    plain = {"sessionId": SESSION, "update": CHUNK_SHAPES[0]}
    assert plain_text_chunk(plain) == ("agent_message_chunk", "plain")


class _Editor:
    def __init__(self) -> None:
        self.batches: list[list[dict[str, Any]]] = []

    def publish_state(self, state: Any) -> None:
        pass

    def notify(self, message: str, level: int = 2) -> None:
        pass

    def agent_draw(self, ops: list[dict[str, Any]]) -> Any:
        import concurrent.futures

        self.batches.append(list(ops))
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(None)
        return future


@pytest.mark.parametrize("body", CHUNK_SHAPES)
@pytest.mark.parametrize("meta", [None, {"k": 1}, "bad"])
@pytest.mark.parametrize("session_id", [SESSION, "another session"])
def test_a_chunk_the_transport_takes_draws_what_the_schemas_events_draw(
    body: dict[str, Any], meta: Any, session_id: str
) -> None:
    """The transport's straight path for a plain message chunk (no event built,
    client_requests.py) leaves the session's transcript, its state and the panel's
    batches as the schema's events do, after a message under way and after a
    thought; a chunk for another session changes nothing."""
    import asyncio

    from gemini_companion.agent.acp.transport import AcpTransport
    from gemini_companion.agent.session import AgentSession
    from gemini_companion.agent.transport import TransportContext
    from gemini_companion.agent.view import PanelView

    params: dict[str, Any] = {"sessionId": session_id, "update": body}
    if meta is not None:
        params["_meta"] = meta
    try:
        events = UpdateTranslator().translate(
            schema.SessionNotification.model_validate(params).update
        )
    except ValidationError:
        events = []
    if session_id != SESSION:
        events = []
    options = {"cmd": ["gemini", "--acp"], "env": {}, "startup_timeout": 1, "cancel_timeout": 1}

    async def seen(through_transport: bool) -> Any:
        editor = _Editor()
        transport = AcpTransport(
            TransportContext(workspace="/w", env={}, editor=editor, options=options)  # type: ignore[arg-type]
        )
        session = AgentSession(transport, PanelView(editor))  # type: ignore[arg-type]
        state = transport._session
        state.id, state.updates, state.events = SESSION, UpdateTranslator(), session
        for before in (MessageChunk("under way "), ThoughtChunk("a thought")):
            session.emit(before)
            if through_transport:
                transport._on_update(params)
            else:
                for event in events:
                    session.emit(event)
        await session.view.drained()
        blocks = [(b.kind, b.text) for b in session.transcript.blocks]
        return blocks, session.info, _numbered(editor.batches)

    assert asyncio.run(seen(True)) == asyncio.run(seen(False))


def _numbered(batches: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """The batches with block ids numbered from 1 in the order they appear, and no
    conversation id: each session's are its own (unique in the process)."""
    ids: dict[int, int] = {}
    out = []
    for batch in batches:
        ops = []
        for sent in batch:
            op = dict(sent)
            if "id" in op and op["op"] in ("block", "append"):
                op["id"] = ids.setdefault(op["id"], len(ids) + 1)
            if op["op"] == "state":
                op["state"] = {k: v for k, v in op["state"].items() if k != "conversation"}
            ops.append(op)
        out.append(ops)
    return out
