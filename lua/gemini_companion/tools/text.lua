--- Buffer text for the tools, read in bounded pieces.
---
--- A buffer line can be 50 MB (minified code, a log): fetching it whole, or counting
--- its characters in one go, stalls Neovim for a second. Here a line's length comes
--- from byte offsets (`nvim_buf_get_offset`), text from byte ranges
--- (`nvim_buf_get_text`), and characters are counted in 1 MiB pieces, remembered
--- per line for one call, so no call reads more of a line than it answers with
--- plus one piece per position it converts.
---
--- Characters are counted as the CLI's context counts them: 1-based code points.
local M = {}

local api, fn = vim.api, vim.fn

--- Lines up to this long are fetched whole; longer ones are read in pieces of `step`.
M.piece = 65536
M.step = 1048576

---@param line string
---@return boolean
function M.is_text(line)
  -- NUL bytes (kept as "\n" in buffer lines) or bytes that are not UTF-8.
  return not line:find("[%z\n]") and (not line:find("[\128-\255]") or fn.iconv(line, "utf-8", "utf-8") == line)
end

---@param line string
---@param byte integer 0-based byte index
---@return integer 1-based character
function M.char_of(line, byte)
  if byte <= 0 then
    return 1
  end
  return fn.charidx(line, math.min(byte, #line)) + 1 + math.max(0, byte - #line)
end

---@param line string
---@param char integer 1-based character
---@return integer 0-based byte index
function M.byte_of(line, char)
  local index = fn.byteidx(line, char - 1)
  return index < 0 and #line or index
end

--- Byte offset of line `row` (0-based) from the start of `buf`; row = line count: the size.
---@param buf integer
---@param row integer
---@return integer
function M.offset(buf, row)
  return api.nvim_buf_get_offset(buf, row)
end

--- Length in bytes of line `row` (0-based), without reading it.
---@param buf integer
---@param row integer
---@return integer
function M.line_length(buf, row)
  return math.max(0, M.offset(buf, row + 1) - M.offset(buf, row) - 1)
end

--- Bytes `from`..`to` (0-based, end exclusive) of line `row`.
---@param buf integer
---@param row integer
---@param from integer
---@param to integer
---@return string
function M.slice(buf, row, from, to)
  if to <= from then
    return ""
  end
  return api.nvim_buf_get_text(buf, row, from, row, to, {})[1] or ""
end

--- How many bytes at the end of `s` belong to a character cut off by its end.
---@param s string
---@return integer
local function cut_tail(s)
  for back = 0, math.min(3, #s - 1) do
    local b = s:byte(#s - back)
    if b < 0x80 then
      return 0
    end
    if b >= 0xC0 then -- a lead byte: is its sequence complete?
      local size = b >= 0xF0 and 4 or b >= 0xE0 and 3 or 2
      return size > back + 1 and back + 1 or 0
    end
  end
  return 0
end

--- `s` without a character cut off at its end.
---@param s string
---@return string
function M.whole_chars(s)
  local cut = cut_tail(s)
  return cut > 0 and s:sub(1, #s - cut) or s
end

local nvim_011 = fn.has("nvim-0.11") == 1

--- Characters (code points) in `s`, counted in C.
---@param s string
---@return integer
local function count_chars(s)
  if nvim_011 then
    return vim.str_utfindex(s, "utf-32")
  end
  return (vim.str_utfindex(s)) ---@diagnostic disable-line: missing-parameter
end

---@class gemini_companion.LinePositions
---@field buf integer
---@field lines table<integer, string> short lines, fetched whole
---@field marks table<integer, { byte: integer, char: integer }[]> long lines: counted so far
---@field count integer lines in the buffer

--- Positions in `buf` for one call: converts between bytes and characters, reading
--- each long line once at most, in pieces.
---@param buf integer
---@return gemini_companion.LinePositions
function M.positions(buf)
  local positions = { buf = buf, lines = {}, marks = {}, count = api.nvim_buf_line_count(buf) }
  return setmetatable(positions, { __index = M.Positions })
end

M.Positions = {}

--- The whole line `row` if it is short, else nil.
---@param self gemini_companion.LinePositions
---@param row integer 0-based
---@return string? line
---@return integer length in bytes
function M.Positions.short_line(self, row)
  local line = self.lines[row]
  if line then
    return line, #line
  end
  if row < 0 or row >= self.count then -- a position past the end (a stale diagnostic)
    return "", 0
  end
  local length = M.line_length(self.buf, row)
  if length > M.piece then
    return nil, length
  end
  line = api.nvim_buf_get_lines(self.buf, row, row + 1, false)[1] or ""
  self.lines[row] = line
  return line, #line
end

--- Walk the long line `row` from its nearest counted point before `stop(byte, char)`
--- says to; returns the point reached and the piece that crossed it.
---@param self gemini_companion.LinePositions
---@param row integer
---@param length integer
---@param before fun(byte: integer, char: integer): boolean the point is still before the target
---@param limit? integer no further than this byte (the target, when it is known)
---@return { byte: integer, char: integer } point
local function walk(self, row, length, before, limit)
  local marks = self.marks[row]
  if not marks then
    marks = { { byte = 0, char = 1 } }
    self.marks[row] = marks
  end
  local point = marks[1]
  for i = #marks, 1, -1 do
    if before(marks[i].byte, marks[i].char) then
      point = marks[i]
      break
    end
  end
  local tick = api.nvim_buf_get_changedtick(self.buf)
  while point.byte < length do
    local stop = math.min(limit or length, length, point.byte + M.step)
    if stop <= point.byte then
      break
    end
    local piece = M.whole_chars(M.slice(self.buf, row, point.byte, stop))
    if piece == "" then
      break
    end
    local next_point = { byte = point.byte + #piece, char = point.char + count_chars(piece) }
    if next_point.byte > marks[#marks].byte then
      marks[#marks + 1] = next_point
    end
    if not before(next_point.byte, next_point.char) then
      break
    end
    point = next_point
    require("gemini_companion.tools").pause()
    if api.nvim_buf_get_changedtick(self.buf) ~= tick then
      error({ tool_error = "the buffer changed while it was being read: ask again" }, 0)
    end
  end
  return point
end

--- The 1-based character at 0-based byte `byte` of line `row`.
---@param self gemini_companion.LinePositions
---@param row integer
---@param byte integer
---@return integer
function M.Positions.char(self, row, byte)
  local line, length = self:short_line(row)
  if line then
    return M.char_of(line, byte)
  end
  local target = math.min(byte, length)
  local point = walk(self, row, length, function(b)
    return b <= target
  end, target)
  local rest = M.slice(self.buf, row, point.byte, target)
  return point.char + count_chars(rest) + math.max(0, byte - length)
end

--- The 0-based byte of 1-based character `char` of line `row` (the length past its end).
---@param self gemini_companion.LinePositions
---@param row integer
---@param char integer
---@return integer
function M.Positions.byte(self, row, char)
  local line, length = self:short_line(row)
  if line then
    return M.byte_of(line, char)
  end
  local point = walk(self, row, length, function(_, c)
    return c <= char
  end)
  local piece = M.slice(self.buf, row, point.byte, math.min(length, point.byte + M.step + 3))
  local index = fn.byteidx(piece, char - point.char)
  return index < 0 and length or point.byte + index
end

--- Text from (row_a, col_a) to the end of line `row_b` (0-based rows, byte column),
--- cut to about `max` bytes: at a line's end when some whole lines fit, else inside
--- the first line. Returns the lines, the last row read and, when cut inside a
--- line, the byte column (exclusive) where the text stops.
---@param buf integer
---@param row_a integer
---@param col_a integer
---@param row_b integer
---@param max integer
---@return string[] lines
---@return integer last_row
---@return integer? cut_col
function M.read(buf, row_a, col_a, row_b, max)
  local base = M.offset(buf, row_a) + col_a
  local function fits(row) -- rows row_a..row fit in max bytes (newlines counted)
    return M.offset(buf, row + 1) - base <= max + 1
  end
  local last = row_b
  if not fits(row_b) then
    local low, high = row_a - 1, row_b -- fits(low) holds, fits(high) does not
    while high - low > 1 do
      local mid = math.floor((low + high) / 2)
      if fits(mid) then
        low = mid
      else
        high = mid
      end
    end
    last = low
  end
  if last < row_a then -- not even the first line fits: a piece of it
    local stop = math.min(M.line_length(buf, row_a), col_a + max)
    local piece = M.whole_chars(M.slice(buf, row_a, col_a, stop))
    return { piece }, row_a, col_a + #piece
  end
  if col_a == 0 then
    return api.nvim_buf_get_lines(buf, row_a, last + 1, false), last, nil
  end
  return api.nvim_buf_get_text(buf, row_a, col_a, last, M.line_length(buf, last), {}), last, nil
end

return M
