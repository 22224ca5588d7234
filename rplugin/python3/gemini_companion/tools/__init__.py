"""The MCP tools, as a registry: each tool's name, schema and handler in one place.

A :class:`Tool` is one entry; a :class:`ToolRegistry` is what one MCP endpoint
serves (server.py lists and dispatches it, knowing no tool by name). Two
registries exist: the IDE spec's diff tools on ``/mcp`` (:mod:`.ide`) and
Neovim's own tools on ``/tools`` (:mod:`.neovim`). They are kept apart because
the CLI's IDE client ignores every tool but the two diff tools, while an
``mcpServers`` entry exposes every tool it lists to the model: the model must
never see ``openDiff``.

This module is the ground floor of the package and imports nothing of the
companion.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

# Where each registry is served (security.py allows exactly these paths).
IDE_PATH = "/mcp"
TOOLS_PATH = "/tools"


@dataclass(frozen=True)
class ToolResult:
    """What a tool answers: text parts (none for an empty ``content``) and the error flag."""

    texts: tuple[str, ...] = ()
    is_error: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls((message,), True)


class ToolError(Exception):
    """A call the tool refuses; the message is what the caller (often a model) reads,
    so it says what was wrong and what to do instead."""


Handler = Callable[[str | None, Mapping[str, Any]], Awaitable[ToolResult]]
"""``handler(session_id, arguments)``, run on the server loop."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Handler
    read_only: bool = True


@dataclass
class ToolRegistry:
    """The tools of one MCP endpoint, in the order they are listed."""

    name: str
    tools: dict[str, Tool] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, tools: Iterable[Tool]) -> ToolRegistry:
        registry = cls(name)
        for tool in tools:
            registry.add(tool)
        return registry

    def add(self, tool: Tool) -> None:
        if tool.name in self.tools:
            raise ValueError(f"tool {tool.name!r} is registered twice in {self.name}")
        self.tools[tool.name] = tool

    def __iter__(self) -> Any:
        return iter(self.tools.values())

    def __len__(self) -> int:
        return len(self.tools)

    async def call(
        self, session_id: str | None, name: str, arguments: Mapping[str, Any] | None
    ) -> ToolResult:
        """Run one ``tools/call``: an unknown name, arguments that are not an object,
        a :class:`ToolError` or any other failure all become an error result."""
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            return ToolResult.error(f"Unknown tool: {name} (this server has: {known})")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return ToolResult.error(f"{name}: the arguments must be a JSON object")
        log.info("tool %s called on %s (session %s)", name, self.name, session_id)
        try:
            return await tool.handler(session_id, arguments)
        except ToolError as exc:
            return ToolResult.error(f"{name}: {exc}")
        except Exception as exc:
            log.exception("tool %s failed", name)
            return ToolResult.error(f"{name} failed: {exc}")
