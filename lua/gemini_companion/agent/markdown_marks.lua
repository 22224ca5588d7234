--- The marks of the transcript's markdown (agent/markdown_lines.lua sets them),
--- kept compact and drawn only for the lines on screen.
---
--- A highlight extmark costs Neovim 0.11 about 170-250 bytes; a long chat holds
--- hundreds of thousands of them (issue 31: 5 MB of answers, 41 MiB of marks).
--- Here a line's marks are numbers in one Lua table while the line grows, packed
--- into a string (8 bytes a mark) once it is whole, found from a point extmark on
--- the line (which follows it as lines above are added or replaced); a decoration
--- provider draws the marks of the lines in view as ephemeral extmarks in the
--- namespace `gemini_companion_agent_markdown` when Neovim draws a window.
local M = {}

local api = vim.api

M.ns = api.nvim_create_namespace("gemini_companion_agent_markdown")
--- A point mark on each line that has marks: its id keys the line's marks.
local rows_ns = api.nvim_create_namespace("gemini_companion_agent_markdown_rows")

---@type table<integer, number[]|string> row mark id -> col, end_col (-1: the line's
--- end), group index, priority, ...; packed (`pack`) once the line is whole: of
--- the buffer in use (`use`)
local lines = {}
---@type table<integer, true> the row marks whose marks are a table (buffer in use)
local growing = {}
---@type table<integer, { lines: table<integer, number[]|string>, growing: table<integer, true> }>
--- each transcript buffer's (one per conversation: each numbers its marks)
local by_buf = {}
---@type integer? the buffer in use
local in_use = nil

--- Work on the marks of buffer `b`.
---@param b integer
local function use(b)
  if in_use == b then
    return
  end
  local t = by_buf[b]
  if not t then
    t = { lines = {}, growing = {} }
    by_buf[b] = t
  end
  lines, growing, in_use = t.lines, t.growing, b
end
--- Marks added since start-up (tests compare it with the marks there are).
M.added = 0
---@type string[] group index -> name
local names = {}
---@type integer[] group index -> hl id
local hl_ids = {}
---@type table<string, integer> group name -> index
local index = {}

---@param group string
---@return integer
local function group_index(group)
  local i = index[group]
  if not i then
    i = #names + 1
    names[i], hl_ids[i], index[group] = group, api.nvim_get_hl_id_by_name(group), i
  end
  return i
end

local char, byte = string.char, string.byte
local NONE = 0xffffff -- a packed end_col -1

--- A line's marks as a string: per mark col, end_col (3 bytes each), group index,
--- priority.
---@param line number[]
---@return string
local function pack(line)
  local out = {}
  for i = 1, #line, 4 do
    local col, finish = line[i], line[i + 1] == -1 and NONE or line[i + 1]
    out[#out + 1] = char(
      col % 256,
      math.floor(col / 256) % 256,
      math.floor(col / 65536) % 256,
      finish % 256,
      math.floor(finish / 256) % 256,
      math.floor(finish / 65536) % 256,
      line[i + 2],
      line[i + 3]
    )
  end
  return out[2] and table.concat(out) or out[1] or ""
end

--- Call `f(col, end_col, group index, priority)` for each mark of a line.
---@param line number[]|string
---@param f fun(col: integer, end_col: integer, group: integer, priority: integer)
local function each(line, f)
  if type(line) == "table" then
    for i = 1, #line, 4 do
      f(line[i], line[i + 1], line[i + 2], line[i + 3])
    end
    return
  end
  for i = 1, #line, 8 do
    local c1, c2, c3, e1, e2, e3, g, p = byte(line, i, i + 7)
    local finish = e1 + e2 * 256 + e3 * 65536
    f(c1 + c2 * 256 + c3 * 65536, finish == NONE and -1 or finish, g, p)
  end
end

---@type integer?, integer?, integer? the last row looked up: buffer, changedtick, row mark id
local last_b, last_tick, last_row, last_id
---@type integer[]? the rows last cleared: buffer, changedtick, first, last (exclusive)
local fresh = nil

--- The marks of row `row`, created when `create`.
---@param b integer
---@param row integer
---@param create boolean
---@return number[]?
local function line_of(b, row, create)
  use(b)
  local tick = api.nvim_buf_get_changedtick(b)
  if not (last_b == b and last_tick == tick and last_row == row and lines[last_id]) then
    local found = {}
    local f = fresh
    if f and f[1] == b and f[2] == tick and row >= f[3] and row < f[4] then
      f[3] = row + 1 -- rows are marked in order: none of these has a row mark yet
    else
      found = api.nvim_buf_get_extmarks(b, rows_ns, { row, 0 }, { row, 0 }, { limit = 1 })
    end
    local id = found[1] and found[1][1]
    if not (id and lines[id]) then
      if not create then
        return nil
      end
      id = id or api.nvim_buf_set_extmark(b, rows_ns, row, 0, { right_gravity = false })
      lines[id] = {}
    end
    if create and type(lines[id]) == "string" then
      lines[id] = {} -- classified again
    end
    last_b, last_tick, last_row, last_id = b, tick, row, id
  end
  return lines[last_id]
