"""The panel takes the first keys (issue 32, item 4): it opens in Insert mode in
the prompt (an option keeps Normal mode), a diff tab opens in Normal mode, and the
transcript follows an answer given from the prompt. Driven through the real host
with the scripted transport (tests/agent_fakes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent_setup import transcript, wait_agent, wait_transcript
from harness import ROOT, Nvim, json_lines, wait_for

SCRIPTED = f"{ROOT / 'tests' / 'agent_fakes' / 'scripted_transport.py'}:ScriptedTransport"

PROMPT = (
    "return vim.api.nvim_buf_get_lines("
    "require('gemini_companion.agent.panel').prompt_buffer(), 0, -1, false)"
)

# The transcript window's last shown row and the transcript's line count.
SHOWN = """
local win = require('gemini_companion.agent.panel').windows()
local b = vim.api.nvim_win_get_buf(win)
local last = vim.api.nvim_win_call(win, function() return vim.fn.line('w$') end)
return { last, vim.api.nvim_buf_line_count(b) }
"""


def test_the_first_keys_after_gemini_agent_are_the_prompts_text(
    scripted_nvim: Nvim, tmp_path: Path
) -> None:
    nvim = scripted_nvim
    # Typed at once, as a user does: the command, then the question.
    nvim.api.input(":GeminiAgent<CR>explain what this project does")
    wait_for(
        lambda: nvim.lua(PROMPT) == ["explain what this project does"], 10, "the prompt's text"
    )
    assert nvim.api.api.get_mode()["mode"] == "i"
    nvim.api.input("<C-s>")
    prompts = wait_for(
        lambda: [r for r in json_lines(tmp_path / "transport.jsonl") if r["call"] == "prompt"],
        15,
        "the prompt sent",
    )
    assert prompts[0]["text"] == "explain what this project does"


def test_an_option_keeps_the_prompt_in_normal_mode(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = nvim_factory(
        cwd=tmp_path,
        setup={"agent": {"panel": {"insert": False}}},
        env={"GEMINI_COMPANION_TEST_TRANSPORT": SCRIPTED},
    )
    nvim.wait_running()
    nvim.api.command("GeminiAgent")
    assert nvim.api.eval("&filetype") == "gemini_agent_prompt"
    assert nvim.api.api.get_mode()["mode"] == "n"
    bad = nvim.lua(
        "return select(2, pcall(require('gemini_companion').setup,"
        " { agent = { panel = { insert = 'yes' } } }))"
    )
    assert "agent.panel.insert" in bad


def test_a_diff_tab_opened_from_insert_mode_opens_in_normal_mode(scripted_nvim: Nvim) -> None:
    nvim = scripted_nvim
    nvim.api.command("GeminiAgent")
    # Insert mode in the prompt (the default now; <Esc>i on the code before it).
    nvim.api.input("<Esc>iedit<C-s>")
    wait_for(lambda: len(nvim.api.tabpages) == 2, 60, "the diff tab")
    # The next keys are commands, not the proposal's text.
    wait_for(lambda: nvim.api.api.get_mode()["mode"] == "n", 30, "Normal mode in the diff tab")


def test_the_transcript_follows_an_answer_given_from_the_prompt(scripted_nvim: Nvim) -> None:
    nvim = scripted_nvim
    nvim.api.command("GeminiAgent")
    nvim.api.command("stopinsert")
    for n in range(3):
        nvim.api.current.buffer[:] = [f"hello {n}"]
        nvim.api.input("<CR>")  # typed: Neovim reads it after this call returns
        # Its answer drawn, then idle (the idle seen before the keys are read is the
        # last turn's).
        wait_for(lambda n=n: transcript(nvim).count("Hello, world") == n + 1, 60, "the answer")
        wait_agent(nvim, "idle", lambda s: s["state"] == "idle")
    # A confirmation; the answer after it is longer than the window.
    nvim.api.current.buffer[:] = ["shell long"]
    nvim.api.input("<CR>")
    wait_agent(nvim, "a confirmation", lambda s: s["state"] == "waiting")
    nvim.api.input("\\a")  # <LocalLeader>a in the prompt
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle")
    last, count = nvim.lua(SHOWN)
    assert last == count  # the transcript's last line is on screen


def test_a_replayed_conversation_shows_the_users_words_and_attachment_lines(
    scripted_nvim: Nvim,
) -> None:
    """The history gemini --acp replays when a conversation is resumed (the
    scripted transport's "replay": its messages as 0.61.0 flattens them)."""
    nvim = scripted_nvim
    nvim.api.command("GeminiAgent replay")
    shown = wait_transcript(nvim, "Notes read.")
    assert "editor context" not in shown and "```json" not in shown, shown
    assert "Content from" not in shown and "[Function Response" not in shown, shown
    # As a live prompt is drawn: the words, then its attachments' lines.
    assert "▍ You\nexplain #selection\n  @/w/code.py#L2-3\n\n▍ Gemini" in shown, shown
    assert "▍ You\nand @notes.md?\n  @notes.md\n\n▍ Gemini" in shown, shown
    assert shown.count("▍ You") == 3  # the replayed prompts and "replay" itself
