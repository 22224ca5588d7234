"""The transcript's markdown (issue 22 item 4, issue 25 item 2) in a real Neovim, the
answer streamed through the real Python host by the scripted transport
(tests/agent_fakes): agent/markdown.lua's highlights are real extmarks, read here
by group; a code fence is highlighted in its language once it is on screen (read
after a redraw); ``agent.markdown = "treesitter"`` gives Neovim's own highlighter,
and false plain text."""

from __future__ import annotations

from agent_setup import wait_agent, wait_transcript
from harness import Nvim, wait_for

# The highlights on a transcript row, as "group:text" (the text the mark covers on
# that row): the markdown's (agent/markdown.lua's `marks`: they are drawn, not kept
# as extmarks) and the code namespace's extmarks.
MARKS = """
local row = ...
local md = require('gemini_companion.agent.markdown')
assert(vim.wait(10000, function() return not md.busy() end), 'still classifying')
vim.cmd('redraw')
local buf = require('gemini_companion.agent.transcript').buffer()
local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
local out = {}
for _, m in ipairs(md.marks(buf, row, row + 1)) do
  local finish = m[3] == row and m[4] or #line
  out[#out + 1] = m[5] .. ':' .. line:sub(m[2] + 1, finish)
end
local ns = vim.api.nvim_get_namespaces()['gemini_companion_agent_code']
local opts = { details = true, overlap = true }
for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, { row, -1 }, opts)) do
  local d = m[4]
  local from = m[2] == row and m[3] or 0
  local finish = d.end_row == row and d.end_col or #line
  out[#out + 1] = d.hl_group .. ':' .. line:sub(from + 1, finish)
end
return out
"""

# The markdown's marks as "row:col:end_row:end_col:group", sorted; with
# an argument (the answer's first row), after classifying the answer again at once
# (what the stream's marks must equal).
ALL_MARKS = """
local again = ...
local buf = require('gemini_companion.agent.transcript').buffer()
local md = require('gemini_companion.agent.markdown')
assert(vim.wait(10000, function() return not md.busy() end), 'still classifying')
if type(again) == 'number' then
  md.reset()
  md.SLICE = math.huge -- at once
  md.clear(buf, 0, -1)
  md.update(buf, -1, 'prompt', again, again, vim.api.nvim_buf_line_count(buf), true)
end
local out = {}
for _, m in ipairs(md.marks(buf, 0, -1)) do
  out[#out + 1] = table.concat({ m[1], m[2], m[3], m[4], m[5] }, ':')
end
table.sort(out)
return out
"""

# Show a row at the top of the transcript's window.
SHOW = """
local row = ...
local buf = require('gemini_companion.agent.transcript').buffer()
local win = vim.fn.win_findbuf(buf)[1]
vim.api.nvim_win_call(win, function()
  vim.api.nvim_win_set_cursor(win, { row + 1, 0 })
  vim.cmd('normal! zt')
end)
"""


def marks(nvim: Nvim, row: int) -> list[str]:
    return list(nvim.lua(MARKS, row))


def groups(nvim: Nvim, row: int) -> list[str]:
    return [m.split(":", 1)[0] for m in marks(nvim, row)]


def wait_marks(nvim: Nvim, row: int, wanted: list[str]) -> list[str]:
    """The row's marks once they hold ``wanted``: a code fence on screen is parsed
    when the screen has kept still for a moment."""

    def check() -> list[str] | None:
        found = marks(nvim, row)
        return found if all(w in found for w in wanted) else None

    return wait_for(check, 30, f"{wanted} on row {row}")


def lua_parser(nvim: Nvim) -> bool:
    return bool(nvim.lua("return (pcall(vim.treesitter.language.add, 'lua'))"))


def test_a_streamed_answer_is_highlighted_as_markdown_with_its_code_fence_in_lua(
    scripted_nvim: Nvim,
) -> None:
    nvim = scripted_nvim
    nvim.api.command("GeminiAgent markdown split")
    text = wait_transcript(nvim, "\nDone.")
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle")
    lines = text.split("\n")
    heading = lines.index("## Summary")
    assert groups(nvim, heading) == ["@markup.heading.2.markdown"]
    # A line that arrived in three chunks is highlighted as a whole.
    prose = lines.index("Some **bold** text with `inline code`.")
    assert sorted(marks(nvim, prose)) == [
        "@markup.raw.markdown_inline:`inline code`",
        "@markup.strong.markdown_inline:**bold**",
    ]
    # The panel's role line is not a markdown heading: never taken for the model's.
    assert not any("heading" in g for g in groups(nvim, lines.index("▍ Gemini")))
    assert groups(nvim, lines.index("```lua")) == ["@markup.raw.block.markdown", "@label.markdown"]
    body = lines.index("local function greet(name)")
    assert "@markup.raw.block.markdown" in groups(nvim, body)
    if lua_parser(nvim):
        wait_marks(nvim, body, ["@keyword.function.lua:function", "@function.lua:greet"])
        wait_marks(nvim, body + 1, ["@string.lua:'hi '"])
    # The closing fence arrived split ("``" then "`"): the text after it is prose.
    assert groups(nvim, lines.index("Done.")) == []


