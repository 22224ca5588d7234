"""The transcript's whole lines are classified when first drawn (issue 31 item 5,
agent/markdown_lazy.lua): a batch of lines the window scrolls past unseen costs a
look for the fences they open, and a line is highlighted as soon as it is on
screen, however it got there. A real headless Neovim with the panel open, fed
batches as the host sends them; the screen is read after a redraw."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from agent_setup import highlighted
from harness import Nvim, wait_for
from hostile_markdown import hostile_lines, ordinary_lines

APPLY = "require('gemini_companion.agent.transcript')._apply(...)"
WORKING = {"op": "state", "state": {"state": "working", "pending": [], "commands": []}}
IDLE = {"op": "state", "state": {"state": "idle", "pending": [], "commands": []}}

# Show a row (1-based) at the top of the transcript's window.
SHOW = """
local row = ...
local b = require('gemini_companion.agent.transcript').buffer()
local win = vim.fn.win_findbuf(b)[1]
vim.api.nvim_win_call(win, function()
  vim.api.nvim_win_set_cursor(win, { row, 0 })
  vim.cmd('normal! zt')
end)
"""

ADDED = "return require('gemini_companion.agent.markdown_marks').added"

# The fence each line opens, as classify() finds it and as markdown_lazy.lua's
# opens() does (vim.inspect of each, or "nil").
FENCES = """
local lines = ...
local classifier = require('gemini_companion.agent.markdown_lines')
local lazy = require('gemini_companion.agent.markdown_lazy')
local b = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
local classified, opened = {}, {}
for i, line in ipairs(lines) do
  classified[i] = vim.inspect(classifier.classify(b, i - 1, 7, line))
  opened[i] = vim.inspect(lazy.opens(line, 7))
end
return { classified, opened }
"""

FENCE_LINES = [
    "```",
    "```lua",
    "   ```python  extra words",
    "    ```lua",
    "``",
    "```lua`",
    "``` a ` b",
    "~~~",
    "~~~~ lua {.class}",
    "~~~ `tick` inside",
    "  ~~",
    "````{python}",
    "```\t  lua",
    "\t```lua",
    "> ```lua",
    "- ```lua",
    "```" + "`" * 5000,
    "~" * 3 + "x" * 5000,
    "",
    " ",
    "text ```lua",
]


def apply(nvim: Nvim, *ops: dict[str, Any]) -> None:
    nvim.lua(APPLY, list(ops))


def drawn(nvim: Nvim, cells: list[list[int]], expected: list[bool]) -> None:
    """Wait for the screen to show ``expected`` at ``cells`` (redrawn at each look:
    Neovim 0.11 may draw a line's highlight only at the second redraw)."""
    wait_for(lambda: highlighted(nvim, cells) == expected, 30, f"{expected} at {cells}")


@pytest.fixture
def panel(nvim: Nvim) -> Nvim:
    nvim.lua("require('gemini_companion.agent.panel').open({ enter = false })")
    nvim.lua(
        "for _, g in ipairs(...) do vim.api.nvim_set_hl(0, g, { fg = '#123456', bold = true }) end",
        ["@markup.heading.2.markdown", "@markup.strong.markdown_inline"],
    )
    return nvim


def test_the_fence_a_line_opens_is_found_as_the_classifier_finds_it(
    nvim_factory: Callable[..., Nvim],
) -> None:
    nvim = nvim_factory()
    lines = FENCE_LINES + ordinary_lines() + list(hostile_lines(2_000).values())
    classified, opened = nvim.lua(FENCES, lines)
    differ = [
        (line[:40], c, o) for line, c, o in zip(lines, classified, opened, strict=True) if c != o
    ]
    assert not differ, differ[:5]
    assert sum(c != "nil" for c in classified) >= 10  # the corpus opens fences


def section(n: int) -> str:
    return f"## Step {n}\nplain **bold** text\n```lua\nlocal n = {n}\n```\nafter\n\n"


def test_lines_scrolled_past_unseen_are_classified_only_once_shown(panel: Nvim) -> None:
    nvim = panel
    apply(nvim, WORKING, {"op": "block", "id": 1, "lines": ["", ""], "kind": "message"})
    before = nvim.lua(ADDED)
    # One batch of 3,500 lines (what a flood coalesces into), the end of the turn
    # (the window shows the last line at once), then a redraw.
    text = "".join(section(n) for n in range(500))
    apply(nvim, {"op": "append", "id": 1, "text": text, "prefix": ""}, IDLE)
    lines = nvim.lua("return require('gemini_companion.agent.transcript').lines()")
    last = lines.index("## Step 499") + 1
    drawn(nvim, [[last, 4], [last + 1, 10], [last + 1, 2]], [True, True, False])
    # Only the lines on screen were classified: 500 headings and 500 bold words
    # were not all marked.
    assert nvim.lua(ADDED) - before < 100
    # A section the stream scrolled past unseen, once shown: highlighted, its
    # fence (opened and closed in rows not classified) in its place and the prose
    # after it plain.
    middle = lines.index("## Step 250") + 1
    nvim.lua(SHOW, middle)
    cells = [[middle, 4], [middle + 1, 10], [middle + 1, 2], [middle + 3, 1], [middle + 5, 1]]
    drawn(nvim, cells, [True, True, False, True, False])
    assert nvim.lua(ADDED) - before < 200


def test_the_marks_asked_for_are_those_of_classifying_each_line_at_once(panel: Nvim) -> None:
    nvim = panel
    apply(nvim, WORKING, {"op": "block", "id": 1, "lines": ["", ""], "kind": "message"})
    text = "".join(section(n) for n in range(300))
    for i in range(0, len(text), 4000):
        apply(nvim, {"op": "append", "id": 1, "text": text[i : i + 4000], "prefix": ""})
    apply(nvim, IDLE)
    marks = nvim.lua(
        "local md = require('gemini_companion.agent.markdown')"
        " local b = require('gemini_companion.agent.transcript').buffer()"
        " local out = {}"
        " for _, m in ipairs(md.marks(b, 0, -1)) do out[#out + 1] = m[5] end"
        " return out"
    )
    assert marks.count("@markup.heading.2.markdown") == 300
    assert marks.count("@markup.strong.markdown_inline") == 300
    assert marks.count("@markup.raw.block.markdown") == 300  # one span per fence
