"""ACP's session updates as the panel's events, and the user's prompt as ACP content.

Pure translation, no I/O: :class:`UpdateTranslator` keeps the state ACP leaves to
the client (a ``tool_call_update`` carries only what changed; the panel wants the
whole call) and turns each ``session/update`` into :mod:`.model` events. What
Gemini CLI 0.61.0 sends is in client-behaviour.md ("ACP"); the rest of the
schema's kinds are handled as the protocol defines them, and kinds unknown to
the schema are ignored (logged by the transport).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...paths import has_control
from ..disclose import disclosed
from ..model import (
    AgentEvent,
    CommandsUpdate,
    Confirmation,
    ConfirmationKind,
    MessageChunk,
    Option,
    OptionKind,
    Prompt,
    SessionUpdate,
    SlashCommand,
    ThoughtChunk,
    ToolCall,
    ToolCallUpdate,
    ToolStatus,
    UserMessage,
)
from . import messages as schema

if TYPE_CHECKING:
    from pydantic import BaseModel

# ACP ToolCallStatus -> the model's
NO_OUTPUT = "(the agent sent no output to show: it went to the model only)"
"""A command's block when the agent sends its output to the model only."""

_STATUS: dict[str, ToolStatus] = {
    "pending": "pending",
    "in_progress": "executing",
    "completed": "succeeded",
    "failed": "failed",
}

_OPTION_KINDS: frozenset[str] = frozenset(
    {"allow_once", "allow_always", "reject_once", "reject_always"}
)

# Gemini CLI announces an approval-mode change (after "allow always", or from a
# slash command) as a message chunk, not as ``current_mode_update``.
_MODE_UPDATE = re.compile(r"^\[MODE_UPDATE\] (\S+)\s*$")
# Gemini CLI sends a thought as "**Subject**\ndescription".
_THOUGHT = re.compile(r"^\*\*(.+?)\*\*\s*\n?(.*)$", re.S)
# A shell confirmation's content: "[current working directory /x] (description)"
_SHELL_CWD = re.compile(r"^\[current working directory (.*?)\](?: \((.*)\))?$", re.S)

PLAN_CALL_ID = "acp-plan"
"""The agent's plan is shown as one block updated in place, like a tool call."""


def content_text(block: Any) -> str:
    """The text of one ACP content block; a placeholder for what text cannot show."""
    if isinstance(block, schema.TextContentBlock):
        return block.text
    if isinstance(block, schema.ResourceContentBlock):
        return f"[{block.name}]({block.uri})"
    if isinstance(block, schema.EmbeddedResourceContentBlock):
        resource = block.resource
        text = getattr(resource, "text", None)
        return text if isinstance(text, str) else f"[{resource.uri}]"
    if isinstance(block, schema.ImageContentBlock):
        return "[image]"
    if isinstance(block, schema.AudioContentBlock):
        return "[audio]"
    return ""


def tool_content_text(items: Iterable[Any] | None) -> str:
    """A tool call's content as text: its text parts, and each diff as a unified diff."""
    parts: list[str] = []
    for item in items or ():
        if isinstance(item, schema.ContentToolCallContent):
            text = content_text(item.content)
            if text:
                parts.append(text)
        elif isinstance(item, schema.FileEditToolCallContent):
            parts.append(unified_diff(item.path, item.old_text, item.new_text))
    return "\n".join(parts)


def path_text(path: str) -> str:
    """A path the agent names, as text to show: control characters escaped (a
    newline must not start a line of its own choosing)."""
    return repr(path)[1:-1] if has_control(path) else path


def unified_diff(path: str, old: str | None, new: str) -> str:
    name = path_text(os.path.basename(path) or path)
    lines = difflib.unified_diff(
        (old or "").splitlines(),
        new.splitlines(),
        f"a/{name}" if old is not None else "/dev/null",
        f"b/{name}",
        lineterm="",
    )
    return "\n".join(lines)


def options_of(options: Sequence[schema.PermissionOption]) -> tuple[Option, ...]:
    result = []
    for option in options:
        kind: OptionKind = option.kind if option.kind in _OPTION_KINDS else ""
        result.append(Option(option.option_id, option.name, kind))
    return tuple(result)


def confirmation_of(
    call: schema.ToolCallUpdate,
    options: tuple[Option, ...],
    raw_input: Mapping[str, Any] | None = None,
) -> Confirmation:
    """What a ``session/request_permission`` asks, in the panel's terms; a command
    is the tool's own (``rawInput``) when it names one, and what else ``rawInput``
    names that the title does not show is added (disclose.py)."""
    return disclosed(_confirmation(call, options, raw_input), raw_input)


