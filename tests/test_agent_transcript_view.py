"""How the transcript's windows show a stream (issue 25 item 3: Neovim's CPU per
streamed MB): thoughts are manual folds made by the code that draws them, in every
window showing the transcript. The batches are the operations the Python host
sends (agent/view.py documents them), fed to transcript.lua's ``_apply`` in a
real Neovim; the panel is the real one, and one test drives the real host with
the scripted transport (tests/agent_fakes)."""

from __future__ import annotations

from typing import Any

import pytest
from agent_setup import highlighted, wait_transcript
from harness import Nvim, wait_for

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


# A window's view: { cursor row, last row shown (line('w$')), first row shown, line count }.
VIEW = """
local win = ...
local b = require('gemini_companion.agent.transcript').buffer()
return { vim.api.nvim_win_get_cursor(win)[1], vim.fn.line('w$', win), vim.fn.line('w0', win),
  vim.api.nvim_buf_line_count(b) }
"""

# Several batches in one go (no frame passes between them), then the view.
BURST = """
local win, batches = ...
local t = require('gemini_companion.agent.transcript')
for _, ops in ipairs(batches) do t._apply(ops) end
""" + VIEW.replace("local win = ...\n", "")

WORKING = {"op": "state", "state": {"state": "working", "pending": [], "commands": []}}
IDLE = {"op": "state", "state": {"state": "idle", "pending": [], "commands": []}}


def view(nvim: Nvim, win: int) -> list[int]:
    return list(nvim.lua(VIEW, win))


def chunk(block: int, n: int) -> dict[str, Any]:
    """One streamed chunk: a few whole lines of text."""
    return {"op": "append", "id": block, "text": f"line {n}\n" * 5, "prefix": ""}


def at_end(nvim: Nvim, win: int) -> list[int] | None:
    shown = view(nvim, win)
    return shown if shown[0] == shown[1] == shown[3] else None


def test_a_window_following_the_stream_shows_its_last_line_once_the_batches_are_drawn(
    panel: Nvim,
) -> None:
    nvim = panel
    win = nvim.lua(TRANSCRIPT_WIN)
    apply(nvim, WORKING, {"op": "block", "id": 1, "lines": ["", ""], "kind": "message"})
    for round_ in range(3):
        # Batches faster than frames: the window is moved once the frame is over,
        # and it still follows the batches drawn meanwhile.
        nvim.lua(BURST, win, [[chunk(1, round_ * 100 + n)] for n in range(40)])
        shown = wait_for(lambda: at_end(nvim, win), 5, "the window to show the last line")
        assert shown[3] > 40 * 5 * (round_ + 1)
    apply(nvim, IDLE)
    assert at_end(nvim, win)


def test_the_end_of_a_turn_shows_the_last_line_at_once(panel: Nvim) -> None:
    nvim = panel
    win = nvim.lua(TRANSCRIPT_WIN)
    apply(nvim, WORKING, {"op": "block", "id": 1, "lines": ["", ""], "kind": "message"})
    # The first batch moves the window at once, the second (within the same frame)
    # would wait for the frame's end, but the turn ends with it.
    shown = nvim.lua(BURST, win, [[chunk(1, 1)], [chunk(1, 2), IDLE]])
    assert shown[0] == shown[1] == shown[3]


def test_a_window_scrolled_up_stays_put_while_the_stream_goes_on(panel: Nvim) -> None:
    nvim = panel
    win = nvim.lua(TRANSCRIPT_WIN)
    apply(nvim, WORKING, {"op": "block", "id": 1, "lines": ["", ""], "kind": "message"})
    nvim.lua(BURST, win, [[chunk(1, n)] for n in range(40)])
    wait_for(lambda: at_end(nvim, win), 5, "the window to follow")
    # A second window on the transcript keeps following while the user reads
    # the panel's window from row 10.
    other = nvim.lua(
        "local win = ... vim.api.nvim_set_current_win(win) vim.cmd.split()"
        " local other = vim.api.nvim_get_current_win()"
        " vim.api.nvim_win_set_cursor(win, { 10, 0 }) return other",
        win,
    )
    top = view(nvim, win)[2]
    # The cursor moved in the middle of a frame's wait, too.
    nvim.lua(BURST, win, [[chunk(1, 100 + n)] for n in range(40)])
    wait_for(lambda: at_end(nvim, other), 5, "the second window to follow")
    nvim.lua(BURST, win, [[chunk(1, 200 + n)] for n in range(40)] + [[IDLE]])
    assert at_end(nvim, other)
    shown = view(nvim, win)
    assert (shown[0], shown[2]) == (10, top)


