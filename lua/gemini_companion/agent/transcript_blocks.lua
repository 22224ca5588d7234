--- The transcript's blocks (agent/transcript.lua): each a range of lines starting
--- at an extmark, in transcript order, with its kind and the confirmation it
--- shows. Drawing a block or an append into the buffer, and reading a block's
--- rows back, is done here; the table is read by the highlighting
--- (transcript_decor.lua) and the persistence (transcript_persist.lua).
local M = {}

local api = vim.api

M.ns = api.nvim_create_namespace("gemini_companion_agent_blocks")
local ns = M.ns

---@class gemini_companion.AgentBlocks one transcript buffer's blocks
---@field order integer[] block ids in transcript order
---@field blocks table<integer, { mark: integer, index: integer, kind: string, pending?: string }>
---@field shown table<string, integer> call id -> the block that shows its confirmation
---@field tail_tick? integer the buffer's changedtick after the last append
---@field tail_len integer the length of its last line then (bytes)

--- A new, empty table of blocks (one per transcript buffer: one per conversation).
---@return gemini_companion.AgentBlocks
function M.new()
  return { order = {}, blocks = {}, shown = {}, tail_tick = nil, tail_len = 0 }
end

---@type gemini_companion.AgentBlocks the table in use (`M.use`)
local st = M.new()
-- The table in use's fields, read on every op.
M.order = st.order
M.blocks = st.blocks
local order, blocks, shown = st.order, st.blocks, st.shown
local tail_tick, tail_len = nil, 0

--- Work on the blocks of `other` (the buffer about to be drawn or read).
---@param other gemini_companion.AgentBlocks
function M.use(other)
  if other == st then
    return
  end
  st.tail_tick, st.tail_len = tail_tick, tail_len
  st = other
  order, blocks, shown = st.order, st.blocks, st.shown
  tail_tick, tail_len = st.tail_tick, st.tail_len
  M.order, M.blocks = order, blocks
end

--- Forget every block of the table in use (a new buffer).
function M.reset()
  for k in pairs(order) do
    order[k] = nil
  end
  for k in pairs(blocks) do
    blocks[k] = nil
  end
  for k in pairs(shown) do
    shown[k] = nil
  end
  tail_tick, tail_len = nil, 0
end

--- The buffer was written whole (restored): the last line's length is read again.
function M.forget_tail()
  tail_tick = nil
end

--- The row where block `id` starts.
---@param b integer
---@param id integer
---@return integer
function M.start(b, id)
  return api.nvim_buf_get_extmark_by_id(b, ns, blocks[id].mark, {})[1]
end

--- The first block shown at or after row `top` (binary search on the blocks'
--- extmarks), as an index in `order`.
---@param b integer
---@param top integer
---@return integer
function M.block_at(b, top)
  local lo, hi = 1, #order
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    if M.start(b, order[mid]) <= top then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return lo
end

---@param b integer
---@param id integer
---@return integer start, integer finish (exclusive)
function M.range(b, id)
  local start = M.start(b, id)
  local next_id = order[blocks[id].index + 1]
  local finish = next_id and M.start(b, next_id) or api.nvim_buf_line_count(b)
  return start, finish
end

--- Lines as Neovim takes them: one holding a newline (which nvim_buf_set_lines
--- refuses, failing the whole batch) becomes several.
---@param lines string[]
---@return string[]
local function as_lines(lines)
  for i, line in ipairs(lines) do
    if line:find("\n", 1, true) then
      local out = vim.list_slice(lines, 1, i - 1)
      for j = i, #lines do
        vim.list_extend(out, vim.split(lines[j], "\n", { plain = true }))
      end
      return out
    end
  end
  return lines
end

