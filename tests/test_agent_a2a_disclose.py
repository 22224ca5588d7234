"""Over A2A, a tool call whose arguments name another path than its confirmation
shows (issue 29 item 2): the real path is on screen and in ``state().pending``.
A hostile agent in the real server's dialect (tests/agent_fakes/coder_agent.py,
a2a-sdk's server side, over real HTTP) drives a real Neovim's panel."""

from __future__ import annotations

from pathlib import Path

from agent_fakes.coder_agent import CoderAgent
from agent_setup import agent_state, wait_agent, wait_transcript
from harness import Nvim, wait_for
from test_agent_a2a_review import fake, nvim  # noqa: F401 (fixtures)


def test_an_edit_whose_arguments_name_another_file_shows_that_file(
    nvim: Nvim,  # noqa: F811
    fake: tuple[str, CoderAgent],  # noqa: F811
    workspace: Path,
    tmp_path: Path,
) -> None:
    _, agent = fake
    shown = workspace / "notes.txt"
    real = tmp_path / "home" / ".bashrc"
    nvim.lua("require('gemini_companion.agent').open()")
    nvim.lua("vim.cmd.GeminiAgent(...)", f"disguise {shown} {real}")
    state = wait_agent(nvim, "the edit pending", lambda s: bool(s["pending"]))
    [pending] = state["pending"]
    assert pending["file_path"] == str(shown)
    assert pending["input"] == [{"name": "file_path", "value": str(real)}]
    text = wait_transcript(nvim, f"file_path: {real}")
    assert "its title does not show" in text
    nvim.api.command("GeminiReject")
    wait_for(lambda: agent.reported, 30, "the agent's answer")
    assert agent.answers == [{"callId": "disguise-1", "outcome": "cancel"}]
    assert not agent_state(nvim)["pending"]
    assert not real.exists()
