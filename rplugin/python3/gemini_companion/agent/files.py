"""The agent's file reads and writes, served by Neovim (ACP ``fs/*``).

``fs/read_text_file`` answers from the file's loaded buffer when there is one,
unsaved edits included, else from disk. ``fs/write_text_file`` goes through the
buffer when the file is loaded: the change lands as one undo step and the buffer
is written; user edits made since the agent read the file survive where they do
not touch the same lines (merge.py), and a write that would clobber them is
refused with an error the agent and the user both read. Files not loaded in
Neovim are read and written on disk.

The path policy (paths.py): a path with a control character is refused; a file is
read only under the workspace folders, the agent's workspace and
``diff.allowed_dirs``, links resolved, loaded in Neovim or not (an open buffer is
no consent to the agent reading it); one not loaded is written only there too.
On disk only regular files are read or written, a read stops at
:data:`MAX_READ_BYTES` (reader.py, the reader of a prompt's attachments too), and
the policy is checked on the open descriptor the file is used through
(``open_within``/``create_within``): a link swapped after a look cannot lead out.

A file that does not exist, where the policy allows it, reads as empty text.
Gemini CLI 0.61.0's ``write_file`` reads the file through ``fs/read_text_file``
before writing it, to tell a creation from an overwrite, and takes only an error
whose *message* says "not found" as absence; its ACP SDK hands it the JSON-RPC
error object, whose text is ``[object Object]``, so any error the client answers
failed the creation ("Error checking existing file"). Empty text makes it an
overwrite of an empty file, which works (the write then makes missing folders
within the policy, :func:`~gemini_companion.paths.create_within`). The CLI's
own ``read_file`` looks at the disk first and never asks for a missing file; its
``replace`` with an empty ``old_string`` (its way to create) is then refused by
the CLI as "a file that already exists", and the model falls back to
``write_file``.

What the agent read is kept only where a write needs it, as the base of a merge
into a loaded buffer: by real path (one entry however the path is spelled), at
most :data:`MAX_BASE_CHARS` in all, a bigger text by its changedtick alone.

An edit the user reviewed in the diff tab and accepted with changes is recorded
with :meth:`EditorFiles.expect_write`: the agent then writes its own proposal
(it knows nothing of the user's version), and the user's version is what lands.

Runs on the server loop; the buffers are reached through the
:class:`~gemini_companion.editor.Editor` (``read_buffer``/``apply_buffer_edits``,
answered by lua/gemini_companion/agent/files.lua).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from ..editor import Editor
from ..paths import (
    NotRegularFileError,
    OutsidePolicyError,
    PathPolicy,
    check_regular_or_absent,
    create_within,
    has_control,
    open_within,
    shown,
)
from ..text import from_buffer, to_buffer
from .merge import MergeConflictError, hunks, merge
from .reader import TooLargeError, read_text

log = logging.getLogger(__name__)

# A buffer changed between our read and our write (the user typed): read again,
# merge again. More attempts than this means someone types faster than we merge.
_APPLY_ATTEMPTS = 3

# The most the agent reads of one file: the Gemini CLI's own read tool refuses
# files over 20 MB, and a larger text only fills the agent's context and memory.
MAX_READ_BYTES = 20 * 1024 * 1024


class FileAccessError(Exception):
    """A read or write that cannot be done, with the reason the agent gets."""


@dataclass(frozen=True)
class BufferState:
    """A loaded buffer's text, as files.lua reports it."""

    lines: list[str]
    eol: bool
    fileformat: str
    tick: int
    modified: bool

    @property
    def text(self) -> str:
        return from_buffer(self.lines, self.eol, self.fileformat)

    @classmethod
    def from_lua(cls, raw: Mapping[str, Any]) -> BufferState:
        return cls(
            lines=[str(line) for line in raw["lines"]],
            eol=bool(raw["eol"]),
            fileformat=str(raw["fileformat"]),
            tick=int(raw["tick"]),
            modified=bool(raw["modified"]),
        )


def select_lines(text: str, line: int | None, limit: int | None) -> str:
    """``limit`` lines of ``text`` from 1-based ``line`` (ACP's read parameters).
    Lines end at ``\n``; only the lines wanted are looked at, no list of all."""
    if line is None and limit is None:
        return text
    start = _line_offset(text, 0, max((line or 1) - 1, 0))
    if limit is None:
        return text[start:]
    return text[start : _line_offset(text, start, max(limit, 0))]


def _line_offset(text: str, offset: int, lines: int) -> int:
    """Where the text ``lines`` lines after ``offset`` starts (its end at most)."""
    for _ in range(lines):
        newline = text.find("\n", offset)
        if newline < 0:
            return len(text)
        offset = newline + 1
    return offset


# The bases of the agent's buffer writes (what it last read of a loaded file) are
# kept up to this many characters in all, the oldest forgotten first; a bigger text
# is kept as its changedtick only (written over only if the buffer did not change).
MAX_BASE_CHARS = 4 * 1024 * 1024


