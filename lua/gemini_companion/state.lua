--- The companion's state as last published by the Python side, and the terminal
--- environment that follows from it. Read by the status command, the statusline
--- and :checkhealth without a round trip to Python.
local M = {}

---@type gemini_companion.State
M.current = { running = false, sessions = {}, env = {} }

---@type table<string, boolean> variables this plugin set in Neovim's environment
local exported = {}

---@param env table<string, string>
local function apply_env(env)
  for name in pairs(exported) do
    if env[name] == nil then
      vim.env[name] = nil
      exported[name] = nil
    end
  end
  for name, value in pairs(env) do
    vim.env[name] = value
    exported[name] = true
  end
end

--- Called by the Python side (exec_lua) whenever its state changes.
---@param state gemini_companion.State
function M._update(state)
  state.sessions = state.sessions or {}
  state.env = state.env or {}
  M.current = state
  apply_env(state.env)
  vim.api.nvim_exec_autocmds("User", { pattern = "GeminiCompanionStatus", modeline = false, data = state })
  vim.cmd.redrawstatus({ bang = true })
end

--- A message from the Python side made short enough for the message area: its first
--- lines, cut at a character boundary. Text from outside (an agent's error can quote a
--- whole model request) would otherwise fill the screen, and Neovim's more-prompt
--- holds the editor, RPC requests included, until a key is pressed.
---@param message string
---@param where string where the text can be read in full, named when it is cut
---@return string
function M.brief(message, where)
  local lines = vim.split(message, "\n", { plain = true })
  local short = table.concat(vim.list_slice(lines, 1, 3), "\n")
  if vim.fn.strchars(short) > 300 then
    short = vim.fn.strcharpart(short, 0, 300)
  end
  if short == message then
    return message
  end
  return short .. " ... (cut; in full in " .. where .. ")"
end

--- Called by the Python side to show a message.
---@param message string
---@param level integer
function M._notify(message, level)
  local where = "the log file " .. require("gemini_companion.config").log_file()
  vim.notify(M.brief(message, where), level, { title = "Gemini companion" })
end

--- Forget the published state (the host is gone): clears what was exported.
function M.reset()
  M._update({ running = false, sessions = {}, env = {} })
end

---@return string[] names of the variables exported to jobs
function M.exported()
  return vim.tbl_keys(exported)
end

return M
