--- The transcript's line classifier as it was before issue 31 (quadratic on some
--- lines), kept as the oracle of tests/test_agent_markdown_hostile.py: the
--- classifier now streams a line in linear time and must mark every line as this
--- one did. Do not change it.
---
--- One transcript line as markdown, by Lua patterns (agent/markdown.lua calls it
--- for each line as it arrives, outside code fences): headings, list markers and
--- task boxes, block quotes, rules, table pipes, fence lines, then inline code,
--- links, bold, italic and strikethrough, as extmarks with the groups of Neovim's
--- tree-sitter markdown highlighter. Setext headings and HTML are not recognised.
local M = {}

local api = vim.api

M.ns = api.nvim_create_namespace("gemini_companion_agent_markdown")

local PRI = vim.hl.priorities.treesitter -- 100, as Neovim's highlighter
M.RAW = "@markup.raw.block.markdown"

---@param b integer
---@param row integer
---@param col integer
---@param end_col integer
---@param group string
---@param priority? integer
local opts = { end_col = 0, hl_group = 0, priority = PRI } -- reused: read at once
---@type table<string, integer> group name -> its id (an id costs Neovim no lookup by name per mark)
local ids = {}
local function mark(b, row, col, end_col, group, priority)
  if end_col > col then
    local id = ids[group]
    if not id then
      id = api.nvim_get_hl_id_by_name(group)
      ids[group] = id
    end
    opts.end_col, opts.hl_group, opts.priority = end_col, id, priority or PRI
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
function M.classify(b, row, rel, line)
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

--- The line closes the fence: a run of its character at least as long, alone.
---@param fence gemini_companion.MarkdownFence
---@param line string
---@return boolean
function M.closes(fence, line)
  local lead = line:find("[^ ]")
  if not lead or lead > 4 or line:sub(lead, lead) ~= fence.char then
    return false
  end
  local _, run, rest = fence_line(line)
  return run ~= nil and #run >= fence.len and rest:find("^%s*$") ~= nil
end

return M
