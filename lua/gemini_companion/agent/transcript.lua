--- The transcript buffer (filetype `gemini_agent`): read-only, markdown-like, and
--- drawn only here, from the batches of operations the Python side sends
--- (agent/view.py documents them). A block is a range of lines starting at an
--- extmark; a tool block is replaced whole on each update, text blocks grow at the
--- end. The buffer outlives its windows, so reopening the panel shows it again.
local M = {}

local api = vim.api
local ns = api.nvim_create_namespace("gemini_companion_agent_blocks")

---@type integer?
local buf = nil
---@type integer[] block ids in transcript order
local order = {}
---@type table<integer, { mark: integer, index: integer }>
local blocks = {}

local NAME = "gemini-agent://transcript"

--- The transcript buffer, created on first use.
---@return integer
function M.buffer()
  if buf and api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = api.nvim_create_buf(false, true)
  order, blocks = {}, {}
  api.nvim_buf_set_name(buf, NAME)
  local bo = vim.bo[buf]
  bo.buftype = "nofile"
  bo.bufhidden = "hide"
  bo.swapfile = false
  bo.undolevels = -1
  bo.modifiable = false
  bo.filetype = "gemini_agent"
  return buf
end

---@param b integer
---@param id integer
---@return integer start, integer finish (exclusive)
local function range(b, id)
  local block = blocks[id]
  local start = api.nvim_buf_get_extmark_by_id(b, ns, block.mark, {})[1]
  local next_id = order[block.index + 1]
  local finish = next_id and api.nvim_buf_get_extmark_by_id(b, ns, blocks[next_id].mark, {})[1]
    or api.nvim_buf_line_count(b)
  return start, finish
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
  blocks[id] = { index = #order, mark = api.nvim_buf_set_extmark(b, ns, start, 0, {}) }
end

---@param b integer
---@param id integer
---@param lines string[]
local function set_block(b, id, lines)
  if not blocks[id] then
    add_block(b, id, lines)
    return
  end
  local start, finish = range(b, id)
  api.nvim_buf_set_lines(b, start, finish, false, lines)
  api.nvim_buf_set_extmark(b, ns, start, 0, { id = blocks[id].mark })
end

---@param b integer
---@param id integer
---@param text string
---@param prefix string
local function append(b, id, text, prefix)
  if not blocks[id] then
    add_block(b, id, { "", "" })
  end
  local pieces = vim.split(text, "\n", { plain = true })
  local last = api.nvim_buf_line_count(b) - 1
  local tail = api.nvim_buf_get_lines(b, last, last + 1, false)[1] or ""
  pieces[1] = tail .. pieces[1]
  for i = 2, #pieces do
    pieces[i] = prefix .. pieces[i]
  end
  api.nvim_buf_set_lines(b, last, last + 1, false, pieces)
end

--- Windows showing the transcript whose cursor was on the last line: they follow
--- the stream.
---@param b integer
---@return integer[]
local function following(b)
  local wins = {}
  local count = api.nvim_buf_line_count(b)
  for _, win in ipairs(vim.fn.win_findbuf(b)) do
    if api.nvim_win_get_cursor(win)[1] >= count - 1 then
      wins[#wins + 1] = win
    end
  end
  return wins
end

local levels = { info = vim.log.levels.INFO, warning = vim.log.levels.WARN, error = vim.log.levels.ERROR }

--- Draw one batch (agent/view.py, through host.lua's agent_draw).
---@param ops table[]
function M._apply(ops)
  local b = M.buffer()
  local follow = following(b)
  local changed = false
  vim.bo[b].modifiable = true
  local ok, err = pcall(function()
    for _, op in ipairs(ops) do
      if op.op == "block" then
        set_block(b, op.id, op.lines)
        changed = true
      elseif op.op == "append" then
        append(b, op.id, op.text, op.prefix or "")
        changed = true
      end
    end
  end)
  vim.bo[b].modifiable = false
  if changed then
    local count = api.nvim_buf_line_count(b)
    for _, win in ipairs(follow) do
      pcall(api.nvim_win_set_cursor, win, { count, 0 })
    end
  end
  for _, op in ipairs(ops) do
    if op.op == "state" then
      require("gemini_companion.agent.state")._update(op.state)
    elseif op.op == "notify" then
      local text = require("gemini_companion.state").brief(op.text, "the agent's transcript")
      vim.notify(text, levels[op.level] or vim.log.levels.INFO, { title = "Gemini agent" })
    elseif op.op == "checktime" then
      pcall(vim.cmd.checktime)
    end
  end
  if not ok then
    error(err, 0)
  end
end

--- The transcript's lines (for tests and for `:w` to a file by the user).
---@return string[]
function M.lines()
  return api.nvim_buf_get_lines(M.buffer(), 0, -1, false)
end

return M
