"""The A2A ``development-tool`` extension's encodings, both of them, as plain data.

Two dialects carry the same events (a2a-development-tool-extension.md and
client-behaviour.md, "The A2A server"), one module each:

- ``rfc.py``: the RFC's, metadata keyed by the extension URI, a flat ``ToolCall``
  whose ``confirmation_request`` holds the options.
- ``coder_agent.py``: what ``@google/gemini-cli-a2a-server`` 0.25.2 sends,
  metadata ``coderAgent`` and the agent's own tool-call object, no options.

What both share:

- ``extension.py``: the extension's URI and version, and the dialect an agent
  card chooses (:func:`check_extension`).
- ``update.py``: an event, normalised (:class:`Update`) from a2a-sdk's objects or
  from the real server's REST command stream, whichever dialect it speaks.
- ``fields.py``: a field under either proto3 JSON spelling, a value as text.

This module is the one entry: the transport imports ``devtool`` alone and hands it
the dialect; it picks the dialect's module. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model import SlashCommand, ToolCall
from . import coder_agent, rfc
from .extension import (
    CODER_AGENT,
    EXTENSION_URI,
    RFC,
    IncompatibleAgentError,
    check_extension,
    extension_version,
    is_extension,
)
from .fields import get
from .update import Update, from_sdk, from_v03

__all__ = [
    "CODER_AGENT",
    "EXTENSION_URI",
    "RFC",
    "IncompatibleAgentError",
    "Update",
    "agent_settings",
    "check_extension",
    "confirmation_answer",
    "extension_version",
    "from_sdk",
    "from_v03",
    "get",
    "is_extension",
    "slash_commands",
    "tool_call",
]


def tool_call(dialect: str, data: Mapping[str, Any]) -> ToolCall | None:
    """The tool call in a DataPart, read by its shape (both dialects): None when it
    holds none, or one without an id."""
    if isinstance(data.get("request"), Mapping):
        call = coder_agent.tool_call(data)
    elif get(data, "tool_call_id") is not None:
        call = rfc.tool_call(data)
    else:
        return None
    return call if call.id else None


# -- client -> agent -----------------------------------------------------------------


def agent_settings(dialect: str, workspace: str) -> dict[str, Any]:
    """The first message's metadata: the agent's settings with the workspace."""
    if dialect == RFC:
        return rfc.agent_settings(workspace)
    return coder_agent.agent_settings(workspace)


def confirmation_answer(
    dialect: str, call_id: str, option_id: str, new_content: str | None
) -> dict[str, Any]:
    """The DataPart of the user's answer (``ToolCallConfirmation``)."""
    if dialect == RFC:
        return rfc.confirmation_answer(call_id, option_id, new_content)
    return coder_agent.confirmation_answer(call_id, option_id, new_content)


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
