"""The development-tool extension as the RFC encodes it (a2a-development-tool-
extension.md): metadata keyed by the extension URI, upper-case kinds
(``TOOL_CALL_UPDATE``), a flat ``ToolCall`` (``PENDING``/``EXECUTING``/
``SUCCEEDED``/...) with a ``confirmation_request`` holding the options; answers
are ``ToolCallConfirmation`` (``tool_call_id``, ``selected_option_id``,
``file_details.new_content``). Both proto3 JSON spellings are read
(``tool_call_id`` and ``toolCallId``). Plain data, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...disclose import disclosed
from ...model import Confirmation, Option, OptionKind, ToolCall
from .extension import EXTENSION_URI
from .fields import get, text_of

STATUS = {
    "pending": "pending",
    "executing": "executing",
    "succeeded": "succeeded",
    "failed": "failed",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "status_unspecified": "pending",
}


def option_kind(option_id: str) -> OptionKind:
    """What an option the agent offers does, from its id."""
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


def _confirmation(request: Mapping[str, Any], call_title: str) -> Confirmation:
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


def tool_call(data: Mapping[str, Any]) -> ToolCall:
    """An RFC ``ToolCall`` (a DataPart) as the model's tool call."""
    status = STATUS.get(str(get(data, "status") or "").lower(), "pending")
    name = str(get(data, "tool_name") or "tool")
    description = get(data, "description")
    title = str(description or name)
    request = get(data, "confirmation_request")
    confirmation = (
        _confirmation(request, title)
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
            result = text_of(get(output, "structured_data"))
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


def agent_settings(workspace: str) -> dict[str, Any]:
    """The first message's metadata: ``AgentSettings`` with the workspace."""
    return {EXTENSION_URI: {"workspace_path": workspace}}


def confirmation_answer(call_id: str, option_id: str, new_content: str | None) -> dict[str, Any]:
    """The DataPart of the user's answer (``ToolCallConfirmation``)."""
    answer: dict[str, Any] = {"tool_call_id": call_id, "selected_option_id": option_id}
    if new_content is not None:
        answer["file_details"] = {"new_content": new_content}
    return answer
