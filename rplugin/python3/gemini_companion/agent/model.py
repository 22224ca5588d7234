"""The agent panel's protocol-neutral model: what a transport reports, as data.

A transport (``a2a.py``, ``acp.py``) turns its protocol's messages into the
:data:`AgentEvent` values below and hands them to :meth:`EventSink.emit
<gemini_companion.agent.transport.EventSink.emit>`; the session
(``session.py``) folds them into :class:`Transcript` and the panel. Nothing here
knows which protocol is in use, and nothing here imports a protocol's package.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from .image import Image

ToolStatus = Literal["pending", "executing", "succeeded", "failed", "cancelled"]
"""A tool call's life: the RFC's ``ToolCallStatus`` names in lower case."""

ConfirmationKind = Literal["edit", "exec", "mcp", "info"]
"""What the agent asks permission for: an edit (shown in the diff tab), a shell
command, an MCP tool, anything else (``info``: a description to read)."""

AgentStatus = Literal["stopped", "starting", "idle", "working", "waiting", "error"]
"""The agent as the user sees it: ``waiting`` means waiting for the user's answer."""

OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always", ""]

# Block ids, for the whole host process: started from the clock, so that a host
# started again in the same Neovim does not reuse the ids of the blocks drawn
# before it (microseconds: exact in Lua's numbers for centuries).
_BLOCK_IDS = itertools.count(time.time_ns() // 1000)

FINISHED: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})

REJECT_KINDS: tuple[OptionKind, ...] = ("reject_once", "reject_always")
"""The option kinds that reject, in the order a rejection picks them."""


@dataclass(frozen=True)
class Option:
    """One answer the agent offers to a confirmation.

    ``id`` is what goes back to the agent (``proceed_once``, ``cancel``, ...);
    ``kind`` says what it means, so ``:GeminiAccept``/``:GeminiReject`` without an
    option can pick the right one whatever the agent calls it.
    """

    id: str
    name: str
    kind: OptionKind = ""


@dataclass(frozen=True)
class Confirmation:
    """A tool call waiting for the user's permission, with what to show.

    Fields by ``kind``: ``edit``: ``file_path``, ``old_content`` (``None`` for a new
    file), ``new_content``; ``exec``: ``command``, ``directory``; ``mcp``:
    ``server``, ``tool``; every kind: ``title``, ``description`` and ``inputs``:
    the tool's own arguments (ACP ``rawInput``, A2A ``args``) naming a command,
    path or URL that nothing else shown holds (disclose.py), as (name, value).
    """

    kind: ConfirmationKind
    title: str
    options: tuple[Option, ...]
    description: str | None = None
    command: str | None = None
    directory: str | None = None
    server: str | None = None
    tool: str | None = None
    file_path: str | None = None
    old_content: str | None = None
    new_content: str | None = None
    inputs: tuple[tuple[str, str], ...] = ()

    def option(self, wanted: str | None, *, reject: bool = False) -> Option | None:
        """The option ``wanted`` names (an id, or a kind), else the default: the
        first ``allow_once`` to accept, the first ``reject_once`` (then
        ``reject_always``) to reject. Neither default ever broadens the answer:
        without an ``allow_once`` an accept has none (consent.py says which
        options to name), and without a reject option a rejection is None, the
        protocol's cancellation (:meth:`rejection` says so)."""
        if wanted:
            for opt in self.options:
                if wanted in (opt.id, opt.kind):
                    return opt
            return None
        kinds = REJECT_KINDS if reject else ("allow_once",)
        for kind in kinds:
            for opt in self.options:
                if opt.kind == kind:
                    return opt
        return None

    def rejection(self, wanted: str | None) -> Option | None:
        """The option a rejection answers with: the reject option ``wanted`` names,
        else the first reject option; None (the protocol's ``cancelled``) when the
        agent offers none. Raises :class:`ValueError` when ``wanted`` is missing or
        is not a reject option: a rejection never answers "allow"."""
        if not wanted:
            return self.option(None, reject=True)
        option = self.option(wanted)
        if option is None:
            raise ValueError(f"no option {wanted!r}: choose one of {self.option_ids()}")
        if option.kind not in REJECT_KINDS:
            rejects = [o.id for o in self.options if o.kind in REJECT_KINDS]
            how = f"one of {', '.join(rejects)}" if rejects else "none (:GeminiReject cancels)"
            raise ValueError(
                f"{option.id!r} ({option.name}) is not a way to reject; the reject options: {how}"
            )
        return option

    def option_ids(self) -> str:
        return ", ".join(o.id for o in self.options)


@dataclass(frozen=True)
class ToolCall:
    """A tool call's whole current state; each update replaces the previous one.

    ``live_output`` is the running output (replaced whole on each update);
    ``result``/``error`` are set when it finished; ``confirmation`` is set while it
    waits for the user (status ``pending``) and ``None`` otherwise.
    """

    id: str
    name: str
    status: ToolStatus = "pending"
    title: str = ""
    input: Mapping[str, Any] | None = None
    live_output: str = ""
    result: str | None = None
    error: str | None = None
    confirmation: Confirmation | None = None
    locations: tuple[str, ...] = ()

    def but(self, **changes: Any) -> ToolCall:
        return replace(self, **changes)


@dataclass(frozen=True)
class SlashCommand:
    """A slash command; sub-commands are reached as ``"parent child"``."""

    name: str
    description: str = ""
    sub_commands: tuple[SlashCommand, ...] = ()

    def names(self, prefix: str = "") -> list[str]:
        full = f"{prefix}{self.name}"
        out = [full]
        for sub in self.sub_commands:
            out.extend(sub.names(full + " "))
        return out


