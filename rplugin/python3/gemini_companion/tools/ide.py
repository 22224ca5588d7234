"""The IDE companion spec's tools, served on ``/mcp``: ``openDiff`` and ``closeDiff``.

Spec: ide-companion-spec.md section III; client-behaviour.md adds
``suppressNotification`` to closeDiff. The CLI enables diffing only when both are
listed. Their behaviour lives in :class:`~gemini_companion.diff.DiffController`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from . import Tool, ToolRegistry, ToolResult


class DiffTools(Protocol):
    """What answers the two tools: :class:`~gemini_companion.diff.DiffController`,
    which imports this package; a protocol, so nothing here imports it back."""

    async def open_diff(self, session_id: str | None, arguments: Mapping[str, Any]) -> ToolResult:
        """openDiff."""

    async def close_diff(self, session_id: str | None, arguments: Mapping[str, Any]) -> ToolResult:
        """closeDiff."""


OPEN_DIFF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "filePath": {"type": "string", "description": "Absolute path of the file to diff"},
        "newContent": {"type": "string", "description": "The proposed new content"},
    },
    "required": ["filePath", "newContent"],
}
CLOSE_DIFF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "filePath": {"type": "string", "description": "Absolute path of the diffed file"},
        "suppressNotification": {"type": "boolean"},
    },
    "required": ["filePath"],
}


def ide_tools(diffs: DiffTools) -> ToolRegistry:
    return ToolRegistry.of(
        "ide",
        [
            Tool(
                "openDiff",
                "Show a proposed change as a diff in Neovim for review",
                OPEN_DIFF_SCHEMA,
                diffs.open_diff,
                read_only=False,
            ),
            Tool(
                "closeDiff",
                "Close the diff view of a file and return its final content",
                CLOSE_DIFF_SCHEMA,
                diffs.close_diff,
                read_only=False,
            ),
        ],
    )
