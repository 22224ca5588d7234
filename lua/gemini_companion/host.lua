--- The only Lua module that talks to the Python side (rplugin/python3/gemini_companion):
--- every message between the two, in both directions, is named here.
---
--- Lua -> Python, one-way (`rpcnotify`; handlers in `__init__.py`):
---   start(options)                       gemini_companion_start
---   stop()                               gemini_companion_stop
---   workspace(dirs)                      gemini_companion_workspace
---   context(kind, ...)                   gemini_companion_context
---   diff_accept(id, body, eol, ff)       gemini_companion_diff_accept
---   diff_reject(id)                      gemini_companion_diff_reject
---   query_info(request) -> answer later  gemini_companion_host_info
--- Lua -> Python, a request (Neovim waits): ensure()'s start-up handshake,
--- GeminiCompanionHostInfo, the call that starts the Python host.
---
--- Python -> Lua (`nvim_editor.py`, through `M._receive`): see `handlers` below,
--- each marked one-way or answered.
local M = {}

---@type integer?
M.channel = nil

--- What the start-up handshake returned (channel, python, venv, state).
---@type table?
M.info = nil

--- Whether the remote plugin is registered: its functions are defined on first
--- use (a FuncUndefined autocommand).
---@return boolean
function M.registered()
  return vim.fn.exists("*GeminiCompanionHostInfo") == 1 or vim.fn.exists("#FuncUndefined#GeminiCompanionHostInfo") == 1
end

--- Start the Python host if it is not running: the start-up handshake.
---@return integer? channel
---@return string? error
function M.ensure()
  if M.channel then
    return M.channel
  end
  if not M.registered() then
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

---@param method string
---@param ... any
local function notify(method, ...)
  if M.channel then
    vim.rpcnotify(M.channel, method, ...)
  end
end

-- Lua -> Python ---------------------------------------------------------------------

--- Start the companion server with these options (companion.py `StartOptions`).
---@param options table
function M.start(options)
  notify("gemini_companion_start", options)
end

--- Stop the companion server and remove its discovery file.
function M.stop()
  notify("gemini_companion_stop")
end

--- The directories Neovim works in changed.
---@param dirs string[]
function M.workspace(dirs)
  notify("gemini_companion_workspace", dirs)
end

--- Forward an editor event to the context tracker (context.py).
---@param kind string
---@param ... any
function M.context(kind, ...)
  notify("gemini_companion_context", kind, ...)
end

--- The user accepted diff `id`: its proposal's lines joined by "\n", 'eol', 'fileformat'.
---@param id integer
---@param body string
---@param eol boolean
---@param fileformat string
function M.diff_accept(id, body, eol, fileformat)
  notify("gemini_companion_diff_accept", id, body, eol, fileformat)
end

--- The user rejected diff `id` (or closed its view).
---@param id integer
function M.diff_reject(id)
  notify("gemini_companion_diff_reject", id)
end

local queries = 0
---@type table<integer, table>
local answers = {}

--- Ask the host what :checkhealth reports (its Python, venv, package versions)
--- and wait for the answer at most `timeout_ms`: the question is a notification
--- and the answer another, so a busy or hung host cannot freeze Neovim.
---@param request table e.g. { packages = { "mcp" } }
---@param timeout_ms integer
---@return table? info
---@return string? error
function M.query_info(request, timeout_ms)
  if not M.channel then
    return nil, "the Python host is not running"
  end
  queries = queries + 1
  local id = queries
  notify("gemini_companion_host_info", id, request)
  local ok = vim.wait(timeout_ms, function()
    return answers[id] ~= nil
  end, 5)
  local info = answers[id]
  answers[id] = nil
  if not ok or not info then
    return nil, string.format("no answer within %d ms", timeout_ms)
  end
  return info
end

-- Python -> Lua ---------------------------------------------------------------------

---@type table<string, fun(...): any>
local handlers = {
  -- one-way: the companion's state changed
  state = function(state)
    require("gemini_companion.state")._update(state)
  end,
  -- one-way: a message for the user
  notify = function(message, level)
    require("gemini_companion.state")._notify(message, level)
  end,
  -- one-way: the server stopped by itself (it failed): stop forwarding events
  stopped = function()
    require("gemini_companion")._stopped()
  end,
  -- one-way: the answer to query_info()
  host_info = function(id, info)
    answers[id] = info
  end,
  -- answered: open a diff view; true, { refused = reason }, or an error
  diff_open = function(spec)
    return require("gemini_companion.diff")._open(spec)
  end,
  -- answered: close a view without an answer; its proposal, or nil
  diff_close = function(id, result)
    return require("gemini_companion.diff")._close(id, result)
  end,
  -- one-way: the answer to the CLI went out: close the view
  diff_finish = function(id, result)
    require("gemini_companion.diff")._finish(id, result)
  end,
  -- one-way: the view's CLI is gone: keep it, marked
  diff_orphan = function(id)
    require("gemini_companion.diff")._orphan(id)
  end,
  -- answered: the accepted text cannot be sent; whether the view is still open
  diff_accept_failed = function(id, message)
    return require("gemini_companion.diff")._accept_failed(id, message)
  end,
  -- answered: the agent reads a file: its loaded buffer's text, or nil (agent/files.lua)
  buffer_read = function(path)
    return require("gemini_companion.agent.files").read(path)
  end,
  -- answered: the agent writes a file: apply the edits to its buffer and write it
  buffer_apply = function(path, tick, edits, options)
    return require("gemini_companion.agent.files").apply(path, tick, edits, options)
  end,
}

--- The one entry point of the Python side into Lua (nvim_editor.py).
---@param name string
---@param ... any
---@return any
function M._receive(name, ...)
  local handler = handlers[name]
  if not handler then
    error("gemini_companion: unknown message from the Python side: " .. tostring(name), 0)
  end
  return handler(...)
end

return M
