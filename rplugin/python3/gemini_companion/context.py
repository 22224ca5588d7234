"""What the user is looking at, as ``ide/contextUpdate`` (ide-companion-spec.md section II).

:class:`ContextTracker` lives on the server loop. The Lua side
(lua/gemini_companion/context.lua) forwards editor events to it with
``rpcnotify``; it never calls back into Neovim. Buffers are keyed by buffer
number, so a rename keeps a file's place and focus time.

Timing: buffer events (open, focus, close, rename, write) are debounced here, a
trailing ``debounce_ms`` timer on the loop. Cursor and selection events arrive
already debounced by a timer in Lua (one ``vim.uv`` timer restart per
``CursorMoved`` is much cheaper on Neovim's main loop than one ``rpcnotify``), so
they flush at once instead of waiting a second time.

What is sent follows client-behaviour.md: only files that exist on disk, most
recently focused first, each with a millisecond focus timestamp; only the active
file carries ``isActive``, ``cursor`` and ``selectedText``; at most 10 files and
16 KiB of selection; absent fields are omitted, never ``null``; ``isTrusted`` only
when configured; each session gets an update only when it differs from the last
one that session got.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .sessions import SessionStream

log = logging.getLogger(__name__)

METHOD = "ide/contextUpdate"
MAX_OPEN_FILES = 10
MAX_SELECTION_BYTES = 16 * 1024
TRUNCATION_MARK = "... [TRUNCATED]"  # what the CLI itself appends when it cuts
# Never-focused or missing files are skipped while looking for the files to send;
# this bounds the stat() calls one update can make.
MAX_CANDIDATES = MAX_OPEN_FILES + 54

Params = dict[str, Any]


class ContextStreams(Protocol):
    """The part of :class:`~gemini_companion.sessions.SessionStreams` used here."""

    @property
    def streams(self) -> Mapping[str, SessionStream]: ...

    async def notify(self, session_id: str, method: str, params: Mapping[str, Any]) -> bool: ...


def clean_text(value: Any) -> str:
    """A str that JSON-encodes to valid UTF-8 (pynvim keeps undecodable bytes as
    lone surrogates, which would make the SSE write fail)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    text = str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text


