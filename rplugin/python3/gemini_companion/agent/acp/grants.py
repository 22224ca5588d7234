"""Which of the agent's ``fs/write_text_file`` the user approved (issue 21 item 7).

An ACP agent writes through the client, and nothing in the protocol ties a write to
a permission: in its default mode Gemini CLI asks before every edit, so a write no
permission covers comes from a confused or hostile agent. The rule:

- An edit the user allowed (any allow option of a ``session/request_permission``
  with a diff) covers one write of that file (its real path, links resolved when
  the user answered and when the agent writes) with the proposal shown (the
  user's edited version replaces it on the way, files.py). The grant ends with the
  write, or with the turn.
- Every write goes through while edits are auto-approved by the user's choice: the
  session started in such a mode (the user's own settings or flags), the user chose
  one with ``:GeminiAgentMode``, or the user chose "allow always" for an edit (Gemini
  CLI then switches to ``autoEdit``). The modes that auto-approve edits are
  :data:`AUTO_EDIT_MODES`, Gemini CLI's and other ACP agents' names for them.
- The agent announcing a mode itself (``current_mode_update``, Gemini CLI's
  ``[MODE_UPDATE]``) never approves anything; announcing a mode that asks again
  ends the auto-approval.

Anything else is refused: the agent gets an error, the user a line saying so.
Pure bookkeeping; the transport calls it on its loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ...paths import shown

AUTO_EDIT_MODES: frozenset[str] = frozenset(
    {"autoEdit", "yolo", "acceptEdits", "bypassPermissions"}
)
"""Modes whose edits run without asking: Gemini CLI's ``autoEdit`` and ``yolo``, and
the names other ACP agents give them."""


def _key(path: str) -> str:
    return os.path.realpath(path)


@dataclass
class WriteGrants:
    """The writes the user approved in one session of the agent."""

    auto: bool = False
    """Every write goes through: edits are auto-approved by the user's choice."""
    _grants: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)

    def user_mode(self, mode: str | None) -> None:
        """The mode the user chose (``:GeminiAgentMode``) or started the session in."""
        self.auto = mode in AUTO_EDIT_MODES

    def agent_mode(self, mode: str | None) -> None:
        """A mode the agent announced: it can end the auto-approval, never start it."""
        if mode not in AUTO_EDIT_MODES:
            self.auto = False

    def allowed(
        self, path: str, proposal: str, *, always: bool, accepted: str | None = None
    ) -> None:
        """The user allowed the edit of ``path`` to ``proposal`` ("always": every
        later edit too, as the agent's ``autoEdit`` mode does); ``accepted``: the
        user's version of it, which one write may carry instead (the agent writes
        it itself when the user's answer reached it, IDE mode's twin: review.py)."""
        texts = (proposal,) if accepted is None else (proposal, accepted)
        self._grants.setdefault(_key(path), []).append(texts)
        if always:
            self.auto = True

    def end_turn(self) -> None:
        self._grants.clear()

    def take(self, path: str, content: str) -> None:
        """Let the write of ``content`` to ``path`` through, using up its grant;
        raises :class:`PermissionError` with the reason when nothing covers it."""
        key = _key(path)
        proposals = self._grants.get(key) or []
        grant = next((texts for texts in proposals if content in texts), None)
        if grant is not None:
            proposals.remove(grant)
            if not proposals:
                self._grants.pop(key, None)
            return
        if self.auto:
            return
        if proposals:
            raise PermissionError(
                f"the write of {shown(path)} is not the change the user allowed: refused"
            )
        raise PermissionError(
            f"no permission covers a write of {shown(path)}: refused (the user allowed no"
            " edit of it; edits are asked for unless the user chose a mode that"
            " auto-approves them or 'allow always')"
        )
