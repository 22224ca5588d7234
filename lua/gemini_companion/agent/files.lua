--- The agent's file reads and writes through loaded buffers (ACP `fs/*`), called
--- by rplugin/python3/gemini_companion/agent/files.py, which owns the policy (what
--- to read, how a write merges with unsaved edits). This module only reads a
--- buffer's text and applies a computed change to it as one undo step.
local M = {}

local api = vim.api

--- The loaded, file-backed buffer showing `path`: its full name equal to `path`, or
--- the same real file. Never `vim.fn.bufnr(path)`, a pattern match that takes
--- `a.py.orig` for `a.py` and `d.tsx` for `[id].tsx`.
---@param path string absolute
---@return integer?
function M.buffer(path)
  local real = vim.uv.fs_realpath(path)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      local name = api.nvim_buf_get_name(buf)
      if name ~= "" and (name == path or (real ~= nil and vim.uv.fs_realpath(name) == real)) then
        return buf
      end
    end
  end
  return nil
end

---@class gemini_companion.agent.BufferText
---@field lines string[]
---@field eol boolean
---@field fileformat string
---@field tick integer
---@field modified boolean

---@param buf integer
---@return gemini_companion.agent.BufferText
local function snapshot(buf)
  return {
    lines = api.nvim_buf_get_lines(buf, 0, -1, false),
    eol = vim.bo[buf].eol or vim.bo[buf].fixeol,
    fileformat = vim.bo[buf].fileformat,
    tick = api.nvim_buf_get_changedtick(buf),
    modified = vim.bo[buf].modified,
  }
end

--- The text of `path`'s buffer, or nil when the file is not loaded.
---@param path string
---@return gemini_companion.agent.BufferText?
function M.read(path)
  local buf = M.buffer(path)
  return buf and snapshot(buf) or nil
end

---@class gemini_companion.agent.Edit
---@field start integer 0-based first line replaced
---@field end integer 0-based, exclusive
---@field lines string[]

--- Apply `edits` (computed against changedtick `tick`) to `path`'s buffer as one
--- undo step and write the buffer. Refuses when the buffer changed since.
---@param path string
---@param tick integer
---@param edits gemini_companion.agent.Edit[] in order, not overlapping
---@param opts { eol: boolean, fileformat: string }
---@return { ok: boolean, reason?: "unloaded"|"changed"|"error", error?: string }
function M.apply(path, tick, edits, opts)
  local buf = M.buffer(path)
  if not buf then
    return { ok = false, reason = "unloaded" }
  end
  if api.nvim_buf_get_changedtick(buf) ~= tick then
    return { ok = false, reason = "changed" }
  end
  local ok, err = pcall(function()
    -- Bottom-up, so earlier line numbers stay valid. All of it happens in this one
    -- call, without returning to the input loop: one undo step.
    for i = #edits, 1, -1 do
      local edit = edits[i]
      api.nvim_buf_set_lines(buf, edit.start, edit["end"], false, edit.lines)
    end
    local bo = vim.bo[buf]
    if bo.fileformat ~= opts.fileformat then
      bo.fileformat = opts.fileformat
    end
    if (bo.eol or bo.fixeol) ~= opts.eol then
      bo.eol = opts.eol
      if not opts.eol then
        bo.fixeol = false -- else Neovim adds the newline the agent left out
      end
    end
    api.nvim_buf_call(buf, function()
      -- `!`: the agent may have changed the file on disk since it was loaded; no
      -- "file changed" prompt may block Neovim. Autocommands run (formatters too).
      vim.cmd("silent keepalt keepjumps write!")
    end)
  end)
  if not ok then
    return { ok = false, reason = "error", error = tostring(err) }
  end
  return { ok = true }
end

return M
