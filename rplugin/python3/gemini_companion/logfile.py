"""Logging to a file: Neovim keeps everything the host writes to stderr in memory.

The file is private (0600): it records paths of the user's files and what clients
asked for. Messages are single lines of bounded length, whatever a client sends
(a 1 MiB path once made a 1.1 MB line); tracebacks are kept whole.
"""

from __future__ import annotations

import logging
import os

# Characters of a message kept in the log; the rest is replaced by a count.
MAX_MESSAGE_CHARS = 2000

_installed: list[logging.Handler] = []


class BoundedFormatter(logging.Formatter):
    """Cuts long messages and escapes line breaks, so one record is one short line."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        message = record.message
        if len(message) > MAX_MESSAGE_CHARS:
            cut = len(message) - MAX_MESSAGE_CHARS
            message = f"{message[:MAX_MESSAGE_CHARS]}... ({cut} more characters)"
        record.message = message.replace("\r", "\\r").replace("\n", "\\n")
        return super().formatMessage(record)


def open_private(path: str) -> None:
    """Create ``path`` with mode 0600, or make an existing file 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def configure_logging(path: str, level: str) -> None:
    """Send the ``gemini_companion`` logger (and the server stack's warnings) to ``path``,
    at ``level`` (the ``log_level`` option, as Lua sends it)."""
    root = logging.getLogger("gemini_companion")
    others = [logging.getLogger(name) for name in ("mcp", "uvicorn", "uvicorn.error")]
    while _installed:
        old = _installed.pop()
        for logger in (root, *others):
            logger.removeHandler(old)
        old.close()
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    open_private(path)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(BoundedFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    root.propagate = False
    for other in others:
        other.addHandler(handler)
        other.setLevel(logging.WARNING)
        other.propagate = False
    _installed.append(handler)
