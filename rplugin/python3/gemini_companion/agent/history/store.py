"""The history file: read whole, changed, written whole and atomically (a
temporary file in the same folder, then a rename), under one lock per file in
this process (the conversations' transports share it; they run the store in
threads).

A file that is not a JSON list is moved aside (``<file>.corrupt-<UTC time>``) and
the history starts empty: nothing is overwritten. A file that cannot be read
(permissions) is left alone, and nothing is written over it."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable

from .records import HistoryRecord

log = logging.getLogger(__name__)

MAX_RECORDS = 500  # the least recently used are forgotten beyond this

_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


class UnreadableHistoryError(OSError):
    """The file exists but cannot be read: it must not be written over."""


def _lock_for(path: str) -> threading.Lock:
    with _locks_lock:
        return _locks.setdefault(os.path.abspath(path), threading.Lock())


def move_aside(path: str) -> str | None:
    """Move a damaged history file out of the way; where it went (None: it had gone)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = f"{path}.corrupt-{stamp}"
    n = 1
    while os.path.exists(aside):
        n += 1
        aside = f"{path}.corrupt-{stamp}-{n}"
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        return None
    return aside


class HistoryStore:
    def __init__(self, path: str, on_damaged: Callable[[str], None] | None = None) -> None:
        """``on_damaged``: told (any thread) what happened to a damaged file, for the user."""
        self.path = path
        self._lock = _lock_for(path)
        self._on_damaged = on_damaged

    def read(self) -> list[HistoryRecord]:
        """Every record (the file's order: least recently changed first)."""
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise UnreadableHistoryError(f"cannot read the history {self.path}: {exc}") from exc
        try:
            raw = json.loads(text)
            if not isinstance(raw, list):
                raise ValueError("not a JSON list")
        except ValueError as exc:
            aside = move_aside(self.path)
            log.warning("the history %s is damaged (%s): moved to %s", self.path, exc, aside)
            if self._on_damaged is not None:
                kept = os.path.basename(aside) if aside else "nowhere"
                self._on_damaged(
                    f"the history was damaged: it starts empty ({kept} kept beside it)"
                )
            return []
        return [r for r in map(HistoryRecord.from_json, raw) if r is not None]

    def _write(self, records: list[HistoryRecord]) -> None:
        directory = os.path.dirname(self.path) or "."
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".history-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump([r.to_json() for r in records[-MAX_RECORDS:]], f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def change(
        self, session_id: str, apply: Callable[[HistoryRecord | None], HistoryRecord | None]
    ) -> None:
        """Replace the record ``session_id`` by ``apply(it or None)`` (None: remove it);
        the record changed goes last (the most recently changed). A failure is logged:
        the history is the panel's memory, never a reason for a turn to fail."""
        with self._lock:
            try:
                records = self.read()
                found = next((r for r in records if r.id == session_id), None)
                if found is not None:
                    records.remove(found)
                changed = apply(found)
                if changed is None and found is None:
                    return
                if changed is not None:
                    records.append(changed)
                self._write(records)
            except OSError as exc:
                log.warning("could not update the history %s: %s", self.path, exc)

    def get(self, session_id: str) -> HistoryRecord | None:
        with self._lock:
            try:
                records = self.read()
            except OSError as exc:
                log.warning("%s", exc)
                return None
        return next((r for r in records if r.id == session_id), None)

    def workspace(self, cwd: str) -> list[HistoryRecord]:
        """The records of workspace ``cwd``, most recently used first."""
        with self._lock:
            try:
                records = self.read()
            except OSError as exc:
                log.warning("%s", exc)
                return []
        found = [r for r in records if r.cwd == cwd]
        found.sort(key=lambda r: r.updated_at, reverse=True)
        return found