def _confirmation(
    call: schema.ToolCallUpdate, options: tuple[Option, ...], raw_input: Mapping[str, Any] | None
) -> Confirmation:
    title = call.title or call.tool_call_id
    diffs = [c for c in call.content or () if isinstance(c, schema.FileEditToolCallContent)]
    texts = [
        content_text(c.content)
        for c in call.content or ()
        if isinstance(c, schema.ContentToolCallContent)
    ]
    description = "\n".join(t for t in texts if t) or None
    if diffs:
        diff = diffs[0]
        return Confirmation(
            "edit",
            title,
            options,
            description=description,
            file_path=diff.path,
            old_content=diff.old_text,
            new_content=diff.new_text,
        )
    kind: ConfirmationKind = "info"
    command = directory = None
    if call.kind == "execute":
        kind = "exec"
        raw_command = (raw_input or {}).get("command")
        command = raw_command if isinstance(raw_command, str) and raw_command else title
        match = _SHELL_CWD.match(description or "")
        if match:
            directory = match.group(1)
            description = match.group(2)
    return Confirmation(
        kind, title, options, description=description, command=command, directory=directory
    )


def commands_of(available: Sequence[schema.AvailableCommand]) -> tuple[SlashCommand, ...]:
    """Slash commands as a tree: Gemini CLI lists a sub-command as ``"parent child"``."""
    tree: dict[str, Any] = {}
    descriptions: dict[tuple[str, ...], str] = {}
    for command in available:
        path = tuple(command.name.lstrip("/").split())
        if not path:
            continue
        descriptions[path] = command.description
        node = tree
        for name in path:
            node = node.setdefault(name, {})

    def build(node: Mapping[str, Any], prefix: tuple[str, ...]) -> tuple[SlashCommand, ...]:
        return tuple(
            SlashCommand(name, descriptions.get((*prefix, name), ""), build(sub, (*prefix, name)))
            for name, sub in node.items()
        )

    return build(tree, ())


def plan_text(entries: Sequence[schema.PlanEntry]) -> str:
    marks = {"completed": "[x]", "in_progress": "[~]"}
    return "\n".join(f"{marks.get(e.status, '[ ]')} {e.content}" for e in entries)


def prompt_blocks(prompt: Prompt, *, embedded_context: bool) -> list[dict[str, Any]]:
    """The user's prompt as ACP content: the text, then each reference.

    What the editor sends the text of (lines, a buffer's unsaved text, diagnostics)
    goes as an embedded resource when the agent takes embedded context (0.61.0 adds
    it after the prompt as "Content from @uri:"), else as a text block holding it;
    a whole file as a resource link, which the agent reads itself (0.61.0: its
    ``read_many_files``, shown as a tool call); an image as an ``image`` block
    (base64; 0.61.0 gives it to the model as ``inlineData``), last.
    """
    blocks: list[dict[str, Any]] = [{"type": "text", "text": prompt.text}]
    for ref in prompt.references:
        if ref.text is not None and embedded_context:
            # 0.61.0 joins the text blocks with the resource's "@uri" as they come:
            # without a separator the user's last word and the attachment run together
            # ("#selection@file:///...").
            blocks.append({"type": "text", "text": "\n"})
            blocks.append(
                {
                    "type": "resource",
                    "resource": {"uri": ref.uri(), "text": ref.text, "mimeType": "text/plain"},
                }
            )
        elif ref.text is not None:
            blocks.append({"type": "text", "text": f"\nContent from {ref.mention()}:\n{ref.text}"})
        elif ref.start_line is not None:
            blocks.append({"type": "text", "text": "\n" + ref.mention()})
        else:
            blocks.append(
                {"type": "resource_link", "uri": ref.uri(), "name": os.path.basename(ref.path)}
            )
    for image in prompt.images:
        blocks.append({"type": "image", "mimeType": image.mime, "data": image.base64()})
    return blocks


