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


PIECE = 4_000
"""A line of a request longer than this is shown in pieces of this many characters,
each piece after the first on a line of its own starting :data:`CONTINUED` (the
panel cuts a longer line, view_text.py: a request is never cut that way)."""

CONTINUED = "    ↪ "

MAX_REQUEST = 100_000
"""Characters of a request drawn at most; the rest is hidden, the block says how
much, and a bare accept does not answer it (consent.py)."""


def _request_lines(conf: Confirmation) -> list[str]:
    """What a waiting confirmation asks, before :func:`_fit`."""
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
    if conf.inputs:
        lines.append("    ! the tool is called with what its title does not show:")
        for name, value in conf.inputs:
            lines.extend(_lines(f"    {name}: ", value, "      "))
    options = "  ".join(f"[{o.id}] {o.name}" for o in conf.options)
    lines.extend(_lines("    options: ", options, "    "))
    return lines


def _fit(lines: list[str]) -> tuple[list[str], int]:
    """``lines`` in pieces of at most :data:`PIECE` characters, up to
    :data:`MAX_REQUEST` characters in all; and how many characters did not fit."""
    out: list[str] = []
    budget = MAX_REQUEST
    split = False
    for i, line in enumerate(lines):
        pieces = [line[:PIECE]]
        pieces.extend(CONTINUED + line[at : at + PIECE] for at in range(PIECE, len(line), PIECE))
        split |= len(pieces) > 1
        for j, piece in enumerate(pieces):
            if len(piece) > budget:
                hidden = len(line) - j * PIECE + sum(len(rest) for rest in lines[i + 1 :])
                out.append(f"    … {hidden} more characters of this request are not shown")
                return out, hidden
            budget -= len(piece)
            out.append(piece)
    if split:
        out.append(f"    ({CONTINUED.strip()} continues the line above: no line break there)")
    return out, 0


def request_hidden(conf: Confirmation) -> int:
    """Characters of ``conf`` its block does not show (0: it is drawn whole)."""
    texts = [conf.title, conf.command, conf.directory, conf.file_path, conf.description]
    texts.extend((conf.server, conf.tool))  # an MCP request draws both
    texts.extend(v for _, v in conf.inputs)
    texts.extend(o.id + o.name for o in conf.options)
    present = [t for t in texts if t]
    # An upper bound on what the lines hold, prefixes included, found in C: the
    # usual request needs no layout (a flood of them stays linear).
    bound = 2 * sum(map(len, present)) + 64 * (sum(t.count("\n") for t in present) + len(texts))
    if bound <= MAX_REQUEST:
        return 0
    return _fit(_request_lines(conf))[1]


def confirmation_lines(conf: Confirmation) -> list[str]:
    """What a waiting confirmation asks, in full: every line of its title and
    command is shown before it can be answered (issue 21), a long line in pieces
    (issue 29); past :data:`MAX_REQUEST` characters the block says how much it
    hides, and a bare accept does not answer it. No "(2 of 3)": the number
    waiting is in the panel's status line, so a new request never redraws the
    others (a flood of them stays linear)."""
    lines, hidden = _fit(_request_lines(conf))
    if hidden:
        lines.append("    name an option to answer it unread, or :GeminiReject")
    lines.append("    :GeminiAccept [option] or :GeminiReject")
    return lines


def tool_lines(call: ToolCall) -> list[str]:
    status = STATUS_WORDS.get(call.status, call.status)
    if call.confirmation is not None and call.status == "pending":
        status = "waiting for you"
    title = f": {call.title}" if call.title and call.title != call.name else ""
    if call.confirmation is not None and call.status == "pending":
        # The request's own lines show the title whole: a huge one is named here.
        title = "\n".join(
            f"{line[:PIECE]}… (in full below)" if len(line) > PIECE else line
            for line in title.split("\n")
        )
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
