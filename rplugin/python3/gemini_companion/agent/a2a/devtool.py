"""The A2A ``development-tool`` extension's encodings, both of them, as plain data.

Two dialects carry the same events (a2a-development-tool-extension.md and
client-behaviour.md, "The A2A server"):

``rfc``
    metadata keyed by the extension URI, upper-case kinds (``TOOL_CALL_UPDATE``),
    a flat ``ToolCall`` (``PENDING``/``EXECUTING``/``SUCCEEDED``/...) with a
    ``confirmation_request`` holding the options; answers are
    ``ToolCallConfirmation`` (``tool_call_id``, ``selected_option_id``,
    ``file_details.new_content``). Both proto3 JSON spellings are read
    (``tool_call_id`` and ``toolCallId``).
``coder-agent``
    what ``@google/gemini-cli-a2a-server`` 0.25.2 sends: metadata ``coderAgent``
    with kebab-case kinds, the agent's own tool-call object (``request``,
    ``status``, ``confirmationDetails``, ``liveOutput``, ``response``), no
    options (the plugin offers the outcomes the server accepts); answers are
    ``{callId, outcome, newContent?}``.

Events arrive here normalised (:class:`Update`) from a2a-sdk's objects or from
the real server's REST command stream, and leave as model events. No I/O.

Long because it holds the two encodings of one extension side by side (the
RFC's and 0.25.2's ``coder-agent``), as plain data with no state: read together
they show where the dialects differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..disclose import disclosed
from ..model import Confirmation, ConfirmationKind, Option, OptionKind, SlashCommand, ToolCall

EXTENSION_URI = (
    "https://github.com/google-gemini/gemini-cli/blob/main/docs/a2a/developer-profile/v0/spec.md"
)
EXTENSION_MARKERS = ("developer-profile", "development-tool")
SUPPORTED_MAJOR = 0

RFC = "rfc"
CODER_AGENT = "coder-agent"


class IncompatibleAgentError(ValueError):
    """The agent declares a version of the extension the plugin does not speak."""


# A version segment: ``v`` then a semantic version (Semantic Versioning 2.0.0: no
# leading zeros; pre-release and build after a full MAJOR.MINOR.PATCH), or its
# leading part alone (``v0``, ``v0.3``) as the RFC's URI has it.
_NUMBER = r"(?:0|[1-9][0-9]*)"
_IDENTIFIER = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_VERSION_SEGMENT = re.compile(
    rf"v({_NUMBER}(?:\.{_NUMBER}(?:\.{_NUMBER}"
    rf"(?:-{_IDENTIFIER}(?:\.{_IDENTIFIER})*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)?)?)"
)


def _segments(uri: str) -> list[str]:
    from urllib.parse import urlsplit

    try:
        return urlsplit(uri).path.split("/")
    except ValueError:
        return []


def is_extension(uri: str) -> bool:
    """``uri`` names the development-tool extension: one of its path segments is the
    extension's name (``developer-profile`` in the RFC's URI, or ``development-tool``)."""
    return any(segment in EXTENSION_MARKERS for segment in _segments(uri))


def extension_version(uri: str) -> str | None:
    """The semantic version in the extension URI's version segment, the one right
    after the extension's name (``.../developer-profile/v0/spec.md`` -> ``0``); None
    when that segment is missing or not ``v`` + a semantic version."""
    segments = _segments(uri)
    for index in range(len(segments) - 1, -1, -1):
        if segments[index] in EXTENSION_MARKERS:
            following = segments[index + 1] if index + 1 < len(segments) else ""
            match = _VERSION_SEGMENT.fullmatch(following)
            return match.group(1) if match else None
    return None


def check_extension(uris: Sequence[str]) -> str:
    """The dialect for an agent card's extension URIs: ``rfc`` when it declares the
    extension in a version this plugin supports (semver: same major, 0), else
    :class:`IncompatibleAgentError`; ``coder-agent`` when it does not declare it
    (the real server 0.25.2)."""
    for uri in uris:
        if not is_extension(uri):
            continue
        version = extension_version(uri)
        if version is None:
            raise IncompatibleAgentError(
                f"the agent's extension {uri} names no semantic version after the"
                " extension's name (.../developer-profile/v<MAJOR>[.<MINOR>.<PATCH>]/...)"
            )
        major = int(re.split(r"[.+-]", version)[0])
        if major != SUPPORTED_MAJOR:
            raise IncompatibleAgentError(
                f"the agent speaks version {version} of the development-tool extension;"
                f" this plugin supports version {SUPPORTED_MAJOR}.x ({uri})"
            )
        return RFC
    return CODER_AGENT


def get(data: Mapping[str, Any] | None, name: str, default: Any = None) -> Any:
    """``data[name]`` under either proto3 JSON spelling (``tool_call_id``/``toolCallId``)."""
    if not isinstance(data, Mapping):
        return default
    if name in data:
        return data[name]
    camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
    return data.get(camel, default)


@dataclass
class Update:
    """One event from the agent, whatever carried it."""

    kind: str  # "status", "artifact", "task", "message"
    task_id: str = ""
    context_id: str = ""
    state: str = ""  # working, input-required, completed, failed, canceled, ...
    texts: list[str] = field(default_factory=list)
    data: list[Any] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    artifact_id: str = ""
    append: bool = False
    message_id: str = ""  # of the status message: a message seen twice is shown once
    history: list[Update] = field(default_factory=list)  # a task's earlier agent messages

    def event_kind(self) -> tuple[str, str]:
        """``(dialect, kind)`` from the metadata, kind in kebab case."""
        for key, value in self.metadata.items():
            if key == "coderAgent" and isinstance(value, Mapping):
                return CODER_AGENT, str(value.get("kind") or "").lower()
            if is_extension(key) and isinstance(value, Mapping):
                return RFC, str(value.get("kind") or "").lower().replace("_", "-")
        return "", ""

    def error(self) -> str | None:
        for key, value in self.metadata.items():
            if (key == "coderAgent" or is_extension(key)) and isinstance(value, Mapping):
                error = value.get("error")
                if error:
                    return str(error)
        error = self.metadata.get("error")
        return str(error) if error else None


def normalise_state(state: str) -> str:
    state = state.lower().removeprefix("task_state_").replace("_", "-")
    return "canceled" if state == "cancelled" else state


def _message_id(message: Any) -> str:
    return str(message.get("messageId") or "") if isinstance(message, Mapping) else ""


def _history(task: Mapping[str, Any]) -> list[Update]:
    """A task's earlier messages from the agent (its status messages move there),
    as updates without a kind: what ``tasks/get`` and a resubscription restore."""
    out = []
    for message in task.get("history") or []:
        if not isinstance(message, Mapping) or "USER" in str(message.get("role") or "").upper():
            continue
        out.append(
            _message(
                message,
                str(message.get("taskId") or task.get("id") or ""),
                str(message.get("contextId") or task.get("contextId") or ""),
            )
        )
    return out


def _message(message: Mapping[str, Any], task_id: str, context_id: str) -> Update:
    """An agent message as an update of kind ``message``."""
    texts, data = _parts(message)
    return Update(
        "message",
        task_id,
        context_id,
        texts=texts,
        data=data,
        metadata=dict(message.get("metadata") or {}),
        message_id=_message_id(message),
    )


def _with_status(
    kind: str, task_id: str, carrier: Mapping[str, Any], history: list[Update] | None = None
) -> Update:
    """A status update or a task (``carrier``): its state, its status message's parts
    and id, and its metadata."""
    status = carrier.get("status") or {}
    texts, data = _parts(status.get("message"))
    return Update(
        kind,
        task_id,
        carrier.get("contextId", ""),
        normalise_state(str(status.get("state") or "")),
        texts,
        data,
        dict(carrier.get("metadata") or {}),
        message_id=_message_id(status.get("message")),
        history=history or [],
    )


def _parts(message: Mapping[str, Any] | None) -> tuple[list[str], list[Any]]:
    texts: list[str] = []
    data: list[Any] = []
    for part in (message or {}).get("parts") or []:
        if not isinstance(part, Mapping):
            continue
        if "text" in part and isinstance(part["text"], str):
            texts.append(part["text"])
        elif "data" in part:
            data.append(part["data"])
    return texts, data


def from_sdk(event: Mapping[str, Any]) -> Update:
    """An a2a-sdk ``StreamResponse`` (as ``MessageToDict`` makes it)."""
    if "statusUpdate" in event:
        u = event["statusUpdate"]
        return _with_status("status", u.get("taskId", ""), u)
    if "artifactUpdate" in event:
        u = event["artifactUpdate"]
        artifact = u.get("artifact") or {}
        texts, data = _parts(artifact)
        return Update(
            "artifact",
            u.get("taskId", ""),
            u.get("contextId", ""),
            texts=texts,
            data=data,
            metadata=dict(u.get("metadata") or {}),
            artifact_id=str(artifact.get("artifactId") or artifact.get("name") or ""),
            append=bool(u.get("append")),
        )
    if "task" in event:
        t = event["task"]
        return _with_status("task", t.get("id", ""), t, history=_history(t))
    message = event.get("message") or {}
    return _message(message, message.get("taskId", ""), message.get("contextId", ""))


def from_v03(event: Mapping[str, Any]) -> Update:
    """An A2A 0.3 JSON event, as the real server's ``/executeCommand`` streams it."""
    kind = event.get("kind")
    if kind == "status-update":
        return _with_status("status", event.get("taskId", ""), event)
    if kind == "artifact-update":
        artifact = event.get("artifact") or {}
        texts, data = _parts(artifact)
        return Update(
            "artifact",
            event.get("taskId", ""),
            event.get("contextId", ""),
            texts=texts,
            data=data,
            artifact_id=str(artifact.get("artifactId") or ""),
            append=bool(event.get("append")),
        )
    if kind == "task":
        status = event.get("status") or {}
        return Update(
            "task",
            event.get("id", ""),
            event.get("contextId", ""),
            normalise_state(str(status.get("state") or "")),
        )
    texts, data = _parts(event)
    return Update(
        "message", event.get("taskId", ""), event.get("contextId", ""), texts=texts, data=data
    )


