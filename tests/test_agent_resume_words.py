"""A resumed conversation shows the user's words (issue 32, item 4), with the real
``gemini`` 0.61.0 in ``--acp`` mode, offline (fake_model.py), IDE mode on: its
replay of the conversation (``session/load``) holds the editor context the CLI
added, the content of an attached file and a tool's result as user messages; the
transcript shows the prompt and its attachment line, as the live prompt was."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import acp_setup
from fake_model import call, gemini_home, text, write_responses
from harness import Nvim
from test_agent_acp import Agent

pytestmark = pytest.mark.usefixtures("interop")


def test_a_resumed_conversation_shows_the_users_words_and_attachment_lines(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("apricot\n")
    (work / "code.py").write_text("a = 1\n")
    turns = [[[call("read_file", file_path=str(work / "code.py"))]], [[text("Both read.")]]]
    fake = write_responses(tmp_path / "fake-responses.jsonl", turns)
    home = gemini_home(tmp_path, ide=True)
    nvim = nvim_factory(cwd=work, **acp_setup(fake, home))
    nvim.wait_running()
    agent = Agent(nvim, tmp_path, fake, work)
    nvim.api.command("edit code.py")  # the editor context the CLI adds
    nvim.api.command("1GeminiAgent compare @notes.md with the code")  # and the line
    agent.wait_transcript("Both read.")
    first = agent.wait_idle()["session_id"]
    live = agent.transcript()
    nvim.api.command("GeminiAgentStop")
    nvim.lua("require('gemini_companion.agent').open()")
    agent.wait_state(
        "a new session", lambda s: s["state"] == "idle" and s.get("session_id") not in (None, first)
    )
    nvim.api.command(f"GeminiAgentResume {first}")
    agent.wait_state("the conversation loaded", lambda s: s.get("session_id") == first)
    shown = agent.wait_transcript("Both read.")
    # The first conversation stays above, ended by the stop (issue 30); the replay
    # follows it.
    replay = shown[shown.rindex("The agent stopped.") :]
    replay = replay[replay.index("▍ You") :]
    for cli_text in ("editor context", "```json", "Content from", "[Function Response"):
        assert cli_text not in replay, f"{cli_text!r} in the replay:\n{shown}"
    # The prompt as the live one was drawn: its words, then its attachment line.
    start = live.index("▍ You")
    prompt = live[start : live.index("▍ Gemini", start)]
    assert prompt in replay, f"live:\n{prompt}\nreplayed:\n{replay}"
    assert replay.count("▍ You") == 1, shown  # the CLI's own messages are no prompts
