--- Markdown highlighting of the transcript whose cost follows what changed, never
--- the transcript's size (issue 25 item 2, issue 22 item 4).
---
--- Neovim's tree-sitter highlighter re-parses a growing answer without headings
--- whole after each batch (one markdown `section`), and parses the inline and
--- HTML injections of the lines on screen at each redraw (bench/markdown_parse.lua
--- measures both). Here, instead, each line is classified once when it arrives,
--- the growing last line as it grows (only what each batch appended): headings, list
--- markers, block quotes, rules, tables, fence lines and bodies, inline code,
--- bold, italic, strikethrough and links. The result is real extmarks in the
--- namespace `gemini_companion_agent_markdown` with the tree-sitter capture groups
--- (`@markup.heading.1.markdown`, `@markup.strong.markdown_inline`, ...), so colour
--- schemes colour it as they colour markdown (the patterns: agent/markdown_lines.lua).
--- A code fence that closed (or was
--- left open at its block's end) is highlighted in its language by
--- agent/markdown_code.lua when it is first on screen.
---
--- A block's state (the rows classified so far and the fence open at their end)
--- is kept by block id, with rows relative to the block's first line, so blocks
--- replaced above it do not disturb it.
local M = {}

local api = vim.api

local classifier = require("gemini_companion.agent.markdown_lines")
local lazy = require("gemini_companion.agent.markdown_lazy")

M.ns = classifier.ns

--- The block kinds whose lines are markdown: the agent's answers and the prompts.
--- Tool blocks, notices and thoughts are the panel's own (transcript.lua).
M.KINDS = { message = true, text = true, prompt = true }

---@class gemini_companion.MarkdownFence
---@field open integer its opening line, relative to the block's first
---@field char string "`" or "~"
---@field len integer the length of the opening run
---@field info string the info string's first word ("" when none)
---@field lit? integer the end (exclusive, relative) of the body highlighted in its language
---@field mark? integer its one `@markup.raw.block` extmark, from its opening line on

---@class gemini_companion.MarkdownState
---@field done integer rows of the block (from its first) whose state is folded in
---@field fence? gemini_companion.MarkdownFence the fence open after those rows
---@field complete? boolean the block's last line is final
---@field busy? boolean more rows are being classified in the next turns
---@field ended? boolean the block is over (M.finish), to be done after them
---@field tail? { line: gemini_companion.MarkdownLine, sealed?: boolean } the last
--- line (row `st.done`) classified so far, its marks set; `sealed`: classified as
--- whole when the block ended

---@type table<integer, gemini_companion.MarkdownState>
local states = {}

local run -- defined below, with the blocks
local clear -- defined below, with M.reset

---@type boolean the transcript is highlighted here (`agent.markdown` true)
local enabled = false

--- Forget every block, and the marks of buffer `b` (read again:
--- transcript_persist.lua), or of every buffer without it.
---@param b? integer
function M.reset(b)
  states = {}
  if b and api.nvim_buf_is_valid(b) then
    lazy.clear(b, 0, -1)
  end
  require("gemini_companion.agent.markdown_marks").reset(b)
end

--- Forget the marks of rows `first`..`last` - 1: the fences' (extmarks in `M.ns`)
--- and the lines' (agent/markdown_marks.lua).
---@param b integer
---@param first integer
---@param last integer
function clear(b, first, last)
  api.nvim_buf_clear_namespace(b, M.ns, first, last)
  lazy.clear(b, first, last)
  require("gemini_companion.agent.markdown_marks").clear(b, first, last)
end
M.clear = clear

--- The markdown marks of rows `first`..`last` - 1 (`last` -1: to the end), as
--- `{ row, col, end_row, end_col, group, priority }`, sorted (for tests and
--- benches: the lines' marks are drawn, not kept as extmarks).
---@param b integer
---@param first integer
---@param last integer
---@return table[]
function M.marks(b, first, last)
  lazy.ensure(b, first, last == -1 and api.nvim_buf_line_count(b) - 1 or last - 1)
  local out = {}
  for _, m in ipairs(require("gemini_companion.agent.markdown_marks").get(b, first, last)) do
    out[#out + 1] = { m[1], m[2], m[1], m[3], m[4], m[5] }
  end
  local to = last == -1 and -1 or { last - 1, -1 }
  for _, m in ipairs(api.nvim_buf_get_extmarks(b, M.ns, { first, 0 }, to, { details = true, overlap = true })) do
    local d = m[4]
    out[#out + 1] = { m[2], m[3], d.end_row, d.end_col, d.hl_group, d.priority }
  end
  table.sort(out, function(x, y)
    for i = 1, 6 do
      if x[i] ~= y[i] then
        return x[i] < y[i]
      end
    end
    return false
  end)
  return out
end

--- Highlight a new transcript buffer as `agent.markdown` says: true (here),
--- "treesitter" (Neovim's highlighter; plain text without the parser) or false
--- (plain text, syntax/gemini_agent.vim). The buffer is markdown for tree-sitter
--- in every case: markdown renderers such as render-markdown.nvim and
--- markview.nvim parse it themselves when `gemini_agent` is in their file types.
---@param b integer
function M.start(b)
  -- Block ids are unique in the Neovim session: the other buffers' states stay.
  require("gemini_companion.agent.markdown_marks").reset(b)
  require("gemini_companion.agent.markdown_marks").draw(b)
  pcall(vim.treesitter.language.register, "markdown", "gemini_agent")
  local config = require("gemini_companion.config").get()
  local markdown = config and config.agent and config.agent.markdown
  if markdown == nil then
    markdown = true
  end
  enabled = markdown == true
  if markdown ~= "treesitter" or not pcall(vim.treesitter.start, b, "markdown") then
    vim.bo[b].syntax = "gemini_agent"
  end
end

local span_opts = { end_row = 0, end_col = 0, hl_group = classifier.RAW, priority = 90 } ---@type vim.api.keyset.set_extmark

--- Stretch the fence's one mark (created on first use) to row `row`, column
--- `end_col`: a fence costs one mark, however long.
---@param b integer
---@param start integer the block's first line
---@param fence gemini_companion.MarkdownFence
---@param row integer
---@param end_col integer
local function span(b, start, fence, row, end_col)
  span_opts.id, span_opts.end_row, span_opts.end_col = fence.mark, row, end_col
  fence.mark = api.nvim_buf_set_extmark(b, M.ns, start + fence.open, 0, span_opts)
end

--- Have the fence's body up to `to` (relative, exclusive) highlighted in its
--- language once (agent/markdown_code.lua: when it is first on screen).
---@param b integer
---@param start integer the block's first line
---@param fence gemini_companion.MarkdownFence
---@param to integer
local function light(b, start, fence, to)
  if fence.lit ~= to then
    fence.lit = to
    require("gemini_companion.agent.markdown_code").queue(b, start + fence.open + 1, start + to, fence.info)
  end
end

--- The line closes the fence: a run of its character at least as long, alone
--- (after at most three spaces, and blanks).
---@param fence gemini_companion.MarkdownFence
---@param line string
---@return boolean
local function closes(fence, line)
  local lead = line:find("[^ ]")
  if not lead or lead > 4 or line:sub(lead, lead) ~= fence.char then
    return false
  end
  local chars = line:match(fence.char == "`" and "^ *(```+)%s*$" or "^ *(~~~+)%s*$")
  return chars ~= nil and #chars >= fence.len
end

-- Blocks ------------------------------------------------------------------------

--- Lines classified in one turn of the main loop (a few ms): a batch of
--- hundreds of kilobytes (a stream faster than Neovim draws coalesces into one)
--- is classified in slices, so Neovim never freezes on it.
M.SLICE = 2000

local finish_state -- defined below, with M.finish

--- Classify the block's rows from `st.done` (relative) to `finish` (absolute),
--- at most `M.SLICE` now; the rest in the next turns of the main loop.
---@param b integer
---@param id integer
---@param st gemini_companion.MarkdownState
---@param start integer the block's first line
---@param finish integer
function run(b, id, st, start, finish)
  local first = start + st.done
  local last = math.min(finish, first + M.SLICE)
  local partial = last < finish
  local complete = st.complete
  local lines = api.nvim_buf_get_lines(b, first, last, false)
  local marks = require("gemini_companion.agent.markdown_marks")
  local fence = st.fence
  local folds = (complete or partial) and #lines or #lines - 1
  local tail = st.tail
  st.tail = nil
  local pending -- the first row of the run of rows classified when first drawn
  for i, line in ipairs(lines) do
    local row = first + i - 1
    local rel = row - start
    if pending and (fence or i > folds or (tail and tail.line.rel == rel)) then
      lazy.defer(b, pending, row - 1)
      pending = nil
    end
    if fence then
      if closes(fence, line) then
        span(b, start, fence, row, #line)
        light(b, start, fence, rel)
        fence = nil
      end
    elseif i <= folds and not (tail and tail.line.rel == rel) then
      pending = pending or row
      fence = lazy.opens(line, rel)
    else
      -- The line being classified as it grows: only what was appended.
      local ls = tail and tail.line
      if not ls or ls.rel ~= rel or tail.sealed or #line < ls.n or line:sub(1, ls.n) ~= ls.s then
        clear(b, row, row + 1)
        ls = classifier.start(rel)
      end
      fence = classifier.feed(ls, b, row, line, i <= folds)
      if i > folds then
        st.tail = { line = ls }
      else
        marks.seal(b, row)
      end
    end
    if i == folds then
      st.done, st.fence = rel + 1, fence
    end
  end
  if pending then
    lazy.defer(b, pending, first + #lines - 1)
  end
  if fence and #lines > 0 then
    span(b, start, fence, first + #lines - 1, #lines[#lines])
  end
  if partial then
    st.busy = true
    vim.schedule(function()
      if states[id] ~= st or not api.nvim_buf_is_valid(b) then
        return
      end
      st.busy = nil
      st.tail = nil -- its marks are cleared here
      local now, now_finish = require("gemini_companion.agent.transcript")._range(id)
      if now then
        clear(b, now + st.done, now_finish)
        run(b, id, st, now, now_finish)
      end
    end)
    return
  end
  if complete and fence then
    light(b, start, fence, finish - start)
  end
  if st.ended then
    finish_state(b, st, start, finish)
  end
end

--- Some block is still being classified in slices (for tests and benches).
---@return boolean
function M.busy()
  for _, st in pairs(states) do
    if st.busy then
      return true
    end
  end
  return false
end

--- Classify rows `first`..`finish` - 1 of the block `id` (first line `start`)
--- after they changed. `replaced`: the block was drawn whole (an answer's block
--- then grows by appends; any other block is complete: its last line is final),
--- else more was appended and its last line may still grow.
---@param b integer
---@param id integer
---@param kind string
---@param start integer
---@param first integer
---@param finish integer
---@param replaced boolean
function M.update(b, id, kind, start, first, finish, replaced)
  if not enabled then
    return
  end
  local complete = replaced and kind ~= "message" and kind ~= "text"
  local code = require("gemini_companion.agent.markdown_code")
  local st = states[id]
  -- The last line, classified so far, keeps its marks: only what follows counts.
  local keep = st and not st.busy and not replaced and st.tail and first - start == st.done and 1 or 0
  clear(b, first + keep, finish)
  code.clear(b, first, finish)
  if not M.KINDS[kind] then
    states[id] = nil
    return
  end
  if st and st.busy then
    st.complete = complete -- its next slice goes on to the block's end
    return
  end
  if not st or replaced or first - start ~= st.done then
    if first > start then
      clear(b, start, first)
      code.clear(b, start, first)
    end
    st = { done = 0 }
    states[id] = st
  end
  st.complete = complete
  run(b, id, st, start, finish)
end

--- The block `id` is over (its turn ended, or another block follows it): a fence
--- still open at its end is highlighted in its language to the end.
---@param b integer
---@param id integer
---@param start integer
---@param finish integer
function M.finish(b, id, start, finish)
  local st = enabled and states[id]
  if not st then
    return
  elseif st.busy then
    st.ended = true
    return
  end
  finish_state(b, st, start, finish)
end

---@param b integer
---@param st gemini_companion.MarkdownState
---@param start integer
---@param finish integer
function finish_state(b, st, start, finish)
  st.ended = nil
  local tail = st.tail
  if tail and not tail.sealed and start + tail.line.rel == finish - 1 then
    -- The last line is whole: what waited for the rest of it is decided.
    local last = api.nvim_buf_get_lines(b, finish - 1, finish, false)[1] or ""
    classifier.feed(tail.line, b, finish - 1, last, true)
    require("gemini_companion.agent.markdown_marks").seal(b, finish - 1)
    tail.sealed = true
  end
  local fence = st.fence
  if fence and st.done < finish - start then
    -- The last line: a closing fence, or more of the body.
    local last = api.nvim_buf_get_lines(b, finish - 1, finish, false)[1] or ""
    if closes(fence, last) then
      return -- closed: lit when it was drawn
    end
  end
  if fence then
    light(b, start, fence, finish - start)
  end
end

return M