---@param b integer
---@param id integer
---@param lines string[]
local function add_block(b, id, lines)
  local start
  if #order == 0 then
    start = 0
    api.nvim_buf_set_lines(b, 0, -1, false, lines)
  else
    start = api.nvim_buf_line_count(b)
    api.nvim_buf_set_lines(b, start, start, false, lines)
  end
  order[#order + 1] = id
  blocks[id] = { index = #order, mark = api.nvim_buf_set_extmark(b, ns, start, 0, {}), kind = "text" }
end

---@param b integer
---@param id integer
---@param lines string[]
local function set_block(b, id, lines)
  lines = as_lines(lines)
  if not blocks[id] then
    add_block(b, id, lines)
    return
  end
  local start, finish = M.range(b, id)
  api.nvim_buf_set_lines(b, start, finish, false, lines)
  api.nvim_buf_set_extmark(b, ns, start, 0, { id = blocks[id].mark })
end

--- A block op: its lines, then what it shows (a confirmation is "shown" only
--- once its lines are in the buffer).
---@param b integer
---@param op { id: integer, lines: string[], kind?: string, pending?: string }
function M.draw(b, op)
  local block = blocks[op.id]
  if block and block.pending then
    shown[block.pending] = nil
    block.pending = nil
  end
  set_block(b, op.id, op.lines)
  block = blocks[op.id]
  block.kind = op.kind or block.kind
  if op.pending then
    block.pending = op.pending
    shown[op.pending] = op.id
  end
end

--- When drawing an op failed: its lines with control characters made visible,
--- or a line saying it could not be drawn. A confirmation never hides: it is
--- either shown in full or not "shown" at all (then nothing answers it unnamed).
---@param b integer
---@param op table
---@param err string
function M.draw_failed(b, op, err)
  local lines = {}
  for _, line in ipairs(type(op.lines) == "table" and op.lines or {}) do
    lines[#lines + 1] = tostring(line):gsub("%c", function(c)
      return ("<%02x>"):format(c:byte())
    end)
  end
  table.insert(lines, 1, "[Error] this block could not be drawn: " .. tostring(err):gsub("%c", " "))
  local ok = pcall(M.draw, b, { id = op.id, lines = lines, kind = "notice", pending = op.pending })
  if not ok and op.pending then
    shown[op.pending] = nil
  end
end

--- `text` cut at its newlines (vim.split's work, without its checks and
--- iterator: it runs for every streamed chunk).
---@param text string
---@return string[]
local function split_lines(text)
  local pieces, init = {}, 1
  while true do
    local nl = text:find("\n", init, true)
    if not nl then
      pieces[#pieces + 1] = init == 1 and text or text:sub(init)
      return pieces
    end
    pieces[#pieces + 1] = text:sub(init, nl - 1)
    init = nl + 1
  end
end

--- Append `text` to the last line of block `id` (the transcript's last).
---@param b integer
---@param id integer
---@param text string
---@param prefix string
---@return integer first the first row it changed
---@return integer count the buffer's line count after it
function M.append(b, id, text, prefix)
  if not blocks[id] then
    add_block(b, id, { "", "" })
  end
  local pieces = split_lines(text)
  local last = api.nvim_buf_line_count(b) - 1
  local col = tail_len
  if tail_tick ~= api.nvim_buf_get_changedtick(b) then
    col = #(api.nvim_buf_get_lines(b, last, last + 1, false)[1] or "")
  end
  for i = 2, #pieces do
    pieces[i] = prefix .. pieces[i]
  end
  tail_len = #pieces == 1 and col + #pieces[1] or #pieces[#pieces]
  if col > 0 then
    -- Inserted at the line's end: Neovim does not re-check the view of the
    -- windows whose cursor is on it (they follow the stream, and are moved once
    -- a frame), nor is the line read back and written whole.
    api.nvim_buf_set_text(b, last, col, last, col, pieces)
  else
    -- An empty line: text inserted there would take a cursor on it along.
    api.nvim_buf_set_lines(b, last, last + 1, false, pieces)
  end
  tail_tick = api.nvim_buf_get_changedtick(b)
  return last, last + #pieces
end

--- The rows (1-based, inclusive) a thought's fold covers: from its subject to its
--- last line; nil when it has no such lines (drawn as something else).
---@param b integer
---@param id integer
---@return integer? first, integer? last
function M.thought_rows(b, id)
  if blocks[id].kind ~= "thought" then
    return nil
  end
  local start, finish = M.range(b, id)
  if finish < start + 2 then
    return nil
  end
  return start + 2, finish
end

--- The transcript shows the confirmation of this tool call in full.
---@param call_id string
---@return boolean
function M.shows(call_id)
  local id = shown[call_id]
  return id ~= nil and blocks[id] ~= nil and blocks[id].pending == call_id
end

return M
