"""The ACP messages the panel reads from its agent, as pydantic models of our own.

The ``acp`` package's schema (``acp.schema``, v1.19) models the whole protocol: 280
models, 7.8 MiB of the host's memory for as long as the panel is open (issue 25
item 4), of which the panel reads these: a session's updates, a permission request,
a file read or write, and the answer to ``initialize``. Each class here has the
name and the fields of its twin in ``acp.schema`` (the code that reads them does
not change), and takes and refuses what its twin does
(tests/test_acp_messages.py holds them side by side), the protocol's leniency
included:

- a malformed optional field the protocol marks "default on error" reads as
  absent (:data:`_OR_NONE`) rather than refusing the message;
- a list the protocol marks "skip invalid items" loses its malformed items
  (:data:`_VALID_ITEMS`);
- ``_meta`` and the fields the panel never reads (annotations, MIME types, a
  command's input hint, raw output...) are not modelled: every value of them is
  accepted there too, so the same messages pass, and unknown keys are ignored.

Update kinds the panel shows nothing for (usage, config options, plan documents)
are taken by :class:`OtherUpdate` without their bodies: the panel ignores them
either way. JSON-RPC itself stays ``acp.connection``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel as _BaseModel
from pydantic import ConfigDict, Field, ValidationError, WrapValidator


def _or_none(value: Any, handler: Callable[[Any], Any]) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return None


def _valid_items(value: Any, handler: Callable[[Any], Any]) -> Any:
    if not isinstance(value, list):
        return handler(value)
    kept = []
    for item in value:
        try:
            kept.append(handler([item])[0])
        except ValidationError:
            continue
    return kept


_OR_NONE = WrapValidator(_or_none)
_VALID_ITEMS = WrapValidator(_valid_items)

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]
PermissionOptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
NonNegative = Annotated[int, Field(ge=0)]


class BaseModel(_BaseModel):
    model_config = ConfigDict(populate_by_name=True)


# -- content --------------------------------------------------------------------------


class TextContentBlock(BaseModel):
    type: Literal["text"]
    text: str


class ImageContentBlock(BaseModel):
    type: Literal["image"]
    data: str
    mime_type: str = Field(alias="mimeType")


class AudioContentBlock(BaseModel):
    type: Literal["audio"]
    data: str
    mime_type: str = Field(alias="mimeType")


class ResourceContentBlock(BaseModel):
    type: Literal["resource_link"]
    name: str
    uri: str


class TextResourceContents(BaseModel):
    uri: str
    text: str


class BlobResourceContents(BaseModel):
    uri: str
    blob: str


class EmbeddedResourceContentBlock(BaseModel):
    type: Literal["resource"]
    resource: TextResourceContents | BlobResourceContents


ContentBlock = Annotated[
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock,
    Field(discriminator="type"),
]


# -- tool calls -----------------------------------------------------------------------


class ContentToolCallContent(BaseModel):
    type: Literal["content"]
    content: ContentBlock


class FileEditToolCallContent(BaseModel):
    type: Literal["diff"]
    path: str
    old_text: Annotated[str | None, _OR_NONE] = Field(default=None, alias="oldText")
    new_text: str = Field(alias="newText")


class TerminalToolCallContent(BaseModel):
    type: Literal["terminal"]
    terminal_id: str = Field(alias="terminalId")


ToolCallContent = Annotated[
    ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent,
    Field(discriminator="type"),
]


class ToolCallLocation(BaseModel):
    path: str
    line: Annotated[NonNegative | None, _OR_NONE] = None


class ToolCallUpdate(BaseModel):
    """A tool call as a permission request names it, and the body of a
    ``tool_call_update``: only the id is required."""

    tool_call_id: str = Field(alias="toolCallId")
    title: Annotated[str | None, _OR_NONE] = None
    kind: Annotated[ToolKind | None, _OR_NONE] = None
    status: Annotated[ToolCallStatus | None, _OR_NONE] = None
    content: Annotated[list[ToolCallContent] | None, _VALID_ITEMS] = None
    locations: Annotated[list[ToolCallLocation] | None, _VALID_ITEMS] = None
    raw_input: Any = Field(default=None, alias="rawInput")


class PermissionOption(BaseModel):
    option_id: str = Field(alias="optionId")
    name: str
    kind: PermissionOptionKind


class AvailableCommand(BaseModel):
    name: str
    description: str


class PlanEntry(BaseModel):
    content: str
    priority: Literal["high", "medium", "low"]
    status: Literal["pending", "in_progress", "completed"]


# -- session updates ------------------------------------------------------------------


class UserMessageChunk(BaseModel):
    session_update: Literal["user_message_chunk"] = Field(alias="sessionUpdate")
    content: ContentBlock


class AgentMessageChunk(BaseModel):
    session_update: Literal["agent_message_chunk"] = Field(alias="sessionUpdate")
    content: ContentBlock


class AgentThoughtChunk(BaseModel):
    session_update: Literal["agent_thought_chunk"] = Field(alias="sessionUpdate")
    content: ContentBlock


class ToolCallStart(BaseModel):
    session_update: Literal["tool_call"] = Field(alias="sessionUpdate")
    tool_call_id: str = Field(alias="toolCallId")
    title: str
    kind: Annotated[ToolKind | None, _OR_NONE] = None
    status: Annotated[ToolCallStatus | None, _OR_NONE] = None
    content: Annotated[list[ToolCallContent] | None, _VALID_ITEMS] = None
    locations: Annotated[list[ToolCallLocation] | None, _VALID_ITEMS] = None
    raw_input: Any = Field(default=None, alias="rawInput")


class ToolCallProgress(ToolCallUpdate):
    session_update: Literal["tool_call_update"] = Field(alias="sessionUpdate")


class AgentPlanUpdate(BaseModel):
    session_update: Literal["plan"] = Field(alias="sessionUpdate")
    entries: Annotated[list[PlanEntry], _VALID_ITEMS]


class AvailableCommandsUpdate(BaseModel):
    session_update: Literal["available_commands_update"] = Field(alias="sessionUpdate")
    available_commands: Annotated[list[AvailableCommand], _VALID_ITEMS] = Field(
        alias="availableCommands"
    )


class CurrentModeUpdate(BaseModel):
    session_update: Literal["current_mode_update"] = Field(alias="sessionUpdate")
    current_mode_id: str = Field(alias="currentModeId")


class SessionInfoUpdate(BaseModel):
    session_update: Literal["session_info_update"] = Field(alias="sessionUpdate")
    title: Annotated[str | None, _OR_NONE] = None


_OtherKinds = Literal["usage_update", "config_option_update", "plan_update", "plan_removed"]


class OtherUpdate(BaseModel):
    """A kind of update the panel shows nothing for; its body is not read."""

    session_update: _OtherKinds = Field(alias="sessionUpdate")


class SessionNotification(BaseModel):
    session_id: str = Field(alias="sessionId")
    update: Annotated[
        UserMessageChunk
        | AgentMessageChunk
        | AgentThoughtChunk
        | ToolCallStart
        | ToolCallProgress
        | AgentPlanUpdate
        | AvailableCommandsUpdate
        | CurrentModeUpdate
        | SessionInfoUpdate
        | OtherUpdate,
        Field(discriminator="session_update"),
    ]


# -- the agent's requests -------------------------------------------------------------


class RequestPermissionRequest(BaseModel):
    session_id: str = Field(alias="sessionId")
    tool_call: ToolCallUpdate = Field(alias="toolCall")
    options: list[PermissionOption]


class ReadTextFileRequest(BaseModel):
    session_id: str = Field(alias="sessionId")
    path: str
    line: Annotated[NonNegative | None, _OR_NONE] = None
    limit: Annotated[NonNegative | None, _OR_NONE] = None


class WriteTextFileRequest(BaseModel):
    session_id: str = Field(alias="sessionId")
    path: str
    content: str


# -- the handshake --------------------------------------------------------------------


class Implementation(BaseModel):
    name: str
    version: str


class InitializeResponse(BaseModel):
    """What the panel reads of ``initialize``'s answer (capabilities and login
    methods it reads from the message itself: the schema salvages or skips what is
    malformed in them, so it refuses no answer for them)."""

    protocol_version: int = Field(alias="protocolVersion", ge=0, le=65535)
    # A list or null (its malformed items are skipped: any item passes).
    auth_methods: list[Any] | None = Field(default=None, alias="authMethods")
    agent_info: Annotated[Implementation | None, _OR_NONE] = Field(default=None, alias="agentInfo")
