--- The transcript's whole lines are classified (agent/markdown_lines.lua) when
--- they are first drawn, not when they arrive (issue 31 item 5). A stream faster
--- than a screen a frame scrolls most of its lines by unseen: each is only looked
--- at for the one thing that carries over to the next line, a code fence it
--- opens, and kept here as pending. The decoration provider that draws the marks
--- (agent/markdown_marks.lua) classifies the pending rows of the lines in view
--- first; so does `agent/markdown.lua`'s `marks()` for the rows it is asked for.
---
--- Pending rows are ranges in the namespace `gemini_companion_agent_markdown_lazy`
--- (extmarks without a decoration, from the range's first row to its last), so
--- they follow the lines as blocks above them change. Rows in a fence are never
--- pending: its body is one span, lit in its language (agent/markdown_code.lua).
local M = {}

local api = vim.api

M.ns = api.nvim_create_namespace("gemini_companion_agent_markdown_lazy")

--- The fence a whole line opens, as agent/markdown_lines.lua's `classify()`
--- finds it (`tests/test_agent_markdown_lazy.py` holds them to the same): three or
--- more backticks (no backtick after them) or tildes, after at most three spaces.
---@param line string
---@param rel integer the line's row relative to its block's first
---@return gemini_companion.MarkdownFence?
function M.opens(line, rel)
  local lead, char = line:match("^ ? ? ?()([`~])")
  if not lead then
    return nil
  end
  local e = line:find(char == "`" and "[^`]" or "[^~]", lead) or #line + 1
  local len = e - lead
  if len < 3 or (char == "`" and line:find("`", e, true)) then
    return nil
  end
  return { open = rel, char = char, len = len, info = line:match("^%s*([^%s{`]+)", e) or "" }
end

local range = { end_row = 0, end_col = 0, right_gravity = false, end_right_gravity = true }

--- Rows `first`..`last` (inclusive) of `b` are classified when first drawn.
---@param b integer
---@param first integer
---@param last integer
function M.defer(b, first, last)
  range.end_row = last
  api.nvim_buf_set_extmark(b, M.ns, first, 0, range)
end

--- Forget the pending rows from `first` to `last` - 1 (`last` -1: to the end).
---@param b integer
---@param first integer
---@param last integer
function M.clear(b, first, last)
  api.nvim_buf_clear_namespace(b, M.ns, first, last)
end

--- Classify the pending rows of `b` from `top` to `bot` (inclusive): the lines in
--- view, or the ones asked for.
---@param b integer
---@param top integer
---@param bot integer
function M.ensure(b, top, bot)
  local found = api.nvim_buf_get_extmarks(b, M.ns, { top, 0 }, { bot, -1 }, { details = true, overlap = true })
  if #found == 0 then
    return
  end
  local classifier = require("gemini_companion.agent.markdown_lines")
  local marks = require("gemini_companion.agent.markdown_marks")
  for _, m in ipairs(found) do
    local first, last = m[2], m[4].end_row
    local from, to = math.max(first, top), math.min(last, bot)
    if from <= to then
      api.nvim_buf_del_extmark(b, M.ns, m[1])
      if first < from then
        M.defer(b, first, from - 1)
      end
      if last > to then
        M.defer(b, to + 1, last)
      end
      for i, line in ipairs(api.nvim_buf_get_lines(b, from, to + 1, false)) do
        local row = from + i - 1
        local added = marks.added
        classifier.classify(b, row, 0, line)
        if marks.added ~= added then
          marks.seal(b, row)
        end
      end
    end
  end
end

return M
