"""The A2A halves of issue 22 (items 1, 2 and 6) with the real A2A server 0.25.2
against the fake Gemini API on loopback (the model being the one fake): the server
is never an IDE client (its IDE mode is off in its code), so an edit opens one
diff tab; the user's changes reach the model with the next prompt as a diff from
the proposal; a rejected edit reads as words, not the edit's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_setup import SERVER_BIN, transcript, wait_agent, wait_transcript
from fake_gemini import FakeGemini, call_turn, text_turn
from harness import Nvim, wait_for

START = 90

pytestmark = pytest.mark.skipif(
    not SERVER_BIN.exists(), reason="scripts/setup installs the A2A server (npm)"
)


def test_the_users_changes_reach_the_model_with_the_next_prompt(
    agent_nvim: Nvim,
    fake: FakeGemini,
    workspace: Path,
) -> None:
    nvim = agent_nvim
    target = workspace / "notes.txt"
    fake.add(
        call_turn("write_file", {"file_path": str(target), "content": "agent line\n"}),
        text_turn("I wrote the notes."),
        text_turn("Noted."),
    )
    nvim.lua(
        "vim.api.nvim_create_autocmd('TabNew', {callback = function()"
        " vim.g.test_tabs_opened = (vim.g.test_tabs_opened or 0) + 1 end})"
    )
    nvim.api.command("GeminiAgent write the notes")
    view = wait_for(
        lambda: nvim.lua("return require('gemini_companion.diff').views()"), START, "the diff"
    )[0]
    nvim.api.buffers[view["proposal"]][:] = ["agent line", "user's own line"]
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "I wrote the notes.")
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle")
    assert nvim.lua("return vim.g.test_tabs_opened") == 1
    nvim.api.command("GeminiAgent thanks")
    wait_transcript(nvim, "Noted.")
    last = json.dumps(fake.stream_requests()[-1]["body"])
    assert "user's own line" in last, last[-2000:]


def test_a_rejected_edit_reads_as_words_not_json(
    agent_nvim: Nvim,
    fake: FakeGemini,
    workspace: Path,
) -> None:
    nvim = agent_nvim
    target = workspace / "keep.txt"
    target.write_text("keep me\n")
    fake.add(
        call_turn("write_file", {"file_path": str(target), "content": "gone\n"}),
        text_turn("Understood."),
    )
    nvim.api.command("GeminiAgent overwrite keep.txt")
    wait_agent(nvim, "the edit pending", lambda s: bool(s["pending"]), START)
    nvim.api.command("GeminiReject")
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle" and not s["pending"], START)
    shown = transcript(nvim)
    assert "newContent" not in shown and '{"' not in shown and "{\n" not in shown, shown
    assert target.read_text() == "keep me\n"
