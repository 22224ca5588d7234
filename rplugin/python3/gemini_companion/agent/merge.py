"""Three-way merge of lines: the agent's edit applied over the user's unsaved edits.

The agent reads a file (the *base*), computes its new text and writes it back. If
the user changed the buffer meanwhile, both sides' changes are applied to the
base when they touch different lines; where they touch the same lines (or insert
at the same place) the write is refused rather than guessed: the user's text is
never lost. Pure functions, tested without Neovim.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass


class MergeConflictError(ValueError):
    """The agent's change and the user's unsaved change touch the same lines."""

    def __init__(self, line: int) -> None:
        super().__init__(f"line {line}")
        self.line = line  # 1-based, in the base text


@dataclass(frozen=True)
class Hunk:
    """Lines ``start:end`` (0-based, end exclusive) replaced by ``lines``."""

    start: int
    end: int
    lines: tuple[str, ...]


def hunks(old: Sequence[str], new: Sequence[str]) -> list[Hunk]:
    """The changes that turn ``old`` into ``new``, in order, as few lines as difflib finds."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [
        Hunk(i1, i2, tuple(new[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _overlap(a: Hunk, b: Hunk) -> bool:
    if a.start == a.end and b.start == b.end:  # two insertions at one place
        return a.start == b.start
    if a.start == a.end:  # an insertion inside (or at the edge of) a replaced range
        return b.start < a.start < b.end or (b.start == a.start and b.end > b.start)
    if b.start == b.end:
        return _overlap(b, a)
    return a.start < b.end and b.start < a.end


def merge(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]) -> list[str]:
    """``theirs``' changes to ``base`` applied to ``ours`` (which changed ``base`` too).

    Raises :class:`MergeConflictError` when the two sets of changes overlap.
    """
    if list(ours) == list(base):
        return list(theirs)
    if list(theirs) == list(base) or list(theirs) == list(ours):
        return list(ours)
    user = hunks(base, ours)
    agent = hunks(base, theirs)
    for a in agent:
        for u in user:
            if _overlap(a, u):
                raise MergeConflictError(a.start + 1)
    result: list[str] = []
    position = 0
    for hunk in sorted([*user, *agent], key=lambda h: (h.start, h.end)):
        result.extend(base[position : hunk.start])
        result.extend(hunk.lines)
        position = hunk.end
    result.extend(base[position:])
    return result
