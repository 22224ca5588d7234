"""Transcript blocks as lines: what the panel shows, readable without colours.

Plain functions of the model (no Neovim, no protocol), so the layout is tested
directly. The Lua side (lua/gemini_companion/agent/transcript.lua) only places
these lines, and folds a thought's ``THOUGHT`` lines under the
first one, which holds the subject.
"""

from __future__ import annotations

from .model import Block, Confirmation, ToolCall

THOUGHT = "┆ "
"""Prefix of every line of a thought."""

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


YOU = "▍ You"
GEMINI = "▍ Gemini"
"""Role lines: not markdown headings, so the model's own ``## Summary`` is never
mistaken for a turn (the panel also highlights them as ``GeminiAgentRole``)."""


def prompt_lines(text: str, references: list[str], first: bool) -> list[str]:
    lines = [] if first else [""]
    lines.append(YOU)
    lines.extend(text.split("\n"))
    lines.extend(f"  {ref}" for ref in references)
    lines.extend(["", GEMINI])
    return lines


def message_start() -> list[str]:
    """A message block before its text: a blank separator and the line text fills."""
    return ["", ""]


def thought_start(subject: str | None) -> list[str]:
    return ["", f"{THOUGHT}Thought: {subject or '…'}", THOUGHT]


def notice_lines(text: str, level: str) -> list[str]:
    label = {"error": "Error", "warning": "Warning"}.get(level, "Note")
    return ["", *_lines(f"[{label}] ", text, "  ")]


def _lines(first: str, text: str, rest: str, after: str = "") -> list[str]:
    """``text`` as lines: the first after ``first``, the others after ``rest`` (an
    agent's title or command may hold newlines: each is shown as a line of its own,
    never joined or dropped); ``after`` ends the first line."""
    head, *more = text.split("\n")
    return [f"{first}{head}{after}", *(f"{rest}{line}" for line in more)]


def _tail(text: str, prefix: str) -> list[str]:
    lines = text.rstrip("\n").split("\n")
    cut = len(lines) - MAX_OUTPUT_LINES
    shown = [f"{prefix}{line}" for line in lines[-MAX_OUTPUT_LINES:]]
    if cut > 0:
        shown.insert(0, f"{prefix}… {cut} earlier line{'s' if cut > 1 else ''}")
    return shown


def confirmation_lines(conf: Confirmation) -> list[str]:
    """What a waiting confirmation asks, in full: every line of its title and
    command is shown before it can be answered (issue 21). No "(2 of 3)": the
    number waiting is in the panel's status line, so a new request never redraws
    the others (a flood of them stays linear)."""
    lines = _lines("  ? Waiting for you: ", conf.title, "      ")
    if conf.kind == "exec":
        lines.extend(_lines("    $ ", conf.command or "", "      "))
        if conf.directory:
            lines.extend(_lines("    in ", conf.directory, "       "))
    elif conf.kind == "mcp":
        lines.extend(
            _lines("    MCP server ", f"{conf.server or '?'}, tool {conf.tool or '?'}", "    ")
        )
    elif conf.kind == "edit":
        lines.extend(
            _lines("    edit ", conf.file_path or "?", "    ", " (review it in the diff tab)")
        )
    if conf.description and conf.kind != "edit":
        lines.extend(f"    {line}" for line in conf.description.split("\n"))
    options = "  ".join(f"[{o.id}] {o.name}" for o in conf.options)
    lines.extend(_lines("    options: ", options, "    "))
    lines.append("    :GeminiAccept [option] or :GeminiReject")
    return lines


def tool_lines(call: ToolCall) -> list[str]:
    status = STATUS_WORDS.get(call.status, call.status)
    if call.confirmation is not None and call.status == "pending":
        status = "waiting for you"
    title = f": {call.title}" if call.title and call.title != call.name else ""
    lines = ["", *_lines("[tool] ", f"{call.name}{title}", "  ", f" ({status})")]
    if call.locations:
        lines.extend(_lines("  at ", ", ".join(call.locations), "  "))
    if call.confirmation is not None and call.status == "pending":
        lines.extend(confirmation_lines(call.confirmation))
    if call.live_output and call.result is None and call.error is None:
        lines.extend(_tail(call.live_output, "  │ "))
    if call.result:
        lines.extend(_tail(call.result, "  → "))
    if call.error:
        lines.extend(_tail(call.error, "  ✗ "))
    return lines


def block_lines(block: Block) -> list[str]:
    """The lines of a tool or notice block (text blocks grow by appending instead)."""
    if block.kind == "tool" and block.call is not None:
        return tool_lines(block.call)
    if block.kind == "notice":
        return notice_lines(block.text, block.level)
    raise ValueError(f"block {block.id} ({block.kind}) is not drawn whole")
