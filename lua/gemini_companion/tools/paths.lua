--- Which files the tools may name: the path policy of `openDiff`
--- (rplugin/python3/gemini_companion/paths.py): a file under a workspace folder or
--- `diff.allowed_dirs` (the policy's roots), or one open in a Neovim buffer.
---
--- The Python side decides for the path the agent named (`call.allowed`) and sends
--- the roots for the paths only Neovim sees (a language server's answer), which
--- `under_roots` checks by the policy's own rule: the real path, under a root.
local M = {}

local api, uv = vim.api, vim.uv or vim.loop

---@param path string
---@return string
function M.real(path)
  return uv.fs_realpath(path) or vim.fs.normalize(path)
end

---@param buf integer
---@return string? path of a buffer holding a file
function M.buffer_path(buf)
  return require("gemini_companion.context").file_path(buf)
end

--- The loaded buffer holding `path`, if any.
---@param path string
---@return integer?
function M.find_buffer(path)
  local wanted = M.real(path)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local name = api.nvim_buf_is_loaded(buf) and M.buffer_path(buf)
    if name and (name == path or M.real(name) == wanted) then
      return buf
    end
  end
end

--- The loaded file buffers by real path (for checking many paths at once).
---@return table<string, integer>
function M.open_buffers()
  local open = {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local name = api.nvim_buf_is_loaded(buf) and M.buffer_path(buf)
    if name then
      open[M.real(name)] = buf
    end
  end
  return open
end

--- `real_path` (links resolved) is under one of `roots` (real paths): PathPolicy.allows.
---@param real_path string
---@param roots string[]
---@return boolean
function M.under_roots(real_path, roots)
  for _, root in ipairs(roots) do
    local base = root:gsub("/$", "")
    if real_path == root or real_path == base or vim.startswith(real_path, base .. "/") then
      return true
    end
  end
  return false
end

--- A refusal: the message is what the agent (a model) reads.
---@param message string
function M.refuse(message)
  error({ tool_error = message }, 0)
end

local OUTSIDE = " is outside the workspace (and diff.allowed_dirs) and not open in Neovim"

--- The open buffer for `path`, or a refusal saying why there is none.
---@param path string
---@param call gemini_companion.ToolCall
---@return integer buf
function M.open_buffer(path, call)
  local buf = M.find_buffer(path)
  if buf then
    return buf
  end
  if not call.allowed then
    M.refuse(path .. OUTSIDE .. ": it cannot be read")
  end
  if not uv.fs_stat(path) then
    M.refuse("no such file: " .. path .. " (listOpenBuffers shows the files open in Neovim)")
  end
  M.refuse(path .. " is not open in Neovim: read it from disk instead, or ask the user to open it")
end

--- Refuse `path` unless the policy allows it or it is open.
---@param path string
---@param call gemini_companion.ToolCall
function M.check_allowed(path, call)
  if not call.allowed and not M.find_buffer(path) then
    M.refuse(path .. OUTSIDE)
  end
end

return M
