--- The transcript kept across an unload of its buffer (`:edit` in its window,
--- `:bunload`): its lines and its blocks' first rows are saved as Neovim
--- unloads it, and drawn again, with the blocks' marks and their markdown, as
--- Neovim reads it again (agent/transcript.lua's autocommands).
local M = {}

local api = vim.api

---@type table<integer, { lines: string[], starts: integer[] }> by buffer: the
--- transcript and its blocks' first rows when Neovim unloaded it, until it reads
--- it again
local saved = {}

--- Forget what was saved of buffer `b` (a new buffer).
---@param b integer
function M.reset(b)
  saved[b] = nil
end

---@param b integer
function M.save(b)
  local blocks = require("gemini_companion.agent.transcript_blocks")
  local starts = {}
  for i, id in ipairs(blocks.order) do
    starts[i] = blocks.start(b, id)
  end
  saved[b] = { lines = api.nvim_buf_get_lines(b, 0, -1, false), starts = starts }
end

--- Draw the transcript saved when the buffer was unloaded again, with its
--- blocks' marks and their markdown (the thoughts' folds: BufWinEnter, next).
---@param b integer
---@param writable fun(b: integer)
---@param read_only fun(b: integer)
function M.restore(b, writable, read_only)
  local s = saved[b]
  saved[b] = nil
  local blocks = require("gemini_companion.agent.transcript_blocks")
  local order = blocks.order
  if not s or #s.starts ~= #order then
    return
  end
  api.nvim_buf_clear_namespace(b, -1, 0, -1)
  writable(b)
  api.nvim_buf_set_lines(b, 0, -1, false, s.lines)
  read_only(b)
  vim.bo[b].modified = false
  blocks.forget_tail()
  for i, id in ipairs(order) do
    local block = blocks.blocks[id]
    block.mark = api.nvim_buf_set_extmark(b, blocks.ns, s.starts[i], 0, { id = block.mark })
  end
  local md = require("gemini_companion.agent.markdown")
  md.reset(b)
  for i, id in ipairs(order) do
    local start, finish = blocks.range(b, id)
    md.update(b, id, blocks.blocks[id].kind, start, start, finish, true)
    if i < #order then
      md.finish(b, id, start, finish)
    end
  end
  require("gemini_companion.agent.renderers").changed(b)
end

return M
