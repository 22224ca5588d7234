"""The chat file a ``session/load`` leaves behind in Gemini CLI 0.61.0, removed so
the conversation survives the CLI's next start.

Observed on 0.61.0 (tests/test_agent_history.py runs it): a load starts a new chat
record of the session, ``~/.gemini/tmp/<project>/chats/session-<UTC minute>-<first
8 characters of the id>.jsonl``, holding only its header and start-up context,
then goes on writing into the conversation's own file. At every start the CLI
cleans up its chat files (``general.sessionRetention``, on by default): it takes a
file without conversation in it for an abandoned one and deletes every file of
that id, the conversation's own among them. So the next ``session/load``, after a
restart of Neovim (or any ``gemini`` started in the project), answers "No previous
sessions found for this project." and the conversation is gone.

The files of the session are listed before the load; the ones the load made are
deleted after it (whether it worked or not). Nothing else in the CLI's folder is
touched: a file that was there before, or of another id, stays.
"""

from __future__ import annotations

import glob
import logging
import os
from collections.abc import Mapping

log = logging.getLogger(__name__)


def _pattern(env: Mapping[str, str], session_id: str) -> str | None:
    home = env.get("GEMINI_CLI_HOME") or env.get("HOME")
    short = session_id[:8]
    if not home or not short.isalnum():
        return None
    chats = os.path.join(glob.escape(home), ".gemini", "tmp", "*", "chats")
    return os.path.join(chats, f"session-*-{short}.jsonl")


class LoadLeftovers:
    """The chat files of ``session_id`` a load makes. Blocking (file system): call
    its methods in a thread."""

    def __init__(self, env: Mapping[str, str], session_id: str) -> None:
        self._pattern = _pattern(env, session_id)
        self._before: set[str] = set()

    def _files(self) -> set[str]:
        return set(glob.glob(self._pattern)) if self._pattern else set()

    def before(self) -> None:
        """Before the load: the files there already."""
        self._before = self._files()

    def remove(self) -> list[str]:
        """After the load: delete the files it made; their paths."""
        made = sorted(self._files() - self._before)
        for path in made:
            try:
                os.unlink(path)
            except OSError as exc:
                log.warning("could not remove %s, left by session/load: %s", path, exc)
        if made:
            log.info("removed the chat files session/load left: %s", made)
        return made
