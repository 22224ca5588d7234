"""One conversation of the history: which agent session (ACP) or task (A2A) it
is, the workspace it belongs to, its title, and its times. ``created_at`` matters
to Gemini CLI 0.61.0: it names a conversation's chat file by the UTC minute it was
created, and a load in that minute wipes it (handshake.py waits for the minute to
turn). ``error``: why the last load failed
("" when it did not)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

TITLE_LIMIT = 80  # characters of a title taken from a prompt


@dataclass
class HistoryRecord:
    id: str
    cwd: str
    protocol: str = "acp"
    title: str = ""
    created_at: float = 0.0
    loaded_at: float = 0.0
    updated_at: float = 0.0
    error: str = ""

    @classmethod
    def from_json(cls, item: object) -> HistoryRecord | None:
        """A record of the file, or None for an entry that is not one (skipped)."""
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            return None
        return cls(
            id=item["id"],
            cwd=str(item.get("cwd") or ""),
            protocol="a2a" if item.get("protocol") == "a2a" else "acp",  # older records: ACP
            title=str(item.get("title") or ""),
            created_at=_number(item.get("created_at")),
            loaded_at=_number(item.get("loaded_at")),
            updated_at=_number(item.get("updated_at")),
            error=str(item.get("error") or ""),
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def title_of(prompt: str) -> str:
    """A prompt's first non-blank line, as a title."""
    for line in prompt.splitlines():
        if line.strip():
            return " ".join(line.split())[:TITLE_LIMIT]
    return ""


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
