"""The one reader of files on disk, for the agent's reads (``fs/read_text_file``,
files.py) and for what a prompt attaches (attach.py, and A2A's embedded files).

- links are resolved, and only regular files are read: a FIFO, a device or a
  socket is refused (opened without blocking and checked on the descriptor: a FIFO
  never holds the thread, ``/dev/zero`` never ends);
- the path policy (paths.py) is checked on the open descriptor, so a link swapped
  between a look and the read cannot lead out of the policy's folders;
- at most ``limit`` bytes are read (:class:`TooLargeError` beyond).

It blocks (open, read): callers on the loop run it in a thread
(``asyncio.to_thread``).
"""

from __future__ import annotations

import os

from ..paths import PathPolicy, open_within, shown


class TooLargeError(OSError):
    """The file holds more than the reader's limit."""


def read_bytes(path: str, policy: PathPolicy | None, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``path`` (links followed), if it
    lies within ``policy`` (None: anywhere). Raises :class:`TooLargeError`,
    :class:`~gemini_companion.paths.NotRegularFileError`,
    :class:`~gemini_companion.paths.OutsidePolicyError` or the :class:`OSError` of
    the open (``FileNotFoundError`` ...)."""
    fd = open_within(path, os.O_RDONLY, policy)
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)  # a file growing meanwhile is bounded too
    if len(data) > limit:
        raise TooLargeError(f"{shown(path)} is larger than {_size(limit)}")
    return data


def read_text(path: str, policy: PathPolicy | None, limit: int) -> str:
    """:func:`read_bytes`, decoded as UTF-8 (bytes that are not UTF-8 replaced)."""
    return read_bytes(path, policy, limit).decode("utf-8", errors="replace")


def check(path: str, policy: PathPolicy | None) -> None:
    """Raise what :func:`read_bytes` would, reading nothing."""
    os.close(open_within(path, os.O_RDONLY, policy))


def _size(limit: int) -> str:
    if limit >= 1024 * 1024:
        return f"{limit // (1024 * 1024)} MiB"
    return f"{limit // 1024} KiB"
