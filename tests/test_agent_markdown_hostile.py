"""Hostile markdown lines (issue 31 item 1) in a real Neovim: lines of up to 10,000
bytes of brackets, underscores, asterisks, backticks, pipes, fences left open and
mixtures (tests/hostile_markdown.py), streamed into the transcript in 100-byte
batches as the CLI sends them, end with the highlights of the whole line, each
mark set once (not again at each batch); and every line, ordinary or hostile, is
marked as the classifier before issue 31 marked it (tests/markdown_v1.lua, kept as
the oracle). What they cost is measured by bench/hostile_lines.py, not here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness import ROOT, Nvim
from hostile_markdown import hostile_lines, ordinary_lines

ORACLE = ROOT / "tests" / "markdown_v1.lua"

# The markdown's marks as "row:col:end_row:end_col:group:priority", sorted.
MARKS = """
local function marks(b)
  local out = {}
  for _, m in ipairs(require('gemini_companion.agent.markdown').marks(b, 0, -1)) do
    out[#out + 1] = table.concat({ m[1], m[2], m[3], m[4], m[5], m[6] }, ':')
  end
  table.sort(out)
  return out
end
"""

# Stream the text into an answer in batches of `chunk` bytes, end the turn, then
# classify the answer again whole: both sets of marks, and how many marks the
# stream set in all (agent/markdown_marks.lua counts them).
STREAM = (
    MARKS
    + """
local text, chunk = ...
local t = require('gemini_companion.agent.transcript')
local md = require('gemini_companion.agent.markdown')
local b = t.buffer()
t._apply({ { op = 'block', id = 1, lines = { '▍ You', 'go', '', '▍ Gemini' }, kind = 'prompt' } })
local start = vim.api.nvim_buf_line_count(b)
for i = 1, #text, chunk do
  t._apply({ { op = 'append', id = 2, text = text:sub(i, i + chunk - 1), prefix = '' } })
end
t._apply({ { op = 'state', state = { state = 'idle' } } })
assert(vim.wait(10000, function() return not md.busy() end), 'still classifying')
local streamed = marks(b)
local added = require('gemini_companion.agent.markdown_marks').added
local extmarks = #vim.api.nvim_buf_get_extmarks(b, md.ns, 0, -1, {})
md.reset()
md.SLICE = math.huge
md.clear(b, 0, -1)
md.update(b, -1, 'prompt', start, start, vim.api.nvim_buf_line_count(b), true)
return { streamed = streamed, whole = marks(b), added = added, extmarks = extmarks }
"""
)


def stream(nvim: Nvim, text: str, chunk: int = 100) -> tuple[list[str], list[str], int, int]:
    """The marks streamed, those of the whole answer, how many the stream set, and
    the extmarks left in the markdown's namespace."""
    found = nvim.lua(STREAM, text, chunk)
    return (
        list(found["streamed"]),
        list(found["whole"]),
        int(found["added"]),
        int(found["extmarks"]),
    )


def test_hostile_lines_streamed_in_batches_end_with_the_marks_of_the_whole_line_set_once(
    nvim_factory: Callable[..., Nvim],
) -> None:
    nvim = nvim_factory()
    corpus = hostile_lines()
    # Each line streamed after a paragraph of prose; the last one ends the turn
    # without a newline (then the turn's end says it is whole).
    text = "\n".join(f"Line {name}:\n{line}" for name, line in corpus.items())
    streamed, whole, added, extmarks = stream(nvim, text)
    assert len(whole) > 10_000  # the corpus is marked: pipes, emphasis, code...
    missing, extra = sorted(set(whole) - set(streamed)), sorted(set(streamed) - set(whole))
    assert streamed == whole, (missing[:5], extra[:5])
    # Each mark was set once as its line grew (a mark to the line's end follows
    # it), not cleared and set again at each of 3,000 batches.
    assert added <= len(streamed) + 50
    # They are not kept as extmarks (about 200 bytes each in Neovim): only the
    # fences' spans are.
    assert extmarks <= 10


def test_a_line_split_anywhere_ends_with_the_marks_of_the_whole_line(
    nvim_factory: Callable[..., Nvim],
) -> None:
    nvim = nvim_factory()
    text = "\n".join(ordinary_lines()[:400])
    for chunk in (1, 2, 3, 7):
        streamed, whole, _, _ = stream(nvim, text, chunk)
        assert streamed == whole, chunk
        # A new transcript for the next run.
        nvim.lua(
            "vim.api.nvim_buf_delete(require('gemini_companion.agent.transcript').buffer(),"
            " { force = true })"
        )


# Classify each line with the oracle and with the classifier, in two buffers.
COMPARE = (
    MARKS
    + """
local lines, oracle = ...
local old = dofile(oracle)
local new = require('gemini_companion.agent.markdown_lines')
local function run(classifier)
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  local fences = {}
  for i, line in ipairs(lines) do
    fences[i] = vim.inspect(classifier.classify(b, i - 1, i - 1, line))
  end
  return { marks = marks(b), fences = fences }
end
return { old = run(old), new = run(new) }
"""
)


def by_row(marks: list[str]) -> dict[int, list[str]]:
    rows: dict[int, list[str]] = {}
    for m in marks:
        rows.setdefault(int(m.split(":", 1)[0]), []).append(m)
    return rows


def test_every_line_is_marked_as_the_classifier_before_issue_31_marked_it(
    nvim_factory: Callable[..., Nvim],
) -> None:
    nvim = nvim_factory()
    lines = ordinary_lines() + list(hostile_lines(3_000).values())
    found = nvim.lua(COMPARE, lines, str(Path(ORACLE)))
    old, new = found["old"], found["new"]
    assert len(old["marks"]) > 3_000
    old_rows, new_rows = by_row(old["marks"]), by_row(new["marks"])
    wrong = [
        (lines[row], sorted(old_rows.get(row, [])), sorted(new_rows.get(row, [])))
        for row in sorted(set(old_rows) | set(new_rows))
        if sorted(old_rows.get(row, [])) != sorted(new_rows.get(row, []))
    ]
    assert not wrong, wrong[:3]
    assert new["fences"] == old["fences"]


# The screen's attributes along a transcript line, and the marks' groups there.
SCREEN = """
local text = ...
local t = require('gemini_companion.agent.transcript')
local b = t.buffer()
vim.api.nvim_win_set_buf(0, b)
t._apply({ { op = 'block', id = 1, lines = { 'a tool' }, kind = 'tool' } })
t._apply({ { op = 'append', id = 2, text = text, prefix = '' } })
vim.cmd('redraw')
local function attrs(screen_row)
  local out = {}
  for col = 1, 30 do
    out[#out + 1] = vim.fn.screenattr(screen_row, col)
  end
  return out
end
local function row()
  return vim.fn.search('^plain', 'nw')
end
local before = attrs(row())
local first = row()
-- The block above drawn again, longer: the line moves down, its marks with it.
t._apply({ { op = 'block', id = 1, lines = { 'a tool', 'its output', 'more' }, kind = 'tool' } })
vim.api.nvim_win_set_cursor(0, { 1, 0 })
vim.cmd('redraw')
local now = row()
return { before = before, after = attrs(now), line = vim.fn.getline(now), moved = now - first }
"""


def test_the_marks_are_drawn_where_their_line_is_shown_as_lines_come_before_it(
    nvim_factory: Callable[..., Nvim],
) -> None:
    nvim = nvim_factory()
    found = nvim.lua(SCREEN, "\nplain **bold** and `code` end\n")
    assert found["line"] == "plain **bold** and `code` end" and found["moved"] == 2
    for attrs in (found["before"], found["after"]):
        plain, bold, code = attrs[0], attrs[6], attrs[19]
        assert len({plain, bold, code}) == 3
        assert attrs[6:14] == [bold] * 8 and attrs[14:19] == [plain] * 5
