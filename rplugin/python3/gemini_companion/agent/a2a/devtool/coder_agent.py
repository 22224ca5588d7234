"""The development-tool extension as ``@google/gemini-cli-a2a-server`` 0.25.2
sends it (client-behaviour.md, "The A2A server"): metadata ``coderAgent`` with
kebab-case kinds, the agent's own tool-call object (``request``, ``status``,
``confirmationDetails``, ``liveOutput``, ``response``), no options (the plugin
offers the outcomes the server accepts); answers are ``{callId, outcome,
newContent?}``. Plain data, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...disclose import disclosed
from ...model import Confirmation, ConfirmationKind, Option, ToolCall
from .fields import text_of

STATUS = {
    "validating": "pending",
    "scheduled": "pending",
    "awaiting_approval": "pending",
    "executing": "executing",
    "success": "succeeded",
    "error": "failed",
    "cancelled": "cancelled",
}


def options(kind: str, details: Mapping[str, Any]) -> tuple[Option, ...]:
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


def _confirmation(details: Mapping[str, Any]) -> Confirmation:
    dtype = str(details.get("type") or "info")
    kind: ConfirmationKind = dtype if dtype in ("edit", "exec", "mcp", "info") else "info"  # type: ignore[assignment]
    title = str(details.get("title") or dtype)
    common: dict[str, Any] = {"options": options(kind, details)}
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
    return Confirmation("info", title, description=text_of(description), **common)


def tool_call(data: Mapping[str, Any]) -> ToolCall:
    """The agent's own tool-call object (a DataPart) as the model's tool call."""
    request = data.get("request") or {}
    tool = data.get("tool") or {}
    status = STATUS.get(str(data.get("status") or ""), "pending")
    details = data.get("confirmationDetails")
    confirmation = (
        _confirmation(details)
        if isinstance(details, Mapping) and data.get("status") == "awaiting_approval"
        else None
    )
    response = data.get("response") or {}
    result = error = None
    if status == "succeeded":
        display = response.get("resultDisplay")
        if isinstance(display, Mapping):
            result = display.get("fileDiff") or display.get("fileName") or text_of(display)
        else:
            result = text_of(display)
    elif status in ("failed", "cancelled"):
        err = response.get("error")
        display = response.get("resultDisplay")
        if isinstance(display, Mapping):
            # An edit's display (its diff, the texts): words, not its JSON.
            name = display.get("fileName") or display.get("filePath")
            display = f"{'Rejected' if status == 'cancelled' else 'Failed'}: {name or 'the edit'}"
        error = (err.get("message") if isinstance(err, Mapping) else text_of(err)) or text_of(
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
        live_output=text_of(data.get("liveOutput")) or "",
        result=result,
        error=error,
        confirmation=confirmation,
    )


def agent_settings(workspace: str) -> dict[str, Any]:
    """The first message's metadata: ``agent-settings`` with the workspace."""
    return {"coderAgent": {"kind": "agent-settings", "workspacePath": workspace}}


def confirmation_answer(call_id: str, option_id: str, new_content: str | None) -> dict[str, Any]:
    """The DataPart of the user's answer: the outcome, and the user's version of an edit."""
    answer: dict[str, Any] = {"callId": call_id, "outcome": option_id}
    if new_content is not None:
        answer["newContent"] = new_content
    return answer
