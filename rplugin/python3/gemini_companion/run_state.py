"""What a run publishes and says outside the run itself: the state of a companion
whose server does not run (:func:`stopped_state`), why a start failed
(:class:`StartError`), and what the run keeps of each CLI session
(:class:`SessionInfo`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class SessionInfo:
    session_id: str
    connected_at: float


def stopped_state(workspace_path: str, error: str | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {
        "running": False,
        "env": {},
        "sessions": [],
        "workspace_path": workspace_path,
    }
    if error is not None:
        state["error"] = error
    return state


class StartError(Exception):
    """Why a start failed, as the user is told."""