def test_the_bottom_op_shows_the_last_line_in_every_window(panel: Nvim) -> None:
    nvim = panel
    win = nvim.lua(TRANSCRIPT_WIN)
    nvim.lua(BURST, win, [[chunk(1, n)] for n in range(40)] + [[IDLE]])
    nvim.lua("vim.api.nvim_win_set_cursor(..., { 3, 0 })", win)
    apply(nvim, {"op": "bottom"})
    assert at_end(nvim, win)


EDIT = """
local ok, err = pcall(vim.cmd, 'normal! ggiedited')
return { ok, tostring(err), vim.bo.modifiable }
"""


def test_the_transcript_cannot_be_edited_by_the_user_while_it_streams(panel: Nvim) -> None:
    nvim = panel
    win = nvim.lua(TRANSCRIPT_WIN)
    nvim.lua(BURST, win, [[WORKING, chunk(1, 0)], [chunk(1, 1)]])
    # Entered while the turn goes on, between batches and after one.
    nvim.lua("vim.api.nvim_set_current_win(...)", win)
    ok, err, modifiable = nvim.lua(EDIT)
    assert (ok, modifiable) == (False, False) and "E21" in err
    apply(nvim, chunk(1, 2))
    ok, err, modifiable = nvim.lua(EDIT)
    assert (ok, modifiable) == (False, False) and "E21" in err
    # Left, streamed into, turn over: still read-only, and nothing was edited.
    nvim.lua("vim.cmd.wincmd('p')")
    apply(nvim, chunk(1, 3), IDLE)
    assert (
        nvim.lua("return vim.bo[require('gemini_companion.agent.transcript').buffer()].modifiable")
        is False
    )
    assert not any("edited" in line for line in lines(nvim))


def test_the_answers_markdown_is_drawn_on_screen(panel: Nvim) -> None:
    nvim = panel
    # The highlights are ephemeral extmarks drawn for the rows on screen only.
    nvim.lua(
        "for _, g in ipairs(...) do vim.api.nvim_set_hl(0, g, { fg = '#123456', bold = true }) end",
        [
            "@markup.heading.2.markdown",
            "@markup.strong.markdown_inline",
            "@markup.raw.block.markdown",
        ],
    )
    text = "## Heading\nplain **bold** text\n```lua\nlocal x = 1\n```\nafter\n"
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]  # split anywhere
    apply(nvim, WORKING, {"op": "block", "id": 1, "lines": ["", ""], "kind": "message"})
    for piece in pieces:
        apply(nvim, {"op": "append", "id": 1, "text": piece, "prefix": ""})
    apply(nvim, IDLE)
    shown = lines(nvim)
    heading = shown.index("## Heading") + 1
    cells = {
        "heading": [heading, 4],
        "plain": [heading + 1, 2],
        "bold": [heading + 1, 9],
        "fence": [heading + 2, 1],
        "body": [heading + 3, 1],
        "after": [heading + 5, 1],
    }
    expected = {
        "heading": True,
        "plain": False,
        "bold": True,
        "fence": True,
        "body": True,
        "after": False,
    }

    def drawn() -> dict[str, bool] | None:
        found = dict(zip(cells, highlighted(nvim, list(cells.values())), strict=True))
        return found if found == expected else None

    wait_for(drawn, 30, f"the screen to show {expected}")


def test_a_panel_opened_while_an_answer_streams_shows_its_end_and_follows_it(
    panel: Nvim,
) -> None:
    nvim = panel
    win = nvim.lua(TRANSCRIPT_WIN)
    nvim.lua(BURST, win, [[WORKING, chunk(1, n)] for n in range(40)])
    nvim.lua("require('gemini_companion.agent.panel').close()")
    for n in range(40):
        apply(nvim, chunk(1, 100 + n))
    nvim.lua("require('gemini_companion.agent.panel').open({ enter = false })")
    win = nvim.lua(TRANSCRIPT_WIN)
    assert at_end(nvim, win)
    nvim.lua(BURST, win, [[chunk(1, 200 + n)] for n in range(40)])
    shown = wait_for(lambda: at_end(nvim, win), 5, "the new window to follow")
    assert shown[3] > 120 * 5


