--- The only Lua module that knows the Python side exists: its channel and the
--- names of the notifications it handles (rplugin/python3/gemini_companion).
local M = {}

---@type integer?
M.channel = nil

---@return integer? channel
---@return string? error
function M.ensure()
  if M.channel then
    return M.channel
  end
  -- Remote functions are defined on first use (a FuncUndefined autocommand).
  local registered = vim.fn.exists("*GeminiCompanionHostInfo") == 1
    or vim.fn.exists("#FuncUndefined#GeminiCompanionHostInfo") == 1
  if not registered then
    return nil,
      "the remote plugin is not registered: run :GeminiCompanionBuild (the plugin's build step) and restart Neovim"
  end
  -- The Python the build step chose must be in place before the host starts.
  require("gemini_companion.python").apply()
  -- The first call starts the Python host; Neovim waits for it (the module it
  -- imports is kept small for that reason).
  local ok, info = pcall(vim.fn.GeminiCompanionHostInfo)
  if not ok or type(info) ~= "table" then
    return nil, "the Python host did not start: " .. tostring(info) .. " (see :checkhealth gemini_companion)"
  end
  M.channel = info.channel
  M.info = info
  return M.channel
end

--- Send a notification to the Python side; never waits.
---@param method string
---@param ... any
function M.notify(method, ...)
  if M.channel then
    vim.rpcnotify(M.channel, method, ...)
  end
end

--- Forward an editor event to the context tracker (context.py); never waits.
---@param kind string
---@param ... any
function M.context(kind, ...)
  if M.channel then
    vim.rpcnotify(M.channel, "gemini_companion_context", kind, ...)
  end
end

return M
