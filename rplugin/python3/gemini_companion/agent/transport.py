"""The line between the panel and a protocol: :class:`Transport` and its context.

A transport is one class per protocol (``a2a/transport.py``: A2A with the
``development-tool`` extension; ``acp/transport.py``: the Agent Client Protocol). The
session (``session.py``) owns one, and calls it only on the server's asyncio loop
(the same loop as the MCP server). The contract, in both directions:

Session -> transport (the user's intents; each a coroutine):

``start(events)``
    Connect to the agent (start it if needed) and remember ``events``, the
    :class:`EventSink` every later event goes to. Returns when a prompt can be
    sent. Raise :class:`TransportError` with a message for the user (what to
    install or set) when it cannot.
``prompt(prompt)``
    Send the user's prompt (text plus references and images). Events stream to the sink
    while it runs; it returns when the agent has finished with the prompt or
    waits for the user (a confirmation). Called again for a follow-up in the same
    task/session.
``answer(call_id, option_id, new_content)``
    The user's answer to the confirmation of tool call ``call_id``: the id of one
    of its :class:`~.model.Option`, or ``None``: the user rejected a request
    that offers no reject option, and the answer is the protocol's cancellation
    (ACP's ``cancelled`` outcome), never one of the options. ``call_id`` is
    unique among the pending confirmations, whatever ids the agent sends. For an
    edit, ``new_content`` is the text the user accepted (their edits to the
    proposal included) when it differs from the proposal, else ``None``; the
    transport must make that text the file's
    content (or refuse loudly). Nothing the agent asked about may run before this.
``cancel()``
    Cancel the running prompt; a new prompt must work after it.
``run_command(name, args)``
    Run a slash command (``name`` may hold sub-commands: ``"memory add"``), its
    output streaming like a prompt's.
``stop()``
    Disconnect, and stop what ``start`` started. Idempotent.
``set_mode``, ``set_model``, ``sessions``, ``resume``
    Optional: the defaults raise :class:`NotSupportedError`.

Transport -> session: :meth:`EventSink.emit` with the events of ``model.py``
(:class:`~.model.MessageChunk`, :class:`~.model.ThoughtChunk`,
:class:`~.model.ToolCallUpdate` carrying the whole call, :class:`~.model.ToolOutput`,
:class:`~.model.StatusChange`, :class:`~.model.SessionUpdate`,
:class:`~.model.CommandsUpdate`, :class:`~.model.Notice`, :class:`~.model.TurnEnd`).
``emit`` never blocks and must be called on the loop. A confirmation is a
``ToolCallUpdate`` whose call has ``status="pending"`` and a ``confirmation``; it
stays pending until the session calls ``answer`` or a later update of the same
call drops the ``confirmation`` (or finishes the call). A dropped connection is a
``StatusChange("error", why)``; the session calls ``start`` again before the next
prompt when :attr:`Transport.connected` is false.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..editor import Editor
    from ..paths import PathPolicy
    from .mcp_servers import McpServer
    from .model import AgentEvent, Prompt


def plugin_version() -> str:
    """The plugin's version, as the agent is told it (ACP's ``clientInfo``, the
    extension in the A2A server's private home)."""
    from ..server_stack import SERVER_VERSION

    return SERVER_VERSION


class TransportError(Exception):
    """A failure the user should read as it is (no traceback): a missing command,
    missing credentials, an incompatible agent, a dead connection."""


class NotSupportedError(TransportError):
    """The agent (or this protocol) does not offer what was asked."""


class EventSink(Protocol):
    def emit(self, event: AgentEvent) -> None:
        """Take one event (on the session's loop; never blocks)."""


@dataclass
class TransportContext:
    """What a transport gets from the plugin when it is created.

    ``options`` is the protocol's own table of the user's configuration
    (``agent.a2a`` or ``agent.acp``); ``env`` the environment for a child process
    (Neovim's, plus the variables of the plugin's terminals, so the agent sees
    the IDE companion); ``workspace`` the directory the agent works in;
    ``mcp_servers`` the MCP servers the plugin wants the agent to have (each a
    :class:`~.mcp_servers.McpServer`, or a mapping in ACP's or Gemini CLI's
    settings shape: ``McpServer.parse`` reads both); ``editor`` reaches Neovim
    (thread-safe, never blocks); ``paths`` gives the folders where the agent may
    read and write files not loaded in Neovim (None: anywhere); ``shared`` is one
    dict for the transports of all the panel's conversations (ACP keeps its one
    agent process there: acp/shared.py).
    """

    workspace: str
    env: Mapping[str, str]
    editor: Editor
    options: Mapping[str, Any] = field(default_factory=dict)
    mcp_servers: Sequence[McpServer | Mapping[str, Any]] = ()
    paths: Callable[[], PathPolicy | None] = lambda: None
    shared: dict[str, Any] = field(default_factory=dict)


class Transport(abc.ABC):
    """One protocol's client of the agent. See the module docstring for the contract."""

    protocol: str = ""
    """``"a2a"`` or ``"acp"``: what ``state().protocol`` says."""

    def __init__(self, context: TransportContext) -> None:
        self.context = context

    @property
    @abc.abstractmethod
    def connected(self) -> bool:
        """True while prompts can be sent without calling ``start`` again."""

    @abc.abstractmethod
    async def start(self, events: EventSink) -> None: ...

    @abc.abstractmethod
    async def prompt(self, prompt: Prompt) -> None: ...

    @abc.abstractmethod
    async def answer(
        self, call_id: str, option_id: str | None, new_content: str | None
    ) -> None: ...

    @abc.abstractmethod
    async def cancel(self) -> None: ...

    @abc.abstractmethod
    async def run_command(self, name: str, args: str) -> None: ...

    @abc.abstractmethod
    async def stop(self) -> None: ...

    async def set_mode(self, mode_id: str) -> None:
        raise NotSupportedError(f"the {self.protocol} agent has no modes")

    async def set_model(self, model_id: str) -> None:
        raise NotSupportedError(f"the {self.protocol} agent cannot switch models")

    async def sessions(self) -> list[Mapping[str, Any]]:
        """Past sessions that :meth:`resume` can load: ``{id, title?, updated_at?}``."""
        raise NotSupportedError(f"the {self.protocol} agent cannot resume sessions")

    async def resume(self, session_id: str) -> None:
        raise NotSupportedError(f"the {self.protocol} agent cannot resume sessions")

    def takes_images(self) -> bool:
        """Whether a prompt may carry images (asked once started)."""
        return True

    def health(self) -> Mapping[str, Any]:
        """What ``:checkhealth`` shows about this agent (command, version, ...)."""
        return {}