end

--- Mark bytes `col`..`end_col` - 1 of row `row` (`end_col` -1: to the line's end,
--- however it grows).
---@param b integer
---@param row integer
---@param col integer
---@param end_col integer
---@param group string
---@param priority integer
function M.add(b, row, col, end_col, group, priority)
  local line = assert(line_of(b, row, true)) --[[@as number[] ]]
  M.added = M.added + 1
  growing[last_id] = true
  local n = #line
  line[n + 1], line[n + 2], line[n + 3], line[n + 4] = col, end_col, group_index(group), priority
end

--- Row `row` is whole: its marks are packed.
---@param b integer
---@param row integer
function M.seal(b, row)
  use(b)
  if next(growing) == nil then
    return
  end
  local line = line_of(b, row, false)
  if type(line) == "table" then
    lines[last_id] = pack(line)
    growing[last_id] = nil
  end
end

--- Take back row `row`'s mark of `group` from `col` to the line's end.
---@param b integer
---@param row integer
---@param col integer
---@param group string
function M.remove(b, row, col, group)
  local line = line_of(b, row, false)
  if type(line) ~= "table" then
    return
  end
  local g = group_index(group)
  for i = #line - 3, 1, -4 do
    if line[i] == col and line[i + 1] == -1 and line[i + 2] == g then
      for _ = 1, 4 do
        table.remove(line, i)
      end
      return
    end
  end
end

--- Forget the marks of rows `first`..`last` - 1 (`last` -1: to the end).
---@param b integer
---@param first integer
---@param last integer
function M.clear(b, first, last)
  if last ~= -1 and last <= first then
    return
  end
  use(b)
  local to = last == -1 and { -1, -1 } or { last - 1, -1 }
  for _, m in ipairs(api.nvim_buf_get_extmarks(b, rows_ns, { first, 0 }, to, {})) do
    lines[m[1]], growing[m[1]] = nil, nil
  end
  api.nvim_buf_clear_namespace(b, rows_ns, first, last)
  last_b = nil
  fresh = { b, api.nvim_buf_get_changedtick(b), first, last == -1 and math.huge or last }
end

--- Forget every mark of buffer `b` (a new transcript buffer, or one read again),
--- or without `b` of every buffer.
---@param b? integer
function M.reset(b)
  if b then
    by_buf[b] = nil
  else
    by_buf = {}
  end
  lines, growing, in_use, last_b, fresh = {}, {}, nil, nil, nil
end

--- The marks of rows `first`..`last` - 1, as extmarks would give them:
--- `{ row, col, end_col, group, priority }` (for tests and benches).
---@param b integer
---@param first integer
---@param last integer
---@return table[]
function M.get(b, first, last)
  use(b)
  local out = {}
  local to = last == -1 and { -1, -1 } or { last - 1, -1 }
  for _, m in ipairs(api.nvim_buf_get_extmarks(b, rows_ns, { first, 0 }, to, {})) do
    local row = m[2]
    local len = #(api.nvim_buf_get_lines(b, row, row + 1, false)[1] or "")
    each(lines[m[1]] or {}, function(col, finish, g, priority)
      finish = finish == -1 and len or finish
      if finish > col then
        out[#out + 1] = { row, col, finish, names[g], priority }
      end
    end)
  end
  return out
end

---@type table<integer, true> the buffers drawn
local drawn = {}
local ephemeral = { end_col = 0, hl_group = 0, priority = 0, ephemeral = true }
local to_end = { end_row = 0, end_col = 0, hl_group = 0, priority = 0, ephemeral = true }

--- Draw the marks of the lines in view in every window showing buffer `b` (the
--- transcript): all of them when the window is drawn, not line by line.
---@param b integer
function M.draw(b)
  local first = next(drawn) == nil
  drawn[b] = true
  if not first then
    return
  end
  api.nvim_set_decoration_provider(M.ns, {
    on_win = function(_, _, wb, top, bot)
      if not drawn[wb] then
        return false
      end
      -- The rows in view not classified yet (markdown_lazy.lua); an error there
      -- must not cost the marks already known (nor disable this provider).
      pcall(require("gemini_companion.agent.markdown_lazy").ensure, wb, top, bot)
      use(wb)
      for _, m in ipairs(api.nvim_buf_get_extmarks(wb, rows_ns, { top, 0 }, { bot, -1 }, {})) do
        local row = m[2]
        each(lines[m[1]] or {}, function(col, finish, g, priority)
          local o = ephemeral
          if finish == -1 then
            o = to_end
            o.end_row = row + 1
          else
            o.end_col = finish
          end
          o.hl_group, o.priority = hl_ids[g], priority
          pcall(api.nvim_buf_set_extmark, wb, M.ns, row, col, o)
        end)
      end
      return false
    end,
  })
end

return M
