"""Transcript blocks as lines: what the panel shows, readable without colours.

Plain functions of the model (no Neovim, no protocol), so the layout is tested
directly. The Lua side (lua/gemini_companion/agent/transcript.lua) only places
these lines; its fold expression folds a thought's ``THOUGHT`` lines under the
first one, which holds the subject.
"""

from __future__ import annotations

from .model import Block, Confirmation, ToolCall

THOUGHT = "┆ "
"""Prefix of every line of a thought (the fold expression keys on it)."""

MAX_OUTPUT_LINES = 30
"""Live output and results are cut to their last lines: a tool block is re-drawn
whole on each update, so its size must stay small."""

STATUS_WORDS = {
    "pending": "pending",
    "executing": "running",
    "succeeded": "done",
    "failed": "failed",
    "cancelled": "cancelled",
}


def prompt_lines(text: str, references: list[str], first: bool) -> list[str]:
    lines = [] if first else [""]
    lines.append("## You")
    lines.extend(text.split("\n"))
    lines.extend(f"  {ref}" for ref in references)
    lines.extend(["", "## Gemini"])
    return lines


def message_start() -> list[str]:
    """A message block before its text: a blank separator and the line text fills."""
    return ["", ""]


def thought_start(subject: str | None) -> list[str]:
    return ["", f"{THOUGHT}Thought: {subject or '…'}", THOUGHT]


def notice_lines(text: str, level: str) -> list[str]:
    label = {"error": "Error", "warning": "Warning"}.get(level, "Note")
    first, *rest = text.split("\n")
    return ["", f"[{label}] {first}", *(f"  {line}" for line in rest)]


def _tail(text: str, prefix: str) -> list[str]:
    lines = text.rstrip("\n").split("\n")
    cut = len(lines) - MAX_OUTPUT_LINES
    shown = [f"{prefix}{line}" for line in lines[-MAX_OUTPUT_LINES:]]
    if cut > 0:
        shown.insert(0, f"{prefix}… {cut} earlier line{'s' if cut > 1 else ''}")
    return shown


def confirmation_lines(conf: Confirmation, position: int, waiting: int) -> list[str]:
    queue = f" ({position} of {waiting})" if waiting > 1 else ""
    lines = [f"  ? Waiting for you{queue}: {conf.title}"]
    if conf.kind == "exec":
        lines.append(f"    $ {conf.command or ''}")
        if conf.directory:
            lines.append(f"    in {conf.directory}")
    elif conf.kind == "mcp":
        lines.append(f"    MCP server {conf.server or '?'}, tool {conf.tool or '?'}")
    elif conf.kind == "edit":
        lines.append(f"    edit {conf.file_path or '?'} (review it in the diff tab)")
    if conf.description and conf.kind != "edit":
        lines.extend(f"    {line}" for line in conf.description.split("\n"))
    options = "  ".join(f"[{o.id}] {o.name}" for o in conf.options)
    lines.append(f"    options: {options}")
    lines.append("    :GeminiAccept [option] or :GeminiReject")
    return lines


def tool_lines(call: ToolCall, position: int = 0, waiting: int = 0) -> list[str]:
    status = STATUS_WORDS.get(call.status, call.status)
    if call.confirmation is not None and call.status == "pending":
        status = "waiting for you"
    title = f": {call.title}" if call.title and call.title != call.name else ""
    lines = ["", f"[tool] {call.name}{title} ({status})"]
    if call.locations:
        lines.append("  at " + ", ".join(call.locations))
    if call.confirmation is not None and call.status == "pending":
        lines.extend(confirmation_lines(call.confirmation, position, waiting))
    if call.live_output and call.result is None and call.error is None:
        lines.extend(_tail(call.live_output, "  │ "))
    if call.result:
        lines.extend(_tail(call.result, "  → "))
    if call.error:
        lines.extend(_tail(call.error, "  ✗ "))
    return lines


def block_lines(block: Block, position: int = 0, waiting: int = 0) -> list[str]:
    """The lines of a tool or notice block (text blocks grow by appending instead)."""
    if block.kind == "tool" and block.call is not None:
        return tool_lines(block.call, position, waiting)
    if block.kind == "notice":
        return notice_lines(block.text, block.level)
    raise ValueError(f"block {block.id} ({block.kind}) is not drawn whole")