# -- tool calls -------------------------------------------------------------------------

CODER_STATUS = {
    "validating": "pending",
    "scheduled": "pending",
    "awaiting_approval": "pending",
    "executing": "executing",
    "success": "succeeded",
    "error": "failed",
    "cancelled": "cancelled",
}

RFC_STATUS = {
    "pending": "pending",
    "executing": "executing",
    "succeeded": "succeeded",
    "failed": "failed",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "status_unspecified": "pending",
}


def option_kind(option_id: str) -> OptionKind:
    oid = option_id.lower()
    if oid == "proceed_once" or oid.startswith("allow_once"):
        return "allow_once"
    if oid.startswith("proceed_always") or oid.startswith("allow_always"):
        return "allow_always"
    if oid in ("cancel", "reject", "reject_once", "deny"):
        return "reject_once"
    if oid.startswith("reject_always"):
        return "reject_always"
    return ""


def coder_agent_options(kind: str, details: Mapping[str, Any]) -> tuple[Option, ...]:
    """The outcomes 0.25.2 accepts for a confirmation of ``kind`` (it sends none)."""
    if kind == "exec":
        root = details.get("rootCommand") or details.get("command") or "this command"
        always = Option("proceed_always", f"Always allow {root}", "allow_always")
    elif kind == "mcp":
        server = details.get("serverName") or "this server"
        tool = details.get("toolName") or "this tool"
        return (
            Option("proceed_once", "Allow once", "allow_once"),
            Option("proceed_always_tool", f"Always allow {tool}", "allow_always"),
            Option("proceed_always_server", f"Always allow every tool of {server}", ""),
            Option("cancel", "Reject", "reject_once"),
        )
    else:
        always = Option("proceed_always", "Allow always", "allow_always")
    return (
        Option("proceed_once", "Allow once", "allow_once"),
        always,
        Option("cancel", "Reject", "reject_once"),
    )


