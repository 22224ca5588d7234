"""The ACP sessions the panel started, remembered so ``:GeminiAgentResume`` can list them.

Gemini CLI 0.61.0 loads a past session (``session/load``) but cannot list them over
ACP (no ``session/list``), and its own session files are its private format. The
panel records each session it creates: id, workspace, a title (the first prompt),
times. One small JSON file, rewritten whole (atomically) on change; a damaged
file reads as empty rather than breaking the panel.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

log = logging.getLogger(__name__)

MAX_SESSIONS = 200  # the oldest are forgotten beyond this


@dataclass
class SessionRecord:
    id: str
    cwd: str
    title: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0


def default_path(env: dict[str, str] | None = None) -> str:
    """Neovim's ``stdpath("state")`` for the default app name, when Lua gave none."""
    env = dict(os.environ if env is None else env)
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    app = env.get("NVIM_APPNAME") or "nvim"
    return os.path.join(base, app, "gemini-companion", "acp-sessions.json")


class SessionStore:
    def __init__(self, path: str) -> None:
        self.path = path

    def _load(self) -> list[SessionRecord]:
        try:
            with open(self.path, encoding="utf-8") as f:
                raw = json.load(f)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("ignoring the session list %s: %s", self.path, exc)
            return []
        records = []
        for item in raw if isinstance(raw, list) else []:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                records.append(
                    SessionRecord(
                        id=item["id"],
                        cwd=str(item.get("cwd") or ""),
                        title=str(item.get("title") or ""),
                        created_at=float(item.get("created_at") or 0),
                        updated_at=float(item.get("updated_at") or 0),
                    )
                )
        return records

    def _save(self, records: list[SessionRecord]) -> None:
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".acp-sessions-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump([asdict(r) for r in records[-MAX_SESSIONS:]], f, indent=1)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("could not save the session list %s: %s", self.path, exc)
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)

    def list(self, cwd: str) -> list[Mapping[str, Any]]:
        """The sessions of workspace ``cwd``, most recently used first."""
        records = [r for r in self._load() if r.cwd == cwd]
        records.sort(key=lambda r: r.updated_at, reverse=True)
        return [asdict(r) for r in records]

    def touch(self, session_id: str, cwd: str, title: str | None = None) -> None:
        """Record that ``session_id`` was used now (created, prompted or loaded)."""
        now = time.time()
        records = self._load()
        record = next((r for r in records if r.id == session_id), None)
        if record is None:
            record = SessionRecord(session_id, cwd, created_at=now)
        else:
            records.remove(record)
        record.updated_at = now
        if title and not record.title:
            record.title = " ".join(title.split())[:80]
        records.append(record)
        self._save(records)
