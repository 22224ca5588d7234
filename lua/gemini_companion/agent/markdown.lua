--- Markdown highlighting of the transcript whose cost follows what changed, never
--- the transcript's size (issue 25 item 2, issue 22 item 4).
---
--- Neovim's tree-sitter highlighter re-parses a growing answer without headings
--- whole after each batch (one markdown `section`), and parses the inline and
--- HTML injections of the lines on screen at each redraw (bench/markdown_parse.lua
--- measures both). Here, instead, each line is classified once by Lua patterns
--- when it arrives (the growing last line again at each batch): headings, list
--- markers, block quotes, rules, tables, fence lines and bodies, inline code,
--- bold, italic, strikethrough and links. The result is real extmarks in the
--- namespace `gemini_companion_agent_markdown` with the tree-sitter capture groups
--- (`@markup.heading.1.markdown`, `@markup.strong.markdown_inline`, ...), so colour
--- schemes colour it as they colour markdown. A code fence that closed (or was
--- left open at its block's end) is highlighted in its language by
--- agent/markdown_code.lua when it is first on screen.
---
--- A block's state (the rows classified so far and the fence open at their end)
--- is kept by block id, with rows relative to the block's first line, so blocks
--- replaced above it do not disturb it.
local M = {}

local api = vim.api

M.ns = api.nvim_create_namespace("gemini_companion_agent_markdown")

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

---@type table<integer, gemini_companion.MarkdownState>
local states = {}

---@type boolean the transcript is highlighted here (`agent.markdown` true)
local enabled = false

--- Forget every block (a new transcript buffer).
function M.reset()
  states = {}
end

--- Highlight a new transcript buffer as `agent.markdown` says: true (here),
--- "treesitter" (Neovim's highlighter; plain text without the parser) or false
--- (plain text, syntax/gemini_agent.vim). The buffer is markdown for tree-sitter
--- in every case: markdown renderers such as render-markdown.nvim and
--- markview.nvim parse it themselves when `gemini_agent` is in their file types.
---@param b integer
function M.start(b)
  M.reset()
  require("gemini_companion.agent.markdown_code").reset()
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

local PRI = vim.hl.priorities.treesitter -- 100, as Neovim's highlighter
local RAW = "@markup.raw.block.markdown"

---@param b integer
---@param row integer
---@param col integer
---@param end_col integer
---@param group string
---@param priority? integer
local opts = { end_col = 0, hl_group = "", priority = PRI } -- reused: read at once
local function mark(b, row, col, end_col, group, priority)
  if end_col > col then
    opts.end_col, opts.hl_group, opts.priority = end_col, group, priority or PRI
    api.nvim_buf_set_extmark(b, M.ns, row, col, opts)
  end
end

-- Inline ------------------------------------------------------------------------

--- `s` with bytes `from`..`to` replaced by "\1", so later patterns skip them.
---@param s string
---@param from integer
---@param to integer
---@return string
local function mask(s, from, to)
  return s:sub(1, from - 1) .. ("\1"):rep(to - from + 1) .. s:sub(to + 1)
end

--- Delimited spans (`**x**`, `*x*`, `~~x~~`): a pattern with two captures of
--- positions, the content's first and one past its last byte; `delim` long
--- delimiters around it.
---@param b integer
---@param row integer
---@param s string the line, masked
---@param pattern string
---@param delim integer
---@param group string
---@return string s masked where matched
local function spans(b, row, s, pattern, delim, group)
  local init = 1
  while true do
    local from, to = s:find(pattern, init)
    if not from then
      return s
    end
    mark(b, row, from - 1, to, group)
    s = mask(s, from, from + delim - 1)
    s = mask(s, to - delim + 1, to)
    init = to + 1
  end
end

--- Inline markdown of one line from byte `col` (0-based): code spans, links,
--- bold, italic, strikethrough.
---@param b integer
---@param row integer
---@param line string
---@param col integer
local function inline(b, row, line, col)
  local s = col > 0 and (("\1"):rep(col) .. line:sub(col + 1)) or line
  if not s:find("[`*_~%[<]") then
    return
  end
  -- Code spans first: nothing inside them is markdown.
  local init = 1
  while true do
    local from, to = s:find("`+", init)
    if not from then
      break
    end
    local ticks = s:sub(from, to)
    local close_from, close_to = s:find(ticks, to + 1, true)
    while close_from and s:sub(close_to + 1, close_to + 1) == "`" do
      local _, run_end = s:find("^`+", close_from)
      close_from, close_to = s:find(ticks, run_end + 1, true)
    end
    if not close_from then
      init = to + 1
    else
      mark(b, row, from - 1, close_to, "@markup.raw.markdown_inline")
      s = mask(s, from, close_to)
      init = close_to + 1
    end
  end
  -- Links: [text](destination), and <autolinks>. Each pattern runs only when
  -- the line holds its delimiters (most lines hold none).
  init = s:find("](", 1, true) and 1 or #s + 1
  while true do
    local from, to = s:find("%[[^%]\1]-%]%([^%)%s\1]*%)", init)
    if not from then
      break
    end
    local close = s:find("](", from, true) -- the end of the link's text
    mark(b, row, from - 1, from, "@markup.link.markdown_inline")
    mark(b, row, from, close - 1, "@markup.link.label.markdown_inline")
    mark(b, row, close - 1, close + 1, "@markup.link.markdown_inline")
    mark(b, row, close + 1, to - 1, "@markup.link.url.markdown_inline")
    mark(b, row, to - 1, to, "@markup.link.markdown_inline")
    s = mask(s, from, to)
    init = to + 1
  end
  init = s:find("<", 1, true) or #s + 1
  while true do
    local from, to = s:find("<%a[%w+.-]*:[^%s<>\1]+>", init)
    if not from then
      break
    end
    mark(b, row, from - 1, to, "@markup.link.url.markdown_inline")
    s = mask(s, from, to)
    init = to + 1
  end
  local star, under = s:find("*", 1, true), s:find("_", 1, true)
  if star and s:find("**", star, true) then
    s = spans(b, row, s, "%*%*[^%s*\1][^\1]-%*%*", 2, "@markup.strong.markdown_inline")
  end
  if under and s:find("__", under, true) then
    s = spans(b, row, s, "%f[%w_]__[^%s_\1][^\1]-__%f[^%w_]", 2, "@markup.strong.markdown_inline")
  end
  if s:find("~~", 1, true) then
    s = spans(b, row, s, "~~[^%s~\1][^\1]-~~", 2, "@markup.strikethrough.markdown_inline")
  end
  if star then
    s = spans(b, row, s, "%*[^%s*\1][^*\1]-%*", 1, "@markup.italic.markdown_inline")
  end
  if under then
    spans(b, row, s, "%f[%w_]_[^%s_\1][^_\1]-_%f[^%w_]", 1, "@markup.italic.markdown_inline")
  end
end

-- Lines -------------------------------------------------------------------------

--- A fence line: its indent, the run of ` or ~, and the rest.
---@param line string
---@return string? indent, string? run, string? rest
local function fence_line(line)
  local indent, run, rest = line:match("^( ?%s?%s?)(```+)(.*)$")
  if run and not rest:find("`", 1, true) then
    return indent, run, rest
  end
  indent, run, rest = line:match("^( ?%s?%s?)(~~~+)(.*)$")
  if run then
    return indent, run, rest
  end
end

---@type table<integer, true> the bytes that can start a line's markdown syntax
local STARTS = {}
for ch in ("`~#-*_>+|0123456789"):gmatch(".") do
  STARTS[ch:byte()] = true
end

--- Classify one line outside a fence and set its marks; returns the fence it
--- opens, if it does.
---@param b integer
---@param row integer absolute
---@param rel integer relative to the block's first line
---@param line string
---@return gemini_companion.MarkdownFence?
local function classify(b, row, rel, line)
  local lead = line:find("[^ ]")
  if not lead then
    return nil
  end
  -- Most lines are prose: the line-level checks run only for a line whose
  -- first non-blank byte can start their syntax.
  local c = line:byte(lead)
  if not STARTS[c] then
    inline(b, row, line, 0)
    return nil
  end
  local _, run, rest
  if c == 0x60 or c == 0x7e then -- ` ~
    _, run, rest = fence_line(line)
  end
  if run then
    local info_at = rest:find("%S")
    if info_at then
      mark(b, row, #line - #rest + info_at - 1, #line, "@label.markdown")
    end
    return { open = rel, char = run:sub(1, 1), len = #run, info = rest:match("^%s*([^%s{`]+)") or "" }
  end
  local hashes = c == 0x23 and (line:match("^ ?%s?%s?(#+)%s") or line:match("^ ?%s?%s?(#+)$"))
  if hashes and #hashes <= 6 then
    mark(b, row, 0, #line, ("@markup.heading.%d.markdown"):format(#hashes))
    inline(b, row, line, 0)
    return nil
  end
  local rule = (c == 0x2d or c == 0x2a or c == 0x5f) and line:match("^ ?%s?%s?([-*_])")
  if rule and line:find("^[%s%" .. rule .. "]+$") and select(2, line:gsub("%" .. rule, "")) >= 3 then
    mark(b, row, 0, #line, "@punctuation.special.markdown")
    return nil
  end
  local col = 0
  -- Block quotes (nested: "> > "), then a list item inside.
  local quote_end = line:match("^%s*>[>%s]*()")
  if quote_end then
    mark(b, row, 0, #line, "@markup.quote.markdown", 90)
    mark(b, row, 0, quote_end - 1, "@punctuation.special.markdown")
    col = quote_end - 1
  end
  local rest_line = line:sub(col + 1)
  local marker_end = rest_line:match("^%s*[-*+]()%s") or rest_line:match("^%s*%d+[.)]()%s")
  if marker_end then
    local marker_from = rest_line:find("%S")
    mark(b, row, col + marker_from - 1, col + marker_end - 1, "@markup.list.markdown")
    col = col + marker_end
    local box = line:match("^%[([ xX])%]", col + 1)
    if box then
      local group = box == " " and "@markup.list.unchecked.markdown" or "@markup.list.checked.markdown"
      mark(b, row, col, col + 3, group)
      col = col + 3
    end
  elseif rest_line:find("^%s*|") then
    -- A table row: its pipes; a delimiter row whole.
    if rest_line:find("^[%s|:%-]+$") and rest_line:find("-", 1, true) then
      mark(b, row, col, #line, "@punctuation.special.markdown")
      return nil
    end
    local init = col + 1
    while true do
      local at = line:find("|", init, true)
      if not at then
        break
      end
      if line:sub(at - 1, at - 1) ~= "\\" then
        mark(b, row, at - 1, at, "@punctuation.special.markdown")
      end
      init = at + 1
    end
  end
  inline(b, row, line, col)
  return nil
end

local span_opts = { end_row = 0, end_col = 0, hl_group = RAW, priority = 90 } ---@type vim.api.keyset.set_extmark

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

--- The line closes the fence: a run of its character at least as long, alone.
---@param fence gemini_companion.MarkdownFence
---@param line string
---@return boolean
local function closes(fence, line)
  local lead = line:find("[^ ]")
  if not lead or lead > 4 or line:sub(lead, lead) ~= fence.char then
    return false
  end
  local _, run, rest = fence_line(line)
  return run ~= nil and #run >= fence.len and rest:find("^%s*$") ~= nil
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

-- Blocks ------------------------------------------------------------------------

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
  api.nvim_buf_clear_namespace(b, M.ns, first, finish)
  code.clear(b, first, finish)
  if not M.KINDS[kind] then
    states[id] = nil
    return
  end
  local st = states[id]
  if not st or first - start ~= st.done then
    if first > start then
      api.nvim_buf_clear_namespace(b, M.ns, start, first)
      code.clear(b, start, first)
    end
    st = { done = 0 }
    states[id] = st
    first = start
  end
  local lines = api.nvim_buf_get_lines(b, first, finish, false)
  local fence = st.fence
  local folds = complete and #lines or #lines - 1
  for i, line in ipairs(lines) do
    local row = first + i - 1
    local rel = row - start
    if fence then
      if closes(fence, line) then
        span(b, start, fence, row, #line)
        light(b, start, fence, rel)
        fence = nil
      end
    else
      fence = classify(b, row, rel, line)
    end
    if i == folds then
      st.done, st.fence = rel + 1, fence
    end
  end
  if fence and #lines > 0 then
    span(b, start, fence, first + #lines - 1, #lines[#lines])
  end
  if complete and fence then
    light(b, start, fence, finish - start)
  end
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
