"""A conversation of the history loaded again after a restart of Neovim, with the
real ``gemini --acp`` 0.61.0 (offline, IDE mode on) and three Neovims sharing one
``XDG_STATE_HOME`` (issue 30 requirement 2; the rest is test_agent_history.py).
Long: the first load waits for the minute its conversation started in to turn
(acp/handshake.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import acp_setup, wait_agent, wait_transcript
from fake_model import gemini_home, text, write_responses
from harness import Nvim, wait_for
from history_picker import PICKER, conversations, history_records, notified, pick, text_of

WAIT = 90

# -- the real gemini --acp: a load just after a restart loses nothing ------------------


@pytest.mark.usefixtures("interop")
def test_a_conversation_loaded_again_just_after_a_restart_is_not_lost(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    """A conversation loaded once, then again after a restart of Neovim: Gemini CLI
    0.61.0's load leaves a chat file without conversation in it, and the CLI's next
    start deleted every file of that session with it (acp/chat_files.py); the
    second load answered "No previous sessions found for this project."."""
    work = tmp_path / "work"
    work.mkdir()
    home = gemini_home(tmp_path, ide=True)

    def start(answer: str) -> Nvim:
        fake = write_responses(tmp_path / "fake-responses.jsonl", [[[text(answer)]]])
        nvim = nvim_factory(cwd=work, **acp_setup(fake, home))
        nvim.wait_running()
        nvim.lua(PICKER)
        return nvim

    def agents() -> list[Path]:
        return [
            p
            for p in Path("/proc").glob("[0-9]*")
            if b"--acp" in _cmdline(p) and str(tmp_path).encode() in _cmdline(p)
        ]

    def load(nvim: Nvim) -> str:
        pick(nvim, choose="remember the word apricot")

        def loaded() -> str | None:
            found = [c for c in conversations(nvim) if c.get("session_id") == session]
            return text_of(nvim, found[0]["id"]) if found else None

        try:
            return str(
                wait_for(lambda: (t := loaded()) and "Noted: apricot." in t and t, WAIT, "the load")
            )
        except AssertionError as exc:
            notes = "\n".join(notified(nvim))
            files = sorted(p.name for p in home.glob(".gemini/tmp/*/chats/*"))
            convs = [(c, text_of(nvim, c["id"])) for c in conversations(nvim)]
            raise AssertionError(f"{exc}\n{notes}\n{convs}\n{files}") from None

    first = start("Noted: apricot.")
    first.api.command("GeminiAgent remember the word apricot")
    wait_transcript(first, "Noted: apricot.", WAIT)
    session = wait_agent(first, "idle", lambda s: s["state"] == "idle")["session_id"]
    first.close()
    wait_for(lambda: not agents(), 30, "the agent to exit with Neovim")
    second = start("unused")
    assert "remember the word apricot" in load(second)
    second.close()
    wait_for(lambda: not agents(), 30, "the agent to exit with Neovim")

    third = start("Still here.")  # a new CLI: its start cleans up its chat files
    assert "remember the word apricot" in load(third)
    third.api.command("GeminiAgent are you there?")
    wait_transcript(third, "Still here.", WAIT)
    assert not history_records(third)[session]["error"]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""
