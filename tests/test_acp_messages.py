"""The panel's models of ACP's messages (agent/acp/messages.py) side by side with the
official package's schema (``acp.schema``) they stand in for: each message is taken
or refused alike, and what the panel reads of a message taken is the same."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from acp import schema
from gemini_companion.agent.acp import messages
from pydantic import BaseModel, ValidationError

S = "s-1"
TEXT = {"type": "text", "text": "hi"}
DIFF = {"type": "diff", "path": "/w/a.py", "oldText": "a\n", "newText": "b\n"}


def _update(body: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": S, "update": body}


def _call(**fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit a.py", **fields}


def _progress(**fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": "t1", **fields}


def _permission(tool_call: Any, options: Any = None) -> dict[str, Any]:
    if options is None:
        options = [
            {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
            {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
        ]
    return {"sessionId": S, "toolCall": tool_call, "options": options}


# (model name, message): what Gemini CLI 0.61.0 sends, the protocol's other shapes,
# its leniency (malformed optional fields, malformed list items) and malformed ones.
CORPUS: list[tuple[str, Any]] = [
    *[
        ("SessionNotification", _update({"sessionUpdate": kind, "content": content}))
        for kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk")
        for content in (
            TEXT,
            {"type": "text", "text": "x", "annotations": {"priority": "high"}, "_meta": 3},
            {"type": "text"},
            {"type": "text", "text": 5},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "image", "data": "AAAA"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "name": "a.py", "uri": "file:///w/a.py", "size": "big"},
            {"type": "resource_link", "uri": "file:///w/a.py"},
            {"type": "resource", "resource": {"uri": "file:///w/a.py", "text": "x = 1"}},
            {"type": "resource", "resource": {"uri": "file:///w/a.bin", "blob": "AAAA"}},
            {"type": "resource", "resource": {"uri": "file:///w/a.py"}},
            {"type": "video", "data": "AAAA"},
            "just text",
            None,
        )
    ],
    ("SessionNotification", _update({"sessionUpdate": "agent_message_chunk"})),
    (
        "SessionNotification",
        _update({"sessionUpdate": "agent_message_chunk", "content": TEXT})
        | {"_meta": "not an object"},
    ),
    ("SessionNotification", {"update": {"sessionUpdate": "agent_message_chunk", "content": TEXT}}),
    (
        "SessionNotification",
        {"session_id": S, "update": {"session_update": "agent_message_chunk", "content": TEXT}},
    ),
    ("SessionNotification", _update(_call())),
    (
        "SessionNotification",
        _update(
            _call(
                kind="edit",
                status="pending",
                content=[DIFF],
                locations=[{"path": "/w/a.py", "line": 3}],
            )
        ),
    ),
    (
        "SessionNotification",
        _update(_call(kind="bake", status="stirring", rawInput={"a": 1}, rawOutput=[1])),
    ),
    (
        "SessionNotification",
        _update(
            _call(
                content=[
                    DIFF,
                    {"type": "diff", "path": "/w/b"},
                    {"type": "terminal", "terminalId": "t"},
                    {"type": "content", "content": TEXT},
                    {"type": "content", "content": {}},
                    7,
                ]
            )
        ),
    ),
    ("SessionNotification", _update(_call(content={"type": "content", "content": TEXT}))),
    ("SessionNotification", _update(_call(content=[{**DIFF, "oldText": 5}]))),
    (
        "SessionNotification",
        _update(_call(locations=[{"path": "/w/a", "line": -1}, {"line": 2}, {"path": "/w/c"}])),
    ),
    ("SessionNotification", _update(_call(locations="/w/a"))),
    ("SessionNotification", _update({"sessionUpdate": "tool_call", "toolCallId": "t1"})),
    ("SessionNotification", _update(_call(title=None))),
    ("SessionNotification", _update(_progress())),
    (
        "SessionNotification",
        _update(
            _progress(status="completed", title=7, content=[{"type": "content", "content": TEXT}])
        ),
    ),
    ("SessionNotification", _update(_progress(status="in_progress", kind="execute"))),
    ("SessionNotification", _update({"sessionUpdate": "tool_call_update"})),
    (
        "SessionNotification",
        _update(
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "Read", "priority": "high", "status": "completed"},
                    {"content": "Write", "priority": "low", "status": "in_progress"},
                    {"content": "Bad", "priority": "urgent", "status": "pending"},
                    {"content": "No status", "priority": "low"},
                ],
            }
        ),
    ),
    ("SessionNotification", _update({"sessionUpdate": "plan"})),
    ("SessionNotification", _update({"sessionUpdate": "plan", "entries": "all of it"})),
    (
        "SessionNotification",
        _update(
            {
                "sessionUpdate": "available_commands_update",
                "availableCommands": [
                    {"name": "memory", "description": "Manage memory."},
                    {"name": "init", "description": "x", "input": 5},
                    {"name": "nodescription"},
                ],
            }
        ),
    ),
    ("SessionNotification", _update({"sessionUpdate": "available_commands_update"})),
    (
        "SessionNotification",
        _update({"sessionUpdate": "current_mode_update", "currentModeId": "yolo"}),
    ),
    ("SessionNotification", _update({"sessionUpdate": "current_mode_update"})),
    (
        "SessionNotification",
        _update({"sessionUpdate": "session_info_update", "title": "T", "updatedAt": 5}),
    ),
    ("SessionNotification", _update({"sessionUpdate": "session_info_update", "title": ["T"]})),
    ("SessionNotification", _update({"sessionUpdate": "usage_update", "used": 1, "size": 2})),
    ("SessionNotification", _update({"sessionUpdate": "no_such_update"})),
    ("SessionNotification", _update("agent_message_chunk")),
    ("SessionNotification", "not an object"),
    (
        "RequestPermissionRequest",
        _permission(
            {
                "toolCallId": "t1",
                "title": "Edit a.py",
                "kind": "edit",
                "content": [DIFF],
                "locations": [{"path": "/w/a.py"}],
            }
        ),
    ),
    (
        "RequestPermissionRequest",
        _permission(
            {
                "toolCallId": "t2",
                "title": "ls -la",
                "kind": "execute",
                "content": [
                    {
                        "type": "content",
                        "content": {
                            "type": "text",
                            "text": "[current working directory /w] (list)",
                        },
                    }
                ],
            }
        ),
    ),
    ("RequestPermissionRequest", _permission({"toolCallId": "t1", "kind": 9, "status": "x"})),
    ("RequestPermissionRequest", _permission({"title": "no id"})),
    ("RequestPermissionRequest", _permission({"toolCallId": "t1"}, [{"optionId": "a"}])),
    (
        "RequestPermissionRequest",
        _permission(
            {"toolCallId": "t1"}, [{"optionId": "a", "name": "A", "kind": "allow_sometimes"}]
        ),
    ),
    ("RequestPermissionRequest", _permission({"toolCallId": "t1"}, "allow")),
    ("RequestPermissionRequest", {"sessionId": S, "toolCall": {"toolCallId": "t1"}}),
    ("ReadTextFileRequest", {"sessionId": S, "path": "/w/a.py"}),
    ("ReadTextFileRequest", {"sessionId": S, "path": "/w/a.py", "line": 3, "limit": 10}),
    ("ReadTextFileRequest", {"sessionId": S, "path": "/w/a.py", "line": -3, "limit": "ten"}),
    ("ReadTextFileRequest", {"sessionId": S, "path": "/w/a.py", "line": "3"}),
    ("ReadTextFileRequest", {"sessionId": S}),
    ("ReadTextFileRequest", {"sessionId": S, "path": 5}),
    ("WriteTextFileRequest", {"sessionId": S, "path": "/w/a.py", "content": "x\n"}),
    ("WriteTextFileRequest", {"sessionId": S, "path": "/w/a.py"}),
    ("WriteTextFileRequest", {"sessionId": S, "path": "/w/a.py", "content": None}),
    ("WriteTextFileRequest", {"path": "/w/a.py", "content": ""}),
    (
        "InitializeResponse",
        {
            "protocolVersion": 1,
            "authMethods": [
                {"id": "oauth-personal", "name": "Log in with Google"},
                {"id": "gemini-api-key", "name": "Use Gemini API key"},
                5,
            ],
            "agentInfo": {"name": "gemini-cli", "title": "Gemini CLI", "version": "0.61.0"},
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
            },
        },
    ),
    ("InitializeResponse", {"protocolVersion": 1}),
    ("InitializeResponse", {"protocolVersion": "1"}),
    ("InitializeResponse", {"protocolVersion": 70000}),
    ("InitializeResponse", {"protocolVersion": -1}),
    ("InitializeResponse", {}),
    (
        "InitializeResponse",
        {"protocolVersion": 1, "agentInfo": {"name": "no version"}, "agentCapabilities": "all"},
    ),
    ("InitializeResponse", {"protocolVersion": 1, "authMethods": "oauth"}),
    ("InitializeResponse", {"protocolVersion": 1, "authMethods": None}),
]


# Taken or refused alike, but read from the message itself (handshake.py).
NOT_READ = {"auth_methods"}


def _read(mine: Any, theirs: Any) -> tuple[Any, Any]:
    """What the panel can read of a message: the fields of ours, from both."""
    if isinstance(mine, BaseModel):
        assert type(mine).__name__ == type(theirs).__name__
        fields = [f for f in type(mine).model_fields if f not in NOT_READ]
        pairs = [_read(getattr(mine, f), getattr(theirs, f)) for f in fields]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    if isinstance(mine, list):
        assert isinstance(theirs, list) and len(mine) == len(theirs)
        pairs = [_read(a, b) for a, b in zip(mine, theirs, strict=True)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return mine, theirs


@pytest.mark.parametrize(("name", "message"), CORPUS)
def test_each_message_is_taken_or_refused_as_the_acp_schema_does_and_reads_the_same(
    name: str, message: Any
) -> None:
    def validate(model: type[BaseModel]) -> Any:
        try:
            return model.model_validate(copy.deepcopy(message))
        except ValidationError:
            return None

    mine = validate(getattr(messages, name))
    theirs = validate(getattr(schema, name))
    if mine is not None and isinstance(getattr(mine, "update", None), messages.OtherUpdate):
        # The kinds the panel shows nothing for: taken without their bodies (the
        # schema may refuse a malformed one; the panel ignores it either way).
        return
    assert (mine is None) == (theirs is None), (mine, theirs)
    if mine is not None:
        ours, official = _read(mine, theirs)
        assert ours == official


def test_the_panels_models_hold_every_field_of_the_schemas_it_reads_or_one_it_never_refuses() -> (
    None
):
    """A field of the schema's model not in ours is one whose malformed value the
    protocol salvages ("default on error"): no message is refused for it, so leaving
    it out refuses nothing more."""
    for name, mine in vars(messages).items():
        if not (isinstance(mine, type) and issubclass(mine, BaseModel)):
            continue
        if mine.__module__ != messages.__name__ or name in ("BaseModel", "OtherUpdate"):
            continue
        theirs = getattr(schema, name)
        salvaged = {"field_meta"}
        for decorator in theirs.__pydantic_decorators__.field_validators.values():
            if "salvage" in decorator.cls_var_name:
                salvaged |= set(decorator.info.fields)
        for field, info in theirs.model_fields.items():
            if field in mine.model_fields:
                assert mine.model_fields[field].alias == info.alias, (name, field)
                assert mine.model_fields[field].is_required() == info.is_required(), (name, field)
            else:
                assert field in salvaged, (name, field)
        assert set(mine.model_fields) <= set(theirs.model_fields), name
