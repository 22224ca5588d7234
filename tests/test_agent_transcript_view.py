"""How the transcript's windows show a stream (issue 25 item 3: Neovim's CPU per
streamed MB): thoughts are manual folds made by the code that draws them, in every
window showing the transcript. The batches are the operations the Python host
sends (agent/view.py documents them), fed to transcript.lua's ``_apply`` in a
real Neovim; the panel is the real one, and one test drives the real host with
the scripted transport (tests/agent_fakes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_setup import wait_transcript
from harness import ROOT, Nvim

SCRIPTED = f"{ROOT / 'tests' / 'agent_fakes' / 'scripted_transport.py'}:ScriptedTransport"

# Apply one batch of ops (a list of tables) as the host does.
APPLY = "require('gemini_companion.agent.transcript')._apply(...)"

# The fold at a row (1-based) in a window: { foldclosed, foldclosedend, foldlevel }.
FOLD = """
local win, row = ...
return vim.api.nvim_win_call(win, function()
  return { vim.fn.foldclosed(row), vim.fn.foldclosedend(row), vim.fn.foldlevel(row) }
end)
"""

TRANSCRIPT_WIN = "return (require('gemini_companion.agent.panel').windows())"


def apply(nvim: Nvim, *ops: dict[str, Any]) -> None:
    nvim.lua(APPLY, list(ops))


def in_window(nvim: Nvim, win: int, command: str) -> None:
    nvim.lua(
        "local win, c = ... vim.api.nvim_win_call(win, function() vim.cmd(c) end)", win, command
    )


def fold(nvim: Nvim, win: int, row: int) -> list[int]:
    return list(nvim.lua(FOLD, win, row))


def lines(nvim: Nvim) -> list[str]:
    return list(nvim.lua("return require('gemini_companion.agent.transcript').lines()"))


def thought(nvim: Nvim, block: int, pieces: list[str]) -> None:
    """A thought drawn over several batches, one piece each (agent/session.py)."""
    apply(
        nvim,
        {"op": "block", "id": block, "lines": ["", "┆ Thought: Planning", "┆ "], "kind": "thought"},
    )
    for piece in pieces:
        apply(nvim, {"op": "append", "id": block, "text": piece, "prefix": "┆ "})


def message(nvim: Nvim, block: int, text: str) -> None:
    apply(nvim, {"op": "block", "id": block, "lines": ["", ""], "kind": "message"})
    apply(nvim, {"op": "append", "id": block, "text": text, "prefix": ""})


@pytest.fixture
def panel(nvim: Nvim) -> Nvim:
    """A Neovim with the agent panel open (no agent needed to draw batches)."""
    nvim.lua("require('gemini_companion.agent.panel').open({ enter = false })")
    return nvim


def test_a_thought_growing_over_several_batches_stays_one_closed_fold(panel: Nvim) -> None:
    nvim = panel
    apply(
        nvim, {"op": "block", "id": 1, "lines": ["▍ You", "hi", "", "▍ Gemini"], "kind": "prompt"}
    )
    thought(nvim, 2, ["Reading", " the files\nthen", " more\nand more\n", "the end"])
    message(nvim, 3, "The answer.")
    shown = lines(nvim)
    header = shown.index("┆ Thought: Planning") + 1
    last = shown.index("┆ the end") + 1
    assert last == header + 4
    win = nvim.lua(TRANSCRIPT_WIN)
    assert fold(nvim, win, header) == [header, last, 1]
    assert fold(nvim, win, last + 1) == [-1, -1, 0]  # the blank line before the answer
    assert fold(nvim, win, len(shown)) == [-1, -1, 0]  # the answer


def test_a_thought_the_user_opened_stays_open_as_it_grows(panel: Nvim) -> None:
    nvim = panel
    thought(nvim, 1, ["first\n"])
    win = nvim.lua(TRANSCRIPT_WIN)
    header = lines(nvim).index("┆ Thought: Planning") + 1
    in_window(nvim, win, f"{header}foldopen")
    apply(nvim, {"op": "append", "id": 1, "text": "second\nthird", "prefix": "┆ "})
    last = len(lines(nvim))
    assert fold(nvim, win, header) == [-1, -1, 1]
    assert fold(nvim, win, last) == [-1, -1, 1]  # in the (open) fold
    # Closed again by the user, it covers the whole thought.
    in_window(nvim, win, f"{header}foldclose")
    assert fold(nvim, win, header) == [header, last, 1]


def test_thoughts_are_folded_in_windows_opened_after_they_were_drawn(panel: Nvim) -> None:
    nvim = panel
    thought(nvim, 1, ["one\ntwo"])
    message(nvim, 2, "between")
    thought(nvim, 3, ["three"])
    message(nvim, 4, "after")
    shown = lines(nvim)
    first, second = (i + 1 for i, line in enumerate(shown) if line == "┆ Thought: Planning")
    assert shown[first:second] == ["┆ one", "┆ two", "", "between", "", "┆ Thought: Planning"]
    expected = {first: [first, first + 2, 1], second: [second, second + 1, 1]}

    # The panel closed and opened again.
    nvim.lua("require('gemini_companion.agent.panel').close()")
    nvim.lua("require('gemini_companion.agent.panel').open({ enter = false })")
    win = nvim.lua(TRANSCRIPT_WIN)
    assert {row: fold(nvim, win, row) for row in expected} == expected
    # A window split from it, and the transcript shown in a window of another tab.
    split = nvim.lua(
        "vim.api.nvim_set_current_win(...) vim.cmd.split() return vim.api.nvim_get_current_win()",
        win,
    )
    assert {row: fold(nvim, split, row) for row in expected} == expected
    other = nvim.lua(
        "vim.cmd.tabnew() local b = require('gemini_companion.agent.transcript').buffer()"
        " vim.api.nvim_win_set_buf(0, b) return vim.api.nvim_get_current_win()"
    )
    assert {row: fold(nvim, other, row) for row in expected} == expected
    # A thought drawn now is folded in all three.
    thought(nvim, 5, ["four"])
    row = len(lines(nvim)) - 1
    assert [fold(nvim, w, row) for w in (win, split, other)] == [[row, row + 1, 1]] * 3


@pytest.fixture
def scripted_nvim(nvim_factory: Callable[..., Nvim], tmp_path: Path) -> Nvim:
    """A Neovim whose panel drives the real host with the scripted transport."""
    work = tmp_path / "work"
    work.mkdir()
    nvim = nvim_factory(
        cwd=work,
        env={
            "GEMINI_COMPANION_TEST_TRANSPORT": SCRIPTED,
            "SCRIPTED_TRANSPORT_LOG": str(tmp_path / "transport.jsonl"),
        },
    )
    nvim.wait_running()
    return nvim


def test_a_thought_from_the_agent_is_folded_when_the_panel_is_reopened(
    scripted_nvim: Nvim,
) -> None:
    nvim = scripted_nvim
    nvim.api.command("GeminiAgent think")
    shown = wait_transcript(nvim, "Thought done.").split("\n")
    header = shown.index("┆ Thought: Planning") + 1
    nvim.api.command("GeminiAgent")  # toggles: closes the panel
    assert nvim.lua(TRANSCRIPT_WIN) is None
    nvim.api.command("GeminiAgent")
    win = nvim.lua(TRANSCRIPT_WIN)
    assert fold(nvim, win, header) == [header, header + 2, 1]