class UpdateTranslator:
    """``session/update`` notifications -> panel events, one session at a time."""

    def __init__(self) -> None:
        self.calls: dict[str, ToolCall] = {}

    def reset(self) -> None:
        self.calls.clear()

    def call(self, call_id: str) -> ToolCall | None:
        return self.calls.get(call_id)

    def put(self, call: ToolCall) -> ToolCallUpdate:
        """Record ``call`` as the current state of its id; the event that shows it."""
        self.calls[call.id] = call
        return ToolCallUpdate(call)

    def permission(
        self, call: schema.ToolCallUpdate, options: Sequence[schema.PermissionOption]
    ) -> ToolCall:
        """The tool call a ``session/request_permission`` is about, waiting for the user."""
        base = self.calls.get(call.tool_call_id) or ToolCall(call.tool_call_id, call.kind or "")
        raw = call.raw_input if isinstance(call.raw_input, Mapping) else base.input
        return base.but(
            status="pending",
            title=call.title or base.title,
            input=raw,
            confirmation=confirmation_of(call, options_of(options), raw),
            locations=_locations(call.locations) or base.locations,
        )

    def text_chunk(self, kind: str, text: str) -> list[AgentEvent]:
        """An ``agent_message_chunk`` or ``agent_thought_chunk`` holding ``text``."""
        if kind == "agent_message_chunk":
            mode = _MODE_UPDATE.match(text)
            if mode:
                return [SessionUpdate({"mode": mode.group(1)})]
            return [MessageChunk(text)] if text else []
        match = _THOUGHT.match(text)
        if match:
            return [ThoughtChunk(match.group(2), subject=match.group(1).strip())]
        return [ThoughtChunk(text)] if text else []

    def translate(self, update: BaseModel) -> list[AgentEvent]:
        if isinstance(update, schema.AgentMessageChunk):
            return self.text_chunk("agent_message_chunk", content_text(update.content))
        if isinstance(update, schema.AgentThoughtChunk):
            return self.text_chunk("agent_thought_chunk", content_text(update.content))
        if isinstance(update, schema.UserMessageChunk):
            # Only sent while a loaded session replays its history, which starts
            # with Gemini CLI's own set-up message: not the user's words.
            text = content_text(update.content)
            if not text.strip() or text.lstrip().startswith("<session_context>"):
                return []
            return [UserMessage(text)]
        if isinstance(update, schema.ToolCallStart):
            return [self._start(update)]
        if isinstance(update, schema.ToolCallProgress):
            return [self._progress(update)]
        if isinstance(update, schema.AgentPlanUpdate):
            return [self._plan(update.entries)]
        if isinstance(update, schema.AvailableCommandsUpdate):
            return [CommandsUpdate(commands_of(update.available_commands))]
        if isinstance(update, schema.CurrentModeUpdate):
            return [SessionUpdate({"mode": update.current_mode_id})]
        if isinstance(update, schema.SessionInfoUpdate):
            return [SessionUpdate({"title": update.title})] if update.title else []
        return []  # usage, config options, plan documents: nothing the panel shows

    def _start(self, update: schema.ToolCallStart) -> ToolCallUpdate:
        status = _STATUS.get(update.status or "pending", "pending")
        call = ToolCall(
            update.tool_call_id,
            update.kind or "other",
            status=status,
            title=update.title,
            input=update.raw_input if isinstance(update.raw_input, Mapping) else None,
            locations=_locations(update.locations),
        )
        return self.put(_with_content(call, update.content))

    def _progress(self, update: schema.ToolCallProgress) -> ToolCallUpdate:
        call = self.calls.get(update.tool_call_id) or ToolCall(
            update.tool_call_id, update.kind or "other"
        )
        changes: dict[str, Any] = {}
        if update.status:
            changes["status"] = _STATUS.get(update.status, call.status)
            if changes["status"] != "pending":
                changes["confirmation"] = None
        if update.title:
            changes["title"] = update.title
        if update.locations:
            changes["locations"] = _locations(update.locations)
        call = call.but(**changes)
        if update.content is not None:
            call = _with_content(call, update.content)
        if (
            call.status == "succeeded"
            and call.name == "execute"
            and not call.result
            and not call.live_output
        ):
            # Gemini CLI 0.61.0 sends a command's output to the model only (its
            # terminal rendering is not text it can send): say where it went.
            call = call.but(result=NO_OUTPUT)
        return self.put(call)

    def _plan(self, entries: Sequence[schema.PlanEntry]) -> ToolCallUpdate:
        done = all(e.status == "completed" for e in entries)
        call = ToolCall(
            PLAN_CALL_ID,
            "plan",
            status="succeeded" if done else "executing",
            title="Plan",
            live_output="" if done else plan_text(entries),
            result=plan_text(entries) if done else None,
        )
        return self.put(call)


def _with_content(call: ToolCall, content: Iterable[Any] | None) -> ToolCall:
    text = tool_content_text(content)
    if call.status == "succeeded":
        return call.but(result=text, live_output="")
    if call.status == "failed":
        return call.but(error=text or "failed", live_output="")
    return call.but(live_output=text)


def _locations(locations: Iterable[schema.ToolCallLocation] | None) -> tuple[str, ...]:
    result = []
    for location in locations or ():
        line = f":{location.line}" if location.line else ""
        result.append(f"{path_text(location.path)}{line}")
    return tuple(result)
