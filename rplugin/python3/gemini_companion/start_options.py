"""What the Lua side sends with ``start`` (lua/gemini_companion/init.lua), as the
run (run.py) reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .tools.neovim import ToolDescription


@dataclass
class StartOptions:
    """What the Lua side passes to ``start`` (lua/gemini_companion/init.lua): the user's
    options merged over the option schema's defaults (lua/gemini_companion/options.lua)
    and validated by config.lua. No option has a default here: Lua sends every one,
    so each default lives in the schema alone."""

    nvim_pid: int
    workspace_dirs: list[str]
    keep_alive_seconds: float
    max_body_bytes: int
    context_debounce_ms: float
    allowed_dirs: list[str]
    tools_enabled: bool
    context_trusted: bool | None = None  # unset in the schema: nothing is sent to the CLI
    # Neovim's tools as lua/gemini_companion/tools/ describes them (served on /tools).
    tools: list[ToolDescription] = field(default_factory=list)
    quiet: bool = False  # a start by the plugin itself: no "already running" message
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_lua(cls, raw: Mapping[str, Any]) -> StartOptions:
        context, tools = raw["context"], raw["tools"]
        trusted = context.get("trusted")
        return cls(
            nvim_pid=int(raw["nvim_pid"]),
            # An empty Lua table may arrive as a map: iterating it gives nothing either way.
            workspace_dirs=[str(d) for d in raw["workspace_dirs"]],
            keep_alive_seconds=float(raw["keep_alive_seconds"]),
            max_body_bytes=int(raw["max_body_bytes"]),
            context_debounce_ms=float(context["debounce_ms"]),
            allowed_dirs=[str(d) for d in raw["allowed_dirs"]],
            tools_enabled=bool(tools["enabled"]),
            context_trusted=trusted if isinstance(trusted, bool) else None,
            tools=[ToolDescription.from_lua(t) for t in tools.get("list") or []],
            quiet=raw.get("quiet") is True,
            extra=dict(raw),
        )
