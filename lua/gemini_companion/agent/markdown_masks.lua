--- What the passes of agent/markdown_inline.lua share: the line's bytes masked
--- by the passes before each (as intervals, in order: a pass asks for the first
--- one from a byte on, by binary search) and byte classes of Lua's patterns.
local M = {}

local floor = math.floor

---@type table<integer, true> word bytes for the `%f[%w_]` frontiers
local WORD = {}
M.WORD = WORD
---@type table<integer, true> `%s` bytes
local SPACE = {}
M.SPACE = SPACE
---@type table<integer, true> `%a` bytes
local ALPHA = {}
M.ALPHA = ALPHA
for c = 0, 255 do
  local ch = string.char(c)
  WORD[c] = ch:find("[%w_]") and true or nil
  SPACE[c] = ch:find("%s") and true or nil
  ALPHA[c] = ch:find("%a") and true or nil
end

--- No masked interval yet (shared: a pass's own list is made on its first).
M.NONE = setmetatable({}, {
  __newindex = function()
    error("markdown_masks.NONE is shared")
  end,
})

--- The passes, in their order.
M.CODE, M.LINK, M.AUTO, M.BOLD, M.UBOLD, M.STRIKE, M.ITALIC, M.UITALIC = 1, 2, 3, 4, 5, 6, 7, 8

---@class gemini_companion.Inline
---@field s string the line so far
---@field n integer its length
---@field eol boolean the line is whole
---@field bars integer[][] per pass (0 the line's prefix): masked intervals, flat and in order
---@field F integer[] per pass: the first byte whose fate it has not decided
---@field seen integer[] per pass: `F[k - 1]` at its last step
---@field st table[] per pass: where it is
---@field emit fun(from: integer, to: integer, group: string) a mark over bytes `from`..`to`

--- The first masked interval of the passes before `k` that ends at or after `i`:
--- its first and last byte, or nil.
---@param I gemini_companion.Inline
---@param k integer
---@param i integer
---@return integer?, integer?
function M.barrier(I, k, i)
  local best, best_to = nil, nil
  for j = 0, k - 1 do
    local list = I.bars[j]
    local m = #list / 2
    if m > 0 and list[2 * m] >= i then
      local lo, hi = 1, m
      while lo < hi do
        local mid = floor((lo + hi) / 2)
        if list[2 * mid] >= i then
          hi = mid
        else
          lo = mid + 1
        end
      end
      local a = list[2 * lo - 1]
      if not best or a < best then
        best, best_to = a, list[2 * lo]
      end
    end
  end
  return best, best_to
end

--- Byte `i` is masked for pass `k`.
---@param I gemini_companion.Inline
---@param k integer
---@param i integer
---@return boolean
function M.masked(I, k, i)
  local a = M.barrier(I, k, i)
  return a ~= nil and a <= i
end

---@param I gemini_companion.Inline
---@param k integer
---@param from integer
---@param to integer
function M.bar(I, k, from, to)
  local list = I.bars[k]
  if list == M.NONE then
    list = {}
    I.bars[k] = list
  end
  list[#list + 1] = from
  list[#list + 1] = to
end

--- The byte before `a` is not a word byte for pass `k` (`%f[%w_]` at `a`).
---@param I gemini_companion.Inline
---@param k integer
---@param a integer
---@return boolean
function M.word_before(I, k, a)
  return a > 1 and WORD[I.s:byte(a - 1)] ~= nil and not M.masked(I, k + 1, a - 1)
end

--- The first byte at or after `from` that is in `set` or masked for pass `k`
--- (`huge` when none), and whether it is masked.
---@param I gemini_companion.Inline
---@param k integer
---@param set string
---@param from integer
---@return number, boolean
function M.stop_at(I, k, set, from)
  local c = I.s:find(set, from) or math.huge
  local a = M.barrier(I, k, from)
  if a and a < from then
    a = from
  end
  if a and a <= c then
    return a, true
  end
  return c, false
end

return M
