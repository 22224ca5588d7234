"""The ACP sessions of the conversation history (agent/history): what the
transport records as the agent works, so :GeminiAgentConversations and
:GeminiAgentResume can list them after a restart and the next load waits for
the CLI's minute.

Gemini CLI 0.61.0 loads a past session (``session/load``) but cannot list them
over ACP (no ``session/list``), and its own session files are its private
format. The panel records each session: id, workspace, a title (the first
prompt's first line), when it was created, last loaded and last used, and why
its last load failed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..history.records import HistoryRecord, title_of
from ..history.store import HistoryStore


def default_path(env: dict[str, str] | None = None) -> str:
    """Neovim's ``stdpath("state")`` for the default app name, when Lua gave none."""
    env = dict(os.environ if env is None else env)
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    app = env.get("NVIM_APPNAME") or "nvim"
    return os.path.join(base, app, "gemini-companion", "acp-sessions.json")


class SessionStore:
    """The history's ACP records. Blocking (file I/O): call it in a thread."""

    def __init__(self, path: str, on_damaged: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._history = HistoryStore(path, on_damaged)

    def list(self, cwd: str) -> list[Mapping[str, Any]]:
        """The sessions of workspace ``cwd``, most recently used first."""
        return [r.to_json() for r in self._history.workspace(cwd) if r.protocol == "acp"]

    def _update(self, session_id: str, cwd: str, **changes: Any) -> None:
        now = time.time()

        def apply(record: HistoryRecord | None) -> HistoryRecord:
            if record is None:
                record = HistoryRecord(session_id, cwd, "acp")
            for name, value in changes.items():
                setattr(record, name, now if value is None else value)
            record.updated_at = now
            return record

        self._history.change(session_id, apply)

    def loaded(self, session_id: str, cwd: str) -> None:
        """The agent loaded ``session_id`` now: it wrote a new record of it, named by
        this minute; the last load's failure, if any, is over."""
        self._update(session_id, cwd, loaded_at=None, error="")

    def failed(self, session_id: str, cwd: str, why: str) -> None:
        """Loading ``session_id`` failed: the history marks it, saying why."""
        self._update(session_id, cwd, error=why)

    def touch(self, session_id: str, cwd: str, title: str | None = None) -> None:
        """``session_id`` was used now (prompted): its first prompt names it."""
        now = time.time()

        def apply(record: HistoryRecord | None) -> HistoryRecord:
            if record is None:
                record = HistoryRecord(session_id, cwd, "acp", created_at=now)
            record.updated_at = now
            if title and not record.title:
                record.title = title_of(title)
            return record

        self._history.change(session_id, apply)

    def created_at(self, session_id: str) -> float:
        """When the agent made ``session_id`` (0: not known)."""
        record = self._history.get(session_id)
        return 0.0 if record is None else record.created_at