@dataclass
class _Base:
    tick: int | None
    text: str | None


class _Bases:
    """What the agent last read of each loaded file, by real path (one entry
    however the path is spelled), bounded by :data:`MAX_BASE_CHARS`."""

    def __init__(self) -> None:
        self._bases: collections.OrderedDict[str, _Base] = collections.OrderedDict()
        self._chars = 0

    def get(self, path: str) -> _Base | None:
        return self._bases.get(os.path.realpath(path))

    def forget(self, path: str) -> None:
        old = self._bases.pop(os.path.realpath(path), None)
        if old is not None and old.text is not None:
            self._chars -= len(old.text)

    def put(self, path: str, tick: int | None, text: str) -> None:
        self.forget(path)
        kept = text if len(text) <= MAX_BASE_CHARS else None
        self._bases[os.path.realpath(path)] = _Base(tick, kept)
        self._chars += len(kept or "")
        while self._chars > MAX_BASE_CHARS:
            _, oldest = self._bases.popitem(last=False)
            self._chars -= len(oldest.text or "")


class EditorFiles:
    """``fs/read_text_file`` and ``fs/write_text_file`` through Neovim's buffers."""

    def __init__(
        self, editor: Editor, policy: Callable[[], PathPolicy | None] = lambda: None
    ) -> None:
        """``policy`` gives the folders files not loaded in Neovim may be reached in;
        None: anywhere."""
        self._editor = editor
        self._policy = policy
        # What the agent last read of each loaded file: the base its next write of
        # that buffer was computed from (a file on disk is written whole).
        self._bases = _Bases()
        # path -> (the agent's proposal, the user's accepted version of it)
        self._expected: dict[str, tuple[str, str]] = {}

    async def _buffer(self, path: str) -> BufferState | None:
        raw = await asyncio.wrap_future(self._editor.read_buffer(path))
        return BufferState.from_lua(raw) if isinstance(raw, Mapping) else None

    def _check_reach(self, path: str, *, reading: bool = False) -> None:
        """Refused outside the policy's folders, links resolved (looked at here for
        the message; on disk the descriptor is checked again as it is used)."""
        policy = self._policy()
        if policy is not None and not policy.allows(path):
            self._refuse_outside(path, reading=reading)

    def _refuse_outside(self, path: str, *, reading: bool = False) -> NoReturn:
        policy = self._policy()
        roots = ", ".join(policy.roots) if policy is not None else "none"
        if reading:
            raise FileAccessError(
                f"{shown(path)} is outside the workspace folders ({roots}): refused, open"
                " in Neovim or not. Add its folder to the diff.allowed_dirs option to let"
                " the agent read it, or attach it to a prompt with @."
            )
        raise FileAccessError(
            f"{shown(path)} is outside the workspace folders ({roots}) and not open in"
            " Neovim: refused. Open the file in Neovim first, or add its folder to the"
            " diff.allowed_dirs option."
        )

    async def check_edit(self, path: str) -> None:
        """An edit the agent asks permission for is shown only if ``path`` passes
        ``openDiff``'s policy: absolute, no control character, a regular file or
        none yet, and under the policy's folders unless loaded in Neovim. Raises
        :class:`FileAccessError` saying why, before anything shows the path."""
        _check_path(path)
        try:
            await asyncio.to_thread(check_regular_or_absent, path)
        except NotRegularFileError as exc:
            raise FileAccessError(str(exc)) from None
        except OSError as exc:
            raise FileAccessError(f"cannot use {shown(path)}: {exc.strerror or exc}") from None
        policy = self._policy()
        if policy is not None and not policy.allows(path) and await self._buffer(path) is None:
            self._check_reach(path)

    def outside(self, path: str) -> bool:
        """``path`` is outside the policy's folders (shown only if loaded in Neovim)."""
        policy = self._policy()
        return policy is not None and not policy.allows(path)

    # -- reads ---------------------------------------------------------------------------

    async def read(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        _check_path(path)
        self._check_reach(path, reading=True)  # a loaded buffer too (issue 29, 6b)
        buffer = await self._buffer(path)
        if buffer is not None:
            text = buffer.text
            if len(text) > MAX_READ_BYTES:  # characters: at least as many bytes
                raise FileAccessError(_too_large(path))
            self._bases.put(path, buffer.tick, text)
        else:
            self._bases.forget(path)
            try:
                text = await asyncio.to_thread(_read_disk, path, self._policy())
            except FileNotFoundError:
                # Absent (its folders too, maybe): empty, so the CLI's write_file
                # proceeds as a creation; see the module's docstring.
                log.info("the agent read %s, which does not exist: answered empty", path)
                text = ""
            except IsADirectoryError:
                raise FileAccessError(f"{shown(path)} is a directory") from None
            except OutsidePolicyError:
                self._refuse_outside(path, reading=True)
            except OSError as exc:
                raise FileAccessError(f"cannot read {shown(path)}: {exc.strerror or exc}") from None
        return select_lines(text, line, limit)

    # -- writes --------------------------------------------------------------------------

    def expect_write(self, path: str, proposal: str, accepted: str) -> None:
        """The user accepted ``proposal`` for ``path`` as ``accepted``: the agent's
        next write of ``proposal`` there writes ``accepted`` instead."""
        self._expected[path] = (proposal, accepted)

    def forget_expected(self) -> None:
        """The turn ended: a user's version the agent did not write in it is not kept
        for a later write of the same proposal."""
        self._expected.clear()

    async def write(self, path: str, content: str) -> None:
        _check_path(path)
        expected = self._expected.pop(path, None)
        if expected is not None:
            proposal, accepted = expected
            if content == proposal:
                log.info("writing the user's accepted version of %s", path)
                content = accepted
            else:
                log.warning("the agent wrote %s, not the proposal the user accepted", path)
        base = self._bases.get(path)
        for _ in range(_APPLY_ATTEMPTS):
            buffer = await self._buffer(path)
            if buffer is None:
                self._check_reach(path)
                await self._write_disk(path, content)
                break
            if await self._write_buffer(path, buffer, base, content):
                break
        else:
            raise FileAccessError(f"{path} kept changing in Neovim while the agent wrote it")

    async def _write_disk(self, path: str, content: str) -> None:
        self._bases.forget(path)
        try:
            await asyncio.to_thread(_write_disk, path, content, self._policy())
        except OutsidePolicyError:
            self._refuse_outside(path)
        except OSError as exc:
            raise FileAccessError(f"cannot write {shown(path)}: {exc.strerror or exc}") from None

    async def _write_buffer(
        self, path: str, buffer: BufferState, base: _Base | None, content: str
    ) -> bool:
        """Apply ``content`` to the loaded buffer; False when it changed meanwhile."""
        new = to_buffer(content)
        ours = buffer.lines
        if base is not None and base.text is not None:
            base_lines = to_buffer(base.text).lines
        elif base is not None and base.tick == buffer.tick:
            base_lines = ours  # too big to keep, and unchanged since the agent read it
        elif buffer.modified or base is not None:
            raise FileAccessError(
                f"{path} has changes in Neovim the agent did not read: read the file again"
                " before writing it"
            )
        else:
            base_lines = ours
        try:
            target = merge(base_lines, ours, new.lines)
        except MergeConflictError as exc:
            raise FileAccessError(
                f"{path} has unsaved changes in Neovim at line {exc.line} that conflict with"
                " this write; nothing was written: read the file again and redo the change"
            ) from None
        edits = [
            {"start": h.start, "end": h.end, "lines": list(h.lines)} for h in hunks(ours, target)
        ]
        options = {"eol": new.eol, "fileformat": new.fileformat}
        result = await asyncio.wrap_future(
            self._editor.apply_buffer_edits(path, buffer.tick, edits, options)
        )
        if not isinstance(result, Mapping):
            raise FileAccessError(f"Neovim could not write {path}")
        if result.get("ok"):
            self._bases.forget(path)
            return True
        if result.get("reason") == "changed":
            return False
        if result.get("reason") == "unloaded":
            await self._write_disk(path, content)
            return True
        raise FileAccessError(f"Neovim could not write {path}: {result.get('error')}")


def _check_path(path: str) -> None:
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        raise FileAccessError(f"not an absolute file path: {shown(str(path))}")
    if has_control(path):
        raise FileAccessError(
            f"the path contains a control character (newline, escape, ...): {shown(path)}"
        )


def _too_large(path: str) -> str:
    return f"{shown(path)} is larger than {MAX_READ_BYTES // (1024 * 1024)} MiB: not read"


def _read_disk(path: str, policy: PathPolicy | None) -> str:
    try:
        return read_text(path, policy, MAX_READ_BYTES)
    except NotRegularFileError as exc:
        raise FileAccessError(f"{exc}: only regular files are read") from None
    except TooLargeError:
        raise FileAccessError(_too_large(path)) from None


def _write_disk(path: str, content: str, policy: PathPolicy | None) -> None:
    """Write ``content`` to ``path``: an existing file opened and checked on its
    descriptor, a new one created exclusively in a checked folder; never truncated
    before the check."""
    try:
        try:
            fd = open_within(path, os.O_WRONLY, policy)
        except FileNotFoundError:
            try:
                fd = create_within(path, os.O_WRONLY, policy)
            except FileExistsError:  # made meanwhile, or a link to nothing
                fd = open_within(path, os.O_WRONLY, policy)
    except NotRegularFileError as exc:
        raise FileAccessError(f"{exc}: only regular files are written") from None
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.truncate(0)
        f.write(content)


def keep_users_text(path: str, text: str) -> str:
    """Save ``text`` (the user's version of ``path``, which could not be written or
    whose review ended without an answer) in a private (0600) file; its path."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(path))[:60]
    fd, kept = tempfile.mkstemp(prefix="gemini-companion-yours-", suffix=f"-{name}")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return kept