def test_a_1_mb_answer_is_highlighted_as_if_drawn_at_once_and_fences_when_shown(
    scripted_nvim: Nvim,
) -> None:
    nvim = scripted_nvim
    # Batches over 300 lines (a stream faster than Neovim draws coalesces them) are
    # classified 300 lines per turn of the main loop, appends arriving meanwhile.
    nvim.lua("require('gemini_companion.agent.markdown').SLICE = 300")
    nvim.api.command("GeminiAgent markdown big 1000000")
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle", timeout=120)
    text = wait_transcript(nvim, "local last = true")
    lines = text.split("\n")
    assert len(lines) > 30_000
    last = lines.index("local last = true")
    assert groups(nvim, lines.index("## Last")) == ["@markup.heading.2.markdown"]
    middle = lines.index("## Step 2500") + 5  # a fence body the stream scrolled past
    assert lines[middle] == "local function count(path)"
    if lua_parser(nvim):
        # The answer ended with this fence open: on screen, it is in its language.
        wait_marks(nvim, last, ["@keyword.lua:local", "@boolean.lua:true"])
        # A fence scrolled past unseen is not parsed until it is shown.
        assert "@function.lua:count" not in marks(nvim, middle)
        nvim.lua(SHOW, middle)
        wait_marks(nvim, middle, ["@function.lua:count"])
    # The marks left by 1000 batches, lines split anywhere, are those of
    # classifying the answer whole at once.
    start = lines.index("▍ Gemini") + 1
    streamed = nvim.lua(ALL_MARKS)
    assert len(streamed) > 40_000
    assert streamed == nvim.lua(ALL_MARKS, start)


def test_agent_markdown_treesitter_uses_neovims_highlighter_with_fences_in_their_language(
    scripted_nvim: Nvim,
) -> None:
    nvim = scripted_nvim
    # As `setup({ agent = { markdown = "treesitter" } })` leaves it, before the panel opens.
    nvim.lua("require('gemini_companion.config').get().agent.markdown = 'treesitter'")
    nvim.api.command("GeminiAgent markdown split")
    text = wait_transcript(nvim, "\nDone.")
    lines = text.split("\n")
    found = nvim.lua(
        """
        local heading, role, code = ...
        local buf = require('gemini_companion.agent.transcript').buffer()
        local function captures(row)
          local out = {}
          for _, c in ipairs(vim.treesitter.get_captures_at_pos(buf, row, 0)) do
            out[#out + 1] = c.lang .. ':' .. c.capture
          end
          return out
        end
        return {
          active = vim.treesitter.highlighter.active[buf] ~= nil,
          heading = captures(heading),
          role = captures(role),
          code = captures(code),
        }
        """,
        lines.index("## Summary"),
        lines.index("▍ Gemini"),
        lines.index("local function greet(name)"),
    )
    assert found["active"], "no tree-sitter highlighter on the transcript"
    assert any("markup.heading" in c for c in found["heading"]), found
    assert not any("heading" in c for c in found["role"]), found
    assert any(c.startswith("lua:") for c in found["code"]), found
    assert marks(nvim, lines.index("## Summary")) == []  # not both highlighters


def test_agent_markdown_false_shows_the_transcript_as_plain_text(scripted_nvim: Nvim) -> None:
    nvim = scripted_nvim
    nvim.lua("require('gemini_companion.config').get().agent.markdown = false")
    nvim.api.command("GeminiAgent markdown split")
    text = wait_transcript(nvim, "\nDone.")
    shown = nvim.lua(
        "local buf = require('gemini_companion.agent.transcript').buffer()"
        " return { ts = vim.treesitter.highlighter.active[buf] ~= nil,"
        " syntax = vim.bo[buf].syntax }"
    )
    assert shown == {"ts": False, "syntax": "gemini_agent"}
    assert marks(nvim, text.split("\n").index("## Summary")) == []


def test_the_transcript_is_markdown_for_tree_sitter_whatever_highlights_it(
    scripted_nvim: Nvim,
) -> None:
    """Markdown renderers (render-markdown.nvim, markview.nvim) parse the buffer
    themselves: its tree-sitter language stays markdown with the default highlighter."""
    nvim = scripted_nvim
    nvim.api.command("GeminiAgent markdown split")
    wait_transcript(nvim, "\nDone.")
    found = nvim.lua(
        "local buf = require('gemini_companion.agent.transcript').buffer()"
        " local parser = vim.treesitter.get_parser(buf)"
        " return { lang = parser:lang(), ft = vim.bo[buf].filetype }"
    )
    assert found == {"lang": "markdown", "ft": "gemini_agent"}