@dataclass(frozen=True)
class Reference:
    """What the user attaches to a prompt: a file (``@path``), lines of it
    (``@path#L3-9``, ``:'<,'>GeminiAgent``, ``#selection``) or a buffer's
    diagnostics (``#diagnostics``). ``text`` is what the editor sends with it (the
    lines, a buffer's unsaved text, the diagnostics); without it the agent reads
    the file itself."""

    path: str
    start_line: int | None = None  # 1-based, inclusive
    end_line: int | None = None
    text: str | None = None
    kind: str = "file"  # or "diagnostics"

    def mention(self) -> str:
        """The CLI's ``@path#L1-2`` spelling, for transports that take plain text."""
        if self.kind == "diagnostics":
            return f"@{self.path} (diagnostics)"
        if self.start_line is None:
            return f"@{self.path}"
        if self.end_line is None or self.end_line == self.start_line:
            return f"@{self.path}#L{self.start_line}"
        return f"@{self.path}#L{self.start_line}-{self.end_line}"

    def uri(self) -> str:
        """The ``file://`` URI of what is attached (lines and diagnostics as a fragment)."""
        uri = "file://" + self.path
        if self.kind == "diagnostics":
            return uri + "#diagnostics"
        if self.start_line is not None:
            return f"{uri}#L{self.start_line}-{self.end_line or self.start_line}"
        return uri

    def label(self) -> str:
        """How the transcript shows it."""
        if self.kind == "file" and self.start_line is None and self.text is not None:
            return f"{self.mention()} (unsaved text)"
        return self.mention()


@dataclass(frozen=True)
class Prompt:
    text: str
    references: tuple[Reference, ...] = ()
    images: tuple[Image, ...] = ()  # read and checked (attach.py)


# -- events: transport -> session ---------------------------------------------------


@dataclass(frozen=True)
class MessageChunk:
    """More of the agent's answer (markdown text, appended as it comes)."""

    text: str


@dataclass(frozen=True)
class ThoughtChunk:
    """More of the agent's thinking. A ``subject`` starts a new thought."""

    text: str
    subject: str | None = None


@dataclass(frozen=True)
class ToolCallUpdate:
    """A tool call was created or changed: the whole call, upserted by ``call.id``."""

    call: ToolCall


@dataclass(frozen=True)
class ToolOutput:
    """Live output of a running tool call, appended (or replacing, ``append=False``)."""

    call_id: str
    text: str
    append: bool = True


@dataclass(frozen=True)
class StatusChange:
    """The agent's status; ``detail`` is shown with it (a reason, an error)."""

    status: AgentStatus
    detail: str = ""


@dataclass(frozen=True)
class SessionUpdate:
    """Facts about the session merged into ``state()``: for A2A ``task_id``,
    ``context_id``, ``dialect``; for ACP ``session_id``, ``mode``, ``modes``,
    ``model``, ``models``; ``None`` removes a key."""

    values: Mapping[str, Any]


@dataclass(frozen=True)
class CommandsUpdate:
    commands: tuple[SlashCommand, ...]


@dataclass(frozen=True)
class UserMessage:
    """The user's own words as the agent replays them (a resumed conversation):
    drawn as a prompt of the live panel; successive chunks join one prompt."""

    text: str


@dataclass(frozen=True)
class Notice:
    """A line for the transcript from the agent or the transport (an error, a
    reconnect); errors also reach ``vim.notify``."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass(frozen=True)
class Usage:
    """The tokens a turn used, as the agent reported them."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class TurnEnd:
    """The agent finished the prompt (``end_turn``, ``cancelled``, ``error``, ...);
    ``usage``: its tokens, when the agent says."""

    reason: str = "end_turn"
    usage: Usage | None = None


AgentEvent: TypeAlias = (
    MessageChunk
    | ThoughtChunk
    | ToolCallUpdate
    | ToolOutput
    | StatusChange
    | SessionUpdate
    | CommandsUpdate
    | Notice
    | UserMessage
    | TurnEnd
)


# -- the transcript -------------------------------------------------------------------


@dataclass
class Block:
    """One piece of the transcript, rendered as one contiguous range of lines.

    ``kind``: ``prompt`` (the user's), ``message``, ``thought``, ``tool``,
    ``notice``. Text blocks grow by appending; a tool block is re-rendered on
    each update of its call.
    """

    id: int
    kind: Literal["prompt", "message", "thought", "tool", "notice"]
    # The text as appended, joined when read (:attr:`text`): ``+=`` on an attribute
    # copies the whole text each time, quadratic over a long answer (a megabyte in a
    # thousand chunks: a third of the host's CPU, issue 25 item 3).
    parts: list[str] = field(default_factory=list)
    subject: str | None = None
    call: ToolCall | None = None
    level: str = "info"

    @property
    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def append(self, text: str) -> None:
        """Grow the block's text by ``text``."""
        self.parts.append(text)


@dataclass
class Transcript:
    """Every block in order, the index of tool blocks by call id, and the
    confirmations waiting for the user, oldest first."""

    blocks: list[Block] = field(default_factory=list)
    tool_blocks: dict[str, Block] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)  # call ids

    def new_block(self, kind: Any, **values: Any) -> Block:
        """A new block at the end; its id is unique in the host process (a new
        conversation, or an agent restarted, never reuses one: the panel keeps its
        blocks by id)."""
        if "text" in values:
            values["parts"] = [values.pop("text")]
        block = Block(next(_BLOCK_IDS), kind, **values)
        self.blocks.append(block)
        return block

    @property
    def last(self) -> Block | None:
        return self.blocks[-1] if self.blocks else None
