"""The IDE companion spec's tools, served on ``/mcp``: ``openDiff`` and ``closeDiff``.

Spec: ide-companion-spec.md section III; client-behaviour.md adds
``suppressNotification`` to closeDiff. The CLI enables diffing only when both are
listed. Their behaviour lives in :class:`~gemini_companion.diff.DiffController`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import Tool, ToolRegistry

if TYPE_CHECKING:
    from ..diff import DiffController

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


def ide_tools(diffs: DiffController) -> ToolRegistry:
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
