"""Logging to a file: Neovim keeps everything the host writes to stderr in memory."""

from __future__ import annotations

import logging
import os

_installed: list[logging.Handler] = []


def configure_logging(path: str, level: str = "info") -> None:
    """Send the ``gemini_companion`` logger (and the server stack's warnings) to ``path``."""
    root = logging.getLogger("gemini_companion")
    others = [logging.getLogger(name) for name in ("mcp", "uvicorn", "uvicorn.error")]
    while _installed:
        old = _installed.pop()
        for logger in (root, *others):
            logger.removeHandler(old)
        old.close()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    root.propagate = False
    for other in others:
        other.addHandler(handler)
        other.setLevel(logging.WARNING)
        other.propagate = False
    _installed.append(handler)
