--- The inline markdown of one line (agent/markdown_lines.lua), in time linear in
--- its length, and fed as the line grows: each batch costs what it appended.
---
--- The rules are those of eight passes over the line, each masking what it found
--- from the next ones (bytes masked below are "\1"): code spans (a run of
--- backticks to the next run of the same length), links `[text](url)`, autolinks
--- `<scheme:...>`, `**bold**`, `__bold__`, `~~strike~~`, `*italic*`, `_italic_`
--- (spans mask their delimiters only). A pass finds the leftmost match from where
--- its last one ended, as the Lua patterns they replace did, but never reads a
--- byte more than twice: no match crosses a masked byte, a candidate that fails
--- is not tried again, and where the first candidate of a stretch between masked
--- bytes finds no close (`**`, `__`, `*`), no later one in that stretch can.
--- agent/markdown_ranges.lua and agent/markdown_spans.lua hold the passes.
---
--- Streaming: a pass decides only about bytes whose fate is final in the passes
--- before it (`F[k - 1]`, "final up to"); a candidate still open (a backtick run
--- not yet closed, a `[` not yet followed by `](...)`, a `**` without its close)
--- holds what follows it for the later passes until it closes or the line ends.
--- So a mark, once set, is never taken back, and the line's marks at its end are
--- those of parsing it whole.
local M = {}

local masks = require("gemini_companion.agent.markdown_masks")
local CODE, LINK, BOLD, UBOLD, STRIKE, ITALIC, UITALIC =
  masks.CODE, masks.LINK, masks.BOLD, masks.UBOLD, masks.STRIKE, masks.ITALIC, masks.UITALIC
local AUTO = masks.AUTO
local STRONG = "@markup.strong.markdown_inline"
--- The byte each pass after the code spans' starts from.
local TRIGGER =
  { [LINK] = "[", [AUTO] = "<", [BOLD] = "*", [UBOLD] = "_", [STRIKE] = "~", [ITALIC] = "*", [UITALIC] = "_" }

-- The line ---------------------------------------------------------------------

--- The inline markdown of a line from byte `col` (0-based: the bytes before are
--- its list marker, quote, ...), marked through `emit(from, to, group)` (bytes,
--- 1-based, inclusive) as it is decided.
---@param col integer
---@param emit fun(from: integer, to: integer, group: string)
---@return gemini_companion.Inline
function M.new(col, emit)
  local none = masks.NONE
  local I = {
    s = "",
    n = 0,
    eol = false,
    bars = { [0] = col > 0 and { 1, col } or none, none, none, none, none, none, none, none, none },
    F = { col + 1, col + 1, col + 1, col + 1, col + 1, col + 1, col + 1, col + 1 },
    seen = { -1, -1, -1, -1, -1, -1, -1, -1 },
    fin = {},
    st = { { h = col + 1, open = {}, bylen = {}, later = {} } },
    emit = emit,
  }
  return I
end

--- Pass `k`'s state, made on its first step (most lines need few passes).
---@param I gemini_companion.Inline
---@param k integer
---@return table
local function state(I, k)
  local st = { h = I.F[k] }
  if k == BOLD then
    st.pair, st.ch, st.group = "**", 42, STRONG
  elseif k == STRIKE then
    st.pair, st.ch, st.group = "~~", 126, "@markup.strikethrough.markdown_inline"
  elseif k == ITALIC then
    st.ch = "*"
  elseif k == UITALIC then
    st.ch = "_"
  end
  I.st[k] = st
  return st
end

--- The line is now `s` (what it was, and more); `eol`: it is whole.
---@param I gemini_companion.Inline
---@param s string
---@param eol boolean
function M.feed(I, s, eol)
  I.s, I.n, I.eol = s, #s, eol
  I.F[0] = #s + 1
  local ranges = require("gemini_companion.agent.markdown_ranges")
  local spans = require("gemini_companion.agent.markdown_spans")
  ranges.code(I, I.st[CODE])
  for k = 2, 8 do
    local limit = math.min(I.F[k - 1], I.n + 1)
    local fin = eol and limit > I.n
    if limit ~= I.seen[k] or fin ~= I.fin[k] then
      I.seen[k], I.fin[k] = limit, fin
      local st = I.st[k]
      if not st and fin and not s:find(TRIGGER[k], I.F[k], true) then
        -- The whole line, and nothing from here that the pass looks for (most
        -- lines need few passes): it decides all of it, finding nothing.
        I.F[k] = limit
      else
        st = st or state(I, k)
        if k == LINK then
          ranges.link(I, st, limit, fin)
        elseif k == AUTO then
          ranges.autolink(I, st, limit, fin)
        elseif k == BOLD or k == STRIKE then
          spans.double(I, st, k, limit, fin)
        elseif k == UBOLD then
          spans.ubold(I, st, k, limit, fin)
        else
          spans.single(I, st, k, limit, fin)
        end
      end
    end
  end
end

return M
