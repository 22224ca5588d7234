"""What the panel may be sent (agent/view.py): valid UTF-8, and lines no longer
than :data:`MAX_LINE` characters (a longer one is cut with a note)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_LINE = 10_000
"""Characters of one transcript line shown; the rest of a longer line is left out."""

CUT = " … [the rest of this line is not shown: longer than 10000 characters]"

_NOT_UNICODE = (
    "Gemini agent: the agent sent text that is not valid Unicode (a lone surrogate);"
    " it is shown as \ufffd"
)


def _valid(text: str) -> str:
    """``text`` with lone surrogates (which JSON allows and UTF-8 cannot carry)
    replaced by U+FFFD; surrogate pairs become their character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[:MAX_LINE] + CUT


def _deep_valid(value: Any) -> tuple[Any, bool]:
    """``value`` (the state's JSON-like tree) with every string made valid."""
    if isinstance(value, str):
        clean = _valid(value)
        return clean, clean is not value
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        changed = False
        for k, v in value.items():
            out[k], bad = _deep_valid(v)
            changed |= bad
        return out, changed
    if isinstance(value, (list, tuple)):
        items = [_deep_valid(v) for v in value]
        return [v for v, _ in items], any(bad for _, bad in items)
    return value, False