def test_a_window_following_the_stream_still_follows_when_a_block_above_changes(
    panel: Nvim,
) -> None:
    nvim = panel
    win = nvim.lua(TRANSCRIPT_WIN)
    tool = ["", "[tool] Read file.txt"]
    apply(
        nvim,
        WORKING,
        {"op": "block", "id": 1, "lines": tool, "kind": "tool"},
        {"op": "block", "id": 2, "lines": ["", ""], "kind": "message"},
        {"op": "append", "id": 2, "text": "The answer", "prefix": ""},
    )
    assert at_end(nvim, win)

    def batch(tool: list[str], n: int) -> list[dict[str, Any]]:
        return [
            {"op": "block", "id": 1, "lines": tool, "kind": "tool"},
            {"op": "append", "id": 2, "text": f" more\nline {n}\nand\nmore", "prefix": ""},
        ]

    # The tool block above gets a line more (its result) in each batch that
    # makes the answer below grow: Neovim moves the cursor down with the lines
    # inserted above it, which is not the user moving it.
    batches = []
    for n in range(4):
        tool = [*tool, f"  result {n}"]
        batches.append(batch(tool, n))
    nvim.lua(BURST, win, batches)
    shown = wait_for(lambda: at_end(nvim, win), 5, "the window to show the last line")
    assert shown[3] == len(lines(nvim)) == 6 + 2 + 4 * 3
    # Nor when it shrinks (its lines replaced by fewer).
    nvim.lua(BURST, win, [batch(tool[:-n], 10 + n) for n in range(1, 4)])
    shown = wait_for(lambda: at_end(nvim, win), 5, "the window to show the last line")
    assert shown[3] == len(lines(nvim)) == 3 + 2 + 7 * 3


# Run an Ex command in a window and report { ok, error, v:errmsg }.
EX_IN = """
local win, c = ...
vim.v.errmsg = ''
local ok, err = pcall(vim.api.nvim_win_call, win, function() vim.cmd(c) end)
return { ok, tostring(err or ''), vim.v.errmsg }
"""


# The markdown extmarks on a row (0-based) of the transcript.
MARKS_ON_ROW = """
local row = ...
local b = require('gemini_companion.agent.transcript').buffer()
return #require('gemini_companion.agent.markdown').marks(b, row, row + 1)
"""


@pytest.mark.parametrize("command", ["edit", "edit!"])
def test_edit_in_the_transcript_window_keeps_the_transcript_and_its_folds(
    panel: Nvim, command: str
) -> None:
    nvim = panel
    apply(
        nvim, {"op": "block", "id": 1, "lines": ["▍ You", "hi", "", "▍ Gemini"], "kind": "prompt"}
    )
    thought(nvim, 2, ["Reading\nthe files"])
    message(nvim, 3, "The **answer**")
    before = lines(nvim)
    header = before.index("┆ Thought: Planning") + 1
    win = nvim.lua(TRANSCRIPT_WIN)
    assert nvim.lua(EX_IN, win, command) == [True, "", ""]
    assert lines(nvim) == before
    assert fold(nvim, win, header) == [header, header + 2, 1]
    # Its markdown too (the answer's bold), and it is still the transcript.
    assert nvim.lua(MARKS_ON_ROW, len(before) - 1) > 0
    assert nvim.lua("return vim.bo[vim.api.nvim_win_get_buf(...)].filetype", win) == "gemini_agent"
    # The blocks are where they were: the answer grows at its end, a new block
    # goes after it, and the transcript is still read-only.
    apply(
        nvim,
        {"op": "append", "id": 3, "text": " goes on.", "prefix": ""},
        {"op": "block", "id": 4, "lines": ["", "[Note] done"], "kind": "notice"},
        IDLE,
    )
    assert lines(nvim) == [*before[:-1], "The **answer** goes on.", "", "[Note] done"]
    assert (
        nvim.lua("return vim.bo[require('gemini_companion.agent.transcript').buffer()].modifiable")
        is False
    )


def test_a_new_transcript_buffer_draws_streamed_text_whole(nvim: Nvim) -> None:
    # The transcript buffer wiped by the user: the next one starts empty, and
    # text streamed into it is drawn whole (nothing of the old buffer's tail).
    apply(nvim, {"op": "append", "id": 1, "text": "an answer in the old buffer", "prefix": ""})
    nvim.lua(
        "vim.cmd.bwipeout({ require('gemini_companion.agent.transcript').buffer(), bang = true })"
    )
    nvim.lua("vim.v.errmsg = ''")
    apply(nvim, {"op": "block", "id": 1, "lines": ["", ""], "kind": "message"})
    apply(nvim, {"op": "block", "id": 1, "lines": ["", ""], "kind": "message"})
    apply(nvim, {"op": "append", "id": 1, "text": "new", "prefix": ""})
    apply(nvim, {"op": "append", "id": 1, "text": " text", "prefix": ""})
    assert lines(nvim) == ["", "new text"]


def test_a_transcript_unloaded_by_the_user_is_drawn_again_with_what_streamed_since(
    panel: Nvim,
) -> None:
    nvim = panel
    message(nvim, 1, "one\ntwo")
    nvim.lua("require('gemini_companion.agent.panel').close()")
    nvim.lua("vim.cmd('bunload! ' .. require('gemini_companion.agent.transcript').buffer())")
    apply(nvim, {"op": "append", "id": 1, "text": " three", "prefix": ""})
    nvim.lua("require('gemini_companion.agent.panel').open({ enter = false })")
    assert lines(nvim) == ["", "one", "two three"]
