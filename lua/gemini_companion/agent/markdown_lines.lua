--- One transcript line as markdown (agent/markdown.lua calls it for each line as
--- it arrives, outside code fences): headings, list markers and task boxes, block
--- quotes, rules, table pipes, fence lines, then the inline markdown
--- (agent/markdown_inline.lua), as extmarks with the groups of Neovim's
--- tree-sitter markdown highlighter. Setext headings and HTML are not recognised.
---
--- A line is classified as it grows (`M.start`, then `M.feed` at each batch with
--- the line so far): each batch costs what it appended, never the line's length.
--- What the line is (a heading, a rule, a fence...) is decided by its first bytes,
--- then kept; the few kinds that a later byte can undo (a rule, a table's
--- delimiter row, a fence line that a backtick ends) check only the new bytes. A
--- mark whose end is the line's end follows it.
local M = {}

local api = vim.api

M.ns = api.nvim_create_namespace("gemini_companion_agent_markdown") -- agent/markdown_marks.lua draws in it

local PRI = vim.hl.priorities.treesitter -- 100, as Neovim's highlighter
M.RAW = "@markup.raw.block.markdown"
local PUNCT = "@punctuation.special.markdown"

---@param b integer
---@param row integer
---@param col integer
---@param end_col integer
---@param group string
---@param priority? integer
local function mark(b, row, col, end_col, group, priority)
  if end_col > col then
    require("gemini_companion.agent.markdown_marks").add(b, row, col, end_col, group, priority or PRI)
  end
end

---@class gemini_companion.MarkdownLine
---@field rel integer the line's row relative to its block's first
---@field b integer
---@field row integer
---@field s string the line so far
---@field n integer
---@field eol boolean the line is whole
---@field stage string what is being decided: see `STAGES`
---@field pos integer the byte the stage goes on from
---@field lead? integer the first byte that is not a space
---@field col integer the bytes before the inline markdown
---@field count integer a rule's characters, a delimiter row's dashes
---@field info_pos? integer where a fence's info string is looked for from
---@field grows table<string, { col: integer, group: string }> its marks to the line's end
---@field wants? boolean the inline markdown is looked for, from `col`
---@field inline? gemini_companion.Inline
---@field pipe? integer where a table row's next pipe is looked for from
---@field fence? gemini_companion.MarkdownFence the fence the line opens (so far)

---@type table<integer, true> the bytes that can start a line's markdown syntax
local STARTS = {}
for ch in ("`~#-*_>+|0123456789"):gmatch(".") do
  STARTS[ch:byte()] = true
end

--- A mark from `col` to the line's end, whatever it grows to.
---@param ls gemini_companion.MarkdownLine
---@param key string
---@param col integer
---@param group string
---@param priority? integer
local function grow(ls, key, col, group, priority)
  if not ls.grows[key] then
    ls.grows[key] = { col = col, group = group }
    require("gemini_companion.agent.markdown_marks").add(ls.b, ls.row, col, -1, group, priority or PRI)
  end
end

---@param ls gemini_companion.MarkdownLine
---@param key string
local function ungrow(ls, key)
  local g = ls.grows[key]
  if g then
    require("gemini_companion.agent.markdown_marks").remove(ls.b, ls.row, g.col, g.group)
  end
  ls.grows[key] = nil
end

--- The inline markdown from byte `col` (0-based) on: the line is then decided.
---@param ls gemini_companion.MarkdownLine
---@param col integer
---@return string
local function inline(ls, col)
  ls.col, ls.wants, ls.pos = col, true, col + 1
  return "inline"
end

--- A byte that can start inline markdown in `s` from byte `from` on: one plain
--- search per byte (memchr) costs a fifth of a search for the set.
---@param s string
---@param from integer
---@return boolean
local function inline_byte(s, from)
  local f = string.find
  return (f(s, "`", from, true) or f(s, "*", from, true) or f(s, "_", from, true) or f(s, "[", from, true)) ~= nil
    or (f(s, "~", from, true) or f(s, "<", from, true)) ~= nil
end

--- The inline markdown, once the line holds a byte that can start it (most
--- lines hold none: they cost a search).
---@param ls gemini_companion.MarkdownLine
local function feed_inline(ls)
  local engine = require("gemini_companion.agent.markdown_inline")
  if not ls.inline then
    if not inline_byte(ls.s, ls.pos) then
      ls.pos = ls.n + 1
      return
    end
    ls.inline = engine.new(ls.col, function(from, to, group)
      mark(ls.b, ls.row, from - 1, to, group)
    end)
  end
  engine.feed(ls.inline, ls.s, ls.eol)
