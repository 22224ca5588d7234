"""What the panel may be sent (agent/view.py): valid UTF-8, and lines no longer
than :data:`MAX_LINE` characters (a longer one is cut with a note)."""

from __future__ import annotations

import json
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


def cut_appended(text: str, prefix: str, length: int) -> tuple[str, int]:
    """``text`` appended to a line ``length`` characters long (-1: already cut),
    its new lines starting with ``prefix``, with every line cut at
    :data:`MAX_LINE`; and the length of the last line then (-1 if cut)."""
    shown: list[str] = []
    for i, piece in enumerate(text.split("\n")):
        if i:
            shown.append("\n")
            length = len(prefix)
        if length < 0:
            continue  # the rest of a line already cut
        if length + len(piece) > MAX_LINE:
            shown.append(piece[: MAX_LINE - length] + CUT)
            length = -1
        else:
            shown.append(piece)
            length += len(piece)
    return "".join(shown), length


def valid_state(state: Any) -> tuple[Any, bool]:
    """``state`` (the agent's state, JSON-like) with every string valid UTF-8, and
    whether one was not."""
    try:
        # One pass in C finds nothing to clean in the usual case.
        json.dumps(state, ensure_ascii=False).encode("utf-8")
        return state, False
    except UnicodeEncodeError:
        pass
    except (TypeError, ValueError):
        return state, False
    return _deep_valid(state)
