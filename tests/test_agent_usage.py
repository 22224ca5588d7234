"""Token usage (issue 30, requirement 4): each turn's input and output tokens, from
the agent's answer to ``session/prompt`` (``_meta.quota``, as Gemini CLI 0.61.0
sends it), shown at the turn's end; the conversation's running total in the
panel's status line and ``statusline()``; both in ``state().usage``.

Real parts: a headless Neovim with the plugin and its Python host; the scripted
ACP agent (tests/agent_fakes/acp_agent.py), and the real ``gemini --acp`` offline
on canned answers (whose usage metadata it reports)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import (
    acp_setup,
    panel_window,
    status_row,
    transcript,
    wait_agent,
    wait_transcript,
)
from fake_model import gemini_home, text, write_responses
from harness import Nvim

FAKE_AGENT = Path(__file__).parent / "agent_fakes" / "acp_agent.py"
WAIT = 90


def test_each_turn_shows_its_tokens_and_the_status_line_the_conversations_total(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    cmd = [sys.executable, str(FAKE_AGENT)]
    nvim = nvim_factory(cwd=work, setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}})
    nvim.wait_running()
    nvim.api.command("GeminiAgent usage 1200 34")
    wait_transcript(nvim, "Tokens: 1,200 in, 34 out", WAIT)
    nvim.api.command("GeminiAgent usage 800 6")
    wait_transcript(nvim, "Tokens: 800 in, 6 out", WAIT)
    state = wait_agent(nvim, "the total", lambda s: s.get("usage", {}).get("total", {}) != {}, WAIT)
    # And the turn over: its "idle" can be drawn a frame after its tokens, and a
    # prompt sent while the panel still shows "working" is refused as busy.
    state = wait_agent(
        nvim,
        "both turns counted and the second over",
        lambda s: s["state"] == "idle" and s["usage"]["total"]["input_tokens"] == 2000,
        WAIT,
    )
    assert state["usage"] == {
        "turn": {"input_tokens": 800, "output_tokens": 6},
        "total": {"input_tokens": 2000, "output_tokens": 40},
    }
    lines = transcript(nvim).splitlines()
    # At each turn's end: below its answer.
    assert lines.index("counted") < next(i for i, x in enumerate(lines) if "1,200 in" in x)
    win = panel_window(nvim)
    nvim.lua("vim.api.nvim_set_current_win(...)", win)
    nvim.api.command("only")  # the whole width for the panel's status line
    assert "tokens: 2,000 in, 40 out" in status_row(nvim, win)
    statusline = nvim.lua("return require('gemini_companion').statusline({ highlight = false })")
    assert "2,000 in, 40 out" in statusline
    # A turn whose answer carries no usage adds nothing, and keeps the total.
    nvim.api.command("GeminiAgent plain")
    wait_transcript(nvim, "echo: plain", WAIT)
    state = wait_agent(nvim, "idle", lambda s: s["state"] == "idle", WAIT)
    assert state["usage"]["total"] == {"input_tokens": 2000, "output_tokens": 40}
    assert transcript(nvim).count("Tokens:") == 2


@pytest.mark.usefixtures("interop")
def test_the_real_gemini_acp_reports_the_tokens_of_a_turn(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fake = write_responses(tmp_path / "fake-responses.jsonl", [[[text("Counted answer.")]]])
    nvim = nvim_factory(cwd=work, **acp_setup(fake, gemini_home(tmp_path)))
    nvim.wait_running()
    nvim.api.command("GeminiAgent count me")
    wait_transcript(nvim, "Counted answer.", 180)
    state = wait_agent(nvim, "the usage", lambda s: bool(s.get("usage")), 180)
    turn = state["usage"]["turn"]
    assert turn["input_tokens"] > 0 and turn["output_tokens"] > 0
    assert state["usage"]["total"] == turn
    assert f"Tokens: {turn['input_tokens']:,} in" in transcript(nvim)