def _text_of(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


def _coder_confirmation(details: Mapping[str, Any]) -> Confirmation:
    dtype = str(details.get("type") or "info")
    kind: ConfirmationKind = dtype if dtype in ("edit", "exec", "mcp", "info") else "info"  # type: ignore[assignment]
    title = str(details.get("title") or dtype)
    common: dict[str, Any] = {"options": coder_agent_options(kind, details)}
    if kind == "edit":
        return Confirmation(
            "edit",
            title,
            file_path=details.get("filePath"),
            old_content=details.get("originalContent"),
            new_content=details.get("newContent"),
            description=details.get("fileDiff"),
            **common,
        )
    if kind == "exec":
        return Confirmation(
            "exec",
            title,
            command=details.get("command"),
            directory=details.get("cwd") or details.get("directory"),
            **common,
        )
    if kind == "mcp":
        return Confirmation(
            "mcp",
            title,
            server=details.get("serverName"),
            tool=details.get("toolName") or details.get("toolDisplayName"),
            **common,
        )
    description = details.get("prompt") or details.get("description")
    urls = details.get("urls")
    if isinstance(urls, list) and urls:
        description = "\n".join([str(description or ""), *map(str, urls)]).strip()
    return Confirmation("info", title, description=_text_of(description), **common)


def coder_tool_call(data: Mapping[str, Any]) -> ToolCall:
    request = data.get("request") or {}
    tool = data.get("tool") or {}
    status = CODER_STATUS.get(str(data.get("status") or ""), "pending")
    details = data.get("confirmationDetails")
    confirmation = (
        _coder_confirmation(details)
        if isinstance(details, Mapping) and data.get("status") == "awaiting_approval"
        else None
    )
    response = data.get("response") or {}
    result = error = None
    if status == "succeeded":
        display = response.get("resultDisplay")
        if isinstance(display, Mapping):
            result = display.get("fileDiff") or display.get("fileName") or _text_of(display)
        else:
            result = _text_of(display)
    elif status in ("failed", "cancelled"):
        err = response.get("error")
        display = response.get("resultDisplay")
        if isinstance(display, Mapping):
            # An edit's display (its diff, the texts): words, not its JSON.
            name = display.get("fileName") or display.get("filePath")
            display = f"{'Rejected' if status == 'cancelled' else 'Failed'}: {name or 'the edit'}"
        error = (err.get("message") if isinstance(err, Mapping) else _text_of(err)) or _text_of(
            display
        )
    args = request.get("args") if isinstance(request.get("args"), Mapping) else None
    title = str(tool.get("displayName") or request.get("name") or "")
    if confirmation is not None:
        confirmation = disclosed(confirmation, args)
        title = confirmation.title
    elif args:
        hint = args.get("command") or args.get("file_path") or args.get("path")
        if hint:
            title = f"{title} {hint}".strip()
    return ToolCall(
        id=str(request.get("callId") or ""),
        name=str(request.get("name") or tool.get("name") or "tool"),
        status=status,  # type: ignore[arg-type]
        title=title,
        input=args,
        live_output=_text_of(data.get("liveOutput")) or "",
        result=result,
        error=error,
        confirmation=confirmation,
    )


def _rfc_confirmation(request: Mapping[str, Any], call_title: str) -> Confirmation:
    options = tuple(
        Option(
            str(get(o, "id")), str(get(o, "name") or get(o, "id")), option_kind(str(get(o, "id")))
        )
        for o in (get(request, "options") or [])
        if isinstance(o, Mapping) and get(o, "id")
    )
    execute = get(request, "execute_details")
    edit = get(request, "file_edit_details")
    mcp = get(request, "mcp_details")
    generic = get(request, "generic_details")
    if isinstance(execute, Mapping):
        command = get(execute, "command")
        return Confirmation(
            "exec",
            f"Run {command}" if command else call_title,
            options,
            command=command,
            directory=get(execute, "working_directory"),
        )
    if isinstance(edit, Mapping):
        path = get(edit, "file_path")
        return Confirmation(
            "edit",
            f"Edit {path}" if path else call_title,
            options,
            file_path=path,
            old_content=get(edit, "old_content"),
            new_content=get(edit, "new_content"),
            description=get(edit, "formatted_diff"),
        )
    if isinstance(mcp, Mapping):
        return Confirmation(
            "mcp",
            call_title,
            options,
            server=get(mcp, "server_name"),
            tool=get(mcp, "tool_name"),
        )
    description = get(generic, "description") if isinstance(generic, Mapping) else None
    return Confirmation("info", call_title, options, description=description)


def rfc_tool_call(data: Mapping[str, Any]) -> ToolCall:
    status = RFC_STATUS.get(str(get(data, "status") or "").lower(), "pending")
    name = str(get(data, "tool_name") or "tool")
    description = get(data, "description")
    title = str(description or name)
    request = get(data, "confirmation_request")
    confirmation = (
        _rfc_confirmation(request, title)
        if isinstance(request, Mapping) and status == "pending"
        else None
    )
    output = get(data, "output")
    result = None
    if isinstance(output, Mapping):
        diff = get(output, "diff")
        result = get(output, "text") or (
            get(diff, "formatted_diff") or get(diff, "file_path")
            if isinstance(diff, Mapping)
            else None
        )
        if result is None and get(output, "structured_data") is not None:
            result = _text_of(get(output, "structured_data"))
    err = get(data, "error")
    inputs = get(data, "input_parameters")
    if confirmation is not None and isinstance(inputs, Mapping):
        confirmation = disclosed(confirmation, inputs)
    return ToolCall(
        id=str(get(data, "tool_call_id") or ""),
        name=name,
        status=status,  # type: ignore[arg-type]
        title=title,
        input=inputs if isinstance(inputs, Mapping) else None,
        live_output=str(get(data, "live_content") or ""),
        result=result,
        error=str(get(err, "message")) if isinstance(err, Mapping) else None,
        confirmation=confirmation,
    )


def tool_call(dialect: str, data: Mapping[str, Any]) -> ToolCall | None:
    """The tool call in a DataPart, read by its shape (both dialects)."""
    if isinstance(data.get("request"), Mapping):
        call = coder_tool_call(data)
    elif get(data, "tool_call_id") is not None:
        call = rfc_tool_call(data)
    else:
        return None
    return call if call.id else None


# -- client -> agent -----------------------------------------------------------------


def agent_settings(dialect: str, workspace: str) -> dict[str, Any]:
    """The first message's metadata: ``AgentSettings`` with the workspace."""
    if dialect == RFC:
        return {EXTENSION_URI: {"workspace_path": workspace}}
    return {"coderAgent": {"kind": "agent-settings", "workspacePath": workspace}}


def confirmation_answer(
    dialect: str, call_id: str, option_id: str, new_content: str | None
) -> dict[str, Any]:
    """The DataPart of the user's answer (``ToolCallConfirmation``)."""
    if dialect == RFC:
        answer: dict[str, Any] = {"tool_call_id": call_id, "selected_option_id": option_id}
        if new_content is not None:
            answer["file_details"] = {"new_content": new_content}
        return answer
    answer = {"callId": call_id, "outcome": option_id}
    if new_content is not None:
        answer["newContent"] = new_content
    return answer


def slash_commands(raw: Any, parent: str = "") -> tuple[SlashCommand, ...]:
    """``commands/get`` (RFC) or ``/listCommands`` (0.25.2, whose sub-commands carry
    their full names) as :class:`SlashCommand` values."""
    out = []
    for item in raw or []:
        if not isinstance(item, Mapping) or not get(item, "name"):
            continue
        name = str(get(item, "name"))
        if parent and name.startswith(parent + " "):
            name = name[len(parent) + 1 :]
        full = f"{parent} {name}".strip()
        subs = slash_commands(get(item, "sub_commands") or [], full)
        out.append(SlashCommand(name, str(get(item, "description") or ""), subs))
    return tuple(out)