def cap_selection(text: str, limit: int = MAX_SELECTION_BYTES) -> str:
    """``text`` if it fits in ``limit`` UTF-8 bytes, else a prefix cut at a character
    boundary plus :data:`TRUNCATION_MARK`, the whole within ``limit`` bytes (and so
    within the CLI's 16384-character cut, which then never adds a second mark)."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    room = limit - len(TRUNCATION_MARK.encode("utf-8"))
    return raw[:room].decode("utf-8", "ignore") + TRUNCATION_MARK


@dataclass
class OpenFile:
    path: str
    timestamp: int  # ms since the epoch; ordering key
    focused: bool = False
    cursor: tuple[int, int] | None = None  # 1-based line, 1-based character


def _cursor(line: Any, character: Any) -> tuple[int, int]:
    # 1-based both; Neovim reports character 0 in a buffer not read yet.
    return max(int(line), 1), max(int(character), 1)


class ContextTracker:
    """Open files, focus, cursor and selection; builds and sends ``ide/contextUpdate``.

    Every method runs on the server loop (reach it with ``CompanionServer.call_soon``).
    """

    def __init__(
        self,
        streams: Callable[[], ContextStreams | None],
        *,
        debounce_ms: float,  # context.debounce_ms: its default is the option schema's
        trusted: bool | None = None,
        clock: Callable[[], float] = time.time,
        is_file: Callable[[str], bool] = os.path.isfile,
    ) -> None:
        self._streams = streams
        self.debounce = max(0.0, float(debounce_ms)) / 1000.0
        self.trusted = trusted
        self._clock = clock
        self._is_file = is_file
        # Oldest first; the focused file is the last entry. Never-focused buffers
        # are inserted at the front, below every focused one.
        self._files: OrderedDict[int, OpenFile] = OrderedDict()
        self._selection: str | None = None
        self._last_ms = 0
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._last: Params | None = None  # the last update built
        self._sent: dict[str, Params] = {}  # per session: the last update it got
        self._tasks: set[asyncio.Task[None]] = set()

    # -- events from Lua ------------------------------------------------------------

    def handle(self, kind: str, args: Sequence[Any]) -> None:
        """Dispatch one forwarded event; bad input is logged, never raised."""
        handler = _HANDLERS.get(kind)
        if handler is None:
            log.warning("unknown context event %r", kind)
            return
        try:
            handler(self, *args)
        except Exception:  # a bad event must not take the loop callback down
            log.warning("malformed context event %r %r", kind, args, exc_info=True)

    def buffer(self, bufnr: Any, path: Any) -> None:
        """A listed file buffer exists (added, renamed or written)."""
        key, name = int(bufnr), clean_text(path)
        entry = self._files.get(key)
        if entry is None:
            front = next(iter(self._files.values()), None)
            stamp = front.timestamp - 1 if front is not None else self._now_ms()
            self._files[key] = OpenFile(name, stamp)
            self._files.move_to_end(key, last=False)
        else:
            entry.path = name
        self._schedule()

    def focus(self, bufnr: Any, path: Any, line: Any, character: Any) -> None:
        """The user entered a file buffer: it becomes the active file. Entering the
        file that is already active (back from the terminal, another window on it)
        keeps its timestamp, and its selection unless the cursor differs."""
        key, name = int(bufnr), clean_text(path)
        cursor = _cursor(line, character)
        entry = self._files.get(key)
        active = self.active
        if entry is not None and entry is active:
            entry.path = name
            if entry.cursor != cursor:
                entry.cursor = cursor
                self._selection = None
            self._schedule()
            return
        self._selection = None  # a selection belongs to the file it was made in
        if entry is None:
            entry = self._files[key] = OpenFile(name, 0)
        entry.path = name
        entry.timestamp = self._now_ms()
        entry.focused = True
        entry.cursor = cursor
        self._files.move_to_end(key)
        self._schedule()

    def close(self, bufnr: Any) -> None:
        """The buffer was deleted, wiped out, unlisted or stopped being a file."""
        key = int(bufnr)
        if key not in self._files:
            return
        was_active = self._files[key] is self.active
        del self._files[key]
        if was_active:
            self._selection = None
        self._schedule()

    def cursor(self, bufnr: Any, line: Any, character: Any) -> None:
        """The cursor settled (debounced in Lua) in the active file, outside Visual mode.
        A move clears the selection; a position equal to the known one does not, so a
        selection survives a trip to the terminal and back."""
        active = self.active
        if active is None or self._files.get(int(bufnr)) is not active:
            return
        cursor = _cursor(line, character)
        if cursor != active.cursor:
            active.cursor = cursor
            self._selection = None
        self.flush()

    def selection(self, bufnr: Any, line: Any, character: Any, text: Any = None) -> None:
        """The Visual selection settled (debounced in Lua), or was final on leaving Visual mode."""
        active = self.active
        if active is None or self._files.get(int(bufnr)) is not active:
            return
        active.cursor = _cursor(line, character)
        self._selection = cap_selection(clean_text(text)) if text else None
        self.flush()

    def sync(self, buffers: Sequence[Sequence[Any]], focus: Sequence[Any] | None = None) -> None:
        """The whole picture, sent when forwarding starts: ``buffers`` are
        ``[bufnr, path, lastused_seconds]`` (0: never focused); ``focus`` is
        ``[bufnr, line, character]`` or empty. Buffers already known under the same
        path keep their entries, so a repeated sync with nothing changed sends nothing."""
        old = self._files
        active_before = self.active
        files: dict[int, OpenFile] = {}
        never: list[tuple[int, str]] = []
        previous = 0
        rows = sorted(
            ((int(b[0]), clean_text(b[1]), float(b[2] or 0)) for b in buffers),
            key=lambda row: row[2],
        )
        for key, name, lastused in rows:
            known = old.get(key)
            if known is not None and known.path == name:
                files[key] = known
            elif lastused > 0:
                previous = max(int(lastused * 1000), previous + 1)
                files[key] = OpenFile(name, previous, focused=True)
            else:
                never.append((key, name))
        oldest = min((f.timestamp for f in files.values()), default=self._now_ms())
        for offset, (key, name) in enumerate(reversed(never), start=1):
            files[key] = OpenFile(name, oldest - offset)
        self._files = OrderedDict(sorted(files.items(), key=lambda item: item[1].timestamp))
        self._last_ms = max([self._last_ms, *(f.timestamp for f in files.values())])
        entry = self._files.get(int(focus[0])) if focus else None
        if focus and entry is not None:
            cursor = _cursor(focus[1], focus[2])
            if entry is not active_before or entry.cursor != cursor:
                self._selection = None
                entry.timestamp = self._now_ms()
            entry.focused = True
            entry.cursor = cursor
            self._files.move_to_end(int(focus[0]))
        elif self.active is not active_before:
            self._selection = None
        self._schedule()

    # -- state ----------------------------------------------------------------------

    @property
    def active(self) -> OpenFile | None:
        """The most recently focused file, which stays active while the user is in a
        terminal or any other non-file buffer."""
        if not self._files:
            return None
        last = next(reversed(self._files.values()))
        return last if last.focused else None

    def build(self) -> Params:
        """The ``IdeContext`` to send now. Stats at most :data:`MAX_CANDIDATES` files."""
        active = self.active
        files: list[Params] = []
        for examined, entry in enumerate(reversed(self._files.values())):
            if len(files) == MAX_OPEN_FILES or examined == MAX_CANDIDATES:
                break
            try:
                exists = self._is_file(entry.path)
            except (OSError, ValueError):
                exists = False
            if not exists:
                continue
            item: Params = {"path": entry.path, "timestamp": entry.timestamp}
            if entry is active:
                item["isActive"] = True
                if entry.cursor is not None:
                    item["cursor"] = {"line": entry.cursor[0], "character": entry.cursor[1]}
                if self._selection:
                    item["selectedText"] = self._selection
            files.append(item)
        workspace: Params = {"openFiles": files}
        if self.trusted is not None:
            workspace["isTrusted"] = self.trusted
        return {"workspaceState": workspace}

    # -- sending --------------------------------------------------------------------

    def _now_ms(self) -> int:
        # Strictly increasing, so two focus changes in one millisecond keep their order.
        self._last_ms = max(int(self._clock() * 1000), self._last_ms + 1)
        return self._last_ms

    def _schedule(self) -> None:
        """Trailing debounce: flush ``debounce`` seconds after the last call."""
        loop = asyncio.get_running_loop()
        self._due = loop.time() + self.debounce
        if self._timer is None:
            self._timer = loop.call_at(self._due, self._on_timer)

    def _on_timer(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() < self._due:  # re-armed meanwhile: wait for the new deadline
            self._timer = loop.call_at(self._due, self._on_timer)
            return
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Build now and send to every session whose last update differs."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        params = self.build()
        if params == self._last:
            return
        self._last = params
        streams = self._streams()
        if streams is None:
            return
        targets = [sid for sid in streams.streams if self._sent.get(sid) != params]
        if not targets:
            return
        for sid in targets:
            self._sent[sid] = params
        task = asyncio.get_running_loop().create_task(self._deliver(streams, targets, params))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, streams: ContextStreams, targets: list[str], params: Params) -> None:
        for sid in targets:
            try:
                await streams.notify(sid, METHOD, params)
            except Exception:
                log.exception("context update to session %s failed", sid)

    def snapshot(self) -> Params:
        """What a newly connected session should see: the update the others have."""
        if self._last is None:
            self._last = self.build()
        return self._last

    async def session_opened(self, stream: SessionStream) -> None:
        """Send the current context on a stream that has just opened."""
        params = self.snapshot()
        if self._sent.get(stream.session_id) == params:
            return
        self._sent[stream.session_id] = params
        await stream.notify(METHOD, params)

    def session_closed(self, session_id: str) -> None:
        self._sent.pop(session_id, None)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


_HANDLERS: dict[str, Callable[..., None]] = {
    "buffer": ContextTracker.buffer,
    "focus": ContextTracker.focus,
    "close": ContextTracker.close,
    "cursor": ContextTracker.cursor,
    "selection": ContextTracker.selection,
    "sync": ContextTracker.sync,
}