end

---@type table<string, fun(ls: gemini_companion.MarkdownLine): string?>
local STAGES = {}

--- The first byte that is not a space says what to look for.
function STAGES.lead(ls)
  local lead = ls.s:find("[^ ]", ls.pos)
  if not lead then
    ls.pos = ls.n + 1
    return ls.eol and "done" or nil
  end
  ls.lead, ls.pos = lead, lead
  local c = ls.s:byte(lead)
  if not STARTS[c] then
    return inline(ls, 0)
  elseif c == 0x60 or c == 0x7e then -- ` ~
    return lead <= 4 and "fence" or inline(ls, 0)
  elseif c == 0x23 then -- #
    return lead <= 4 and "hash" or inline(ls, 0)
  elseif c == 0x2d or c == 0x2a or c == 0x5f then -- - * _
    ls.count = 0
    return lead <= 4 and "rule" or "list"
  elseif c == 0x3e then -- >
    ls.pos = lead + 1
    return "quote"
  end
  return "list"
end

--- A fence line: three or more ` (and no ` after them) or ~.
function STAGES.fence(ls)
  local s, lead = ls.s, ls.lead
  local char = s:sub(lead, lead)
  local e = s:find(char == "`" and "[^`]" or "[^~]", ls.pos)
  if not e and not ls.eol then
    ls.pos = ls.n + 1
    return nil
  end
  e = e or ls.n + 1
  local len = e - lead
  if len < 3 then
    return inline(ls, 0)
  end
  ls.fence = { open = ls.rel, char = char, len = len, info = "" }
  ls.pos = e
  return char == "`" and "ticks" or "info"
end

--- A backtick fence line stops being one at a backtick after its run.
function STAGES.ticks(ls)
  if ls.s:find("`", ls.pos, true) then
    ls.fence = nil
    ungrow(ls, "info")
    return inline(ls, 0)
  end
  ls.pos = ls.n + 1
  return STAGES.info(ls)
end

--- The fence's info string: marked from its first non-blank byte.
function STAGES.info(ls)
  local fence = assert(ls.fence)
  local s = ls.s
  local run_end = ls.lead + fence.len
  if not ls.grows.info then
    local at = s:find("%S", math.max(ls.info_pos or 0, run_end))
    if at then
      grow(ls, "info", at - 1, "@label.markdown")
    end
    ls.info_pos = ls.n + 1
  end
  if ls.eol then
    fence.info = s:match("^%s*([^%s{`]+)", run_end) or ""
    return "done"
  end
  return nil
end

--- `#` to `######` and a blank (or the line's end): a heading.
function STAGES.hash(ls)
  local s, lead = ls.s, ls.lead
  local e = s:find("[^#]", ls.pos)
  if not e and not ls.eol then
    ls.pos = ls.n + 1
    return nil
  end
  local len = (e or ls.n + 1) - lead
  if len <= 6 and (not e or s:find("^%s", e)) then
    grow(ls, "heading", 0, ("@markup.heading.%d.markdown"):format(len))
  end
  return inline(ls, 0)
end

--- Three or more `-`, `*` or `_` and blanks, nothing else: a rule.
function STAGES.rule(ls)
  local s, c = ls.s, ls.s:sub(ls.lead, ls.lead)
  local pattern = "[^%s%" .. c .. "]"
  local bad = s:find(pattern, ls.pos)
  local upto = bad and bad - 1 or ls.n
  local _, more = s:sub(ls.pos, upto):gsub("%" .. c, "")
  ls.count, ls.pos = ls.count + more, upto + 1
  if bad or (ls.eol and ls.count < 3) then
    ungrow(ls, "rule")
    ls.pos = ls.lead
    return "list"
  end
  if ls.count >= 3 then
    grow(ls, "rule", 0, PUNCT)
  end
  return ls.eol and "done" or nil
end

--- `>`, then `>` and blanks: a block quote, then maybe a list item in it.
function STAGES.quote(ls)
  local e = ls.s:find("[^>%s]", ls.pos)
  if not e and not ls.eol then
    ls.pos = ls.n + 1
    return nil
  end
  e = e or ls.n + 1
  grow(ls, "quote", 0, "@markup.quote.markdown", 90)
  mark(ls.b, ls.row, 0, e - 1, PUNCT)
  ls.col, ls.pos = e - 1, e
  return "list"
end

--- A list marker (`-`, `*`, `+`, `1.`, `1)`) and a blank, else a table row.
function STAGES.list(ls)
  local s, col = ls.s, ls.col
  local f = col == 0 and ls.lead or col + 1
  local c = s:byte(f)
  local marker_end -- the byte after the marker
  if c == 0x2d or c == 0x2a or c == 0x2b then
    marker_end = f + 1
  elseif c and c >= 0x30 and c <= 0x39 then
    local e = s:find("%D", math.max(ls.pos, f))
    if not e and not ls.eol then
      ls.pos = ls.n + 1
      return nil
    end
    marker_end = e and s:find("^[.)]", e) and e + 1
  end
  if marker_end then
    if marker_end > ls.n and not ls.eol then
      return nil
    end
    if s:find("^%s", marker_end) then
      mark(ls.b, ls.row, f - 1, marker_end - 1, "@markup.list.markdown")
      ls.col = marker_end
      return "box"
    end
  end
  if c == 0x7c then -- |
    ls.pos, ls.count = f, 0
    return "delim"
  end
  return inline(ls, col)
end

--- `[ ]`, `[x]` after a list marker.
function STAGES.box(ls)
  local col = ls.col
  if ls.n < col + 3 and not ls.eol then
    return nil
  end
  local box = ls.s:match("^%[([ xX])%]", col + 1)
  if box then
    mark(
      ls.b,
      ls.row,
      col,
      col + 3,
      box == " " and "@markup.list.unchecked.markdown" or "@markup.list.checked.markdown"
    )
    col = col + 3
  end
  return inline(ls, col)
end

--- A table row: blanks, `|`, `:` and `-` only (with a `-`) make a delimiter row,
--- marked whole; else its pipes are marked.
function STAGES.delim(ls)
  local s = ls.s
  local bad = s:find("[^%s|:%-]", ls.pos)
  local upto = bad and bad - 1 or ls.n
  if s:find("-", ls.pos, true) and (not bad or s:find("-", ls.pos, true) < bad) then
    ls.count = 1
  end
  ls.pos = upto + 1
  if bad or (ls.eol and ls.count == 0) then
    ungrow(ls, "delim")
    ls.pos = ls.col + 1
    return "row"
  end
  if ls.count > 0 then
    grow(ls, "delim", ls.col, PUNCT)
  end
  return ls.eol and "done" or nil
end

--- A table row's pipes (not `\|`), as they come; its inline markdown.
function STAGES.row(ls)
  local s = ls.s
  if not ls.wants then
    inline(ls, ls.col)
    ls.pipe = ls.col + 1
  end
  while true do
    local at = s:find("|", ls.pipe, true)
    if not at then
      ls.pipe = ls.n + 1
      return nil
    end
    if s:byte(at - 1) ~= 0x5c then
      mark(ls.b, ls.row, at - 1, at, PUNCT)
    end
    ls.pipe = at + 1
  end
end

--- Start classifying a line (row `rel` of its block): `M.feed` gives it its bytes.
---@param rel integer
---@return gemini_companion.MarkdownLine
function M.start(rel)
  return {
    rel = rel,
    b = 0,
    row = 0,
    s = "",
    n = 0,
    eol = false,
    stage = "lead",
    pos = 1,
    col = 0,
    count = 0,
    grows = {},
  }
end

--- The line (at `row` of buffer `b`) is now `line`: what it was and more. `eol`:
--- it is whole. Marks what was decided; returns the fence the line opens (so far).
---@param ls gemini_companion.MarkdownLine
---@param b integer
---@param row integer
---@param line string
---@param eol boolean
---@return gemini_companion.MarkdownFence?
function M.feed(ls, b, row, line, eol)
  ls.b, ls.row, ls.s, ls.n, ls.eol = b, row, line, #line, eol
  local stage = ls.stage
  while stage ~= "inline" and stage ~= "done" do
    local next_stage = STAGES[stage](ls)
    if not next_stage or next_stage == stage then
      break
    end
    stage = next_stage
  end
  ls.stage = stage
  if ls.wants then
    feed_inline(ls)
  end
  return ls.fence
end

--- Classify one whole line outside a fence and set its marks; returns the fence
--- it opens, if it does.
---@param b integer
---@param row integer absolute
---@param rel integer relative to the block's first line
---@param line string
---@return gemini_companion.MarkdownFence?
function M.classify(b, row, rel, line)
  -- Most lines hold no byte that can start markdown (blank lines, plain prose):
  -- no marks, no state, a search or two.
  local lead = line:find("[^ ]")
  if not lead or (not STARTS[line:byte(lead)] and not inline_byte(line, lead)) then
    return nil
  end
  return M.feed(M.start(rel), b, row, line, true)
end

return M
