--- The agent panel's link to the agent: connecting (starting the companion and
--- opening the agent session in the background), the requests the API sends
--- through host.lua, cancel and stop, and the title of the API's messages.
local M = {}

local connected = false

---@return gemini_companion.AgentConfig
function M.config()
  return require("gemini_companion.config").get().agent
end

---@param message string
---@param level? integer
function M.notify(message, level)
  vim.notify(message, level or vim.log.levels.INFO, { title = "Gemini agent" })
end

--- Where the ACP transport records the sessions it started (agent/acp/sessions.py),
--- for :GeminiAgentResume.
---@return string
function M.sessions_file()
  return vim.fs.joinpath(vim.fn.stdpath("state"), "gemini-companion", "acp-sessions.json")
end

--- Make sure the companion runs and the agent session exists (connecting or
--- starting the agent in the background).
---@param opts? { spare?: boolean } spare: agent.prestart's start (spare.lua), not the user's
---@return boolean
function M.ensure(opts)
  if not (opts and opts.spare) and package.loaded["gemini_companion.agent.spare"] then
    require("gemini_companion.agent.spare").claimed()
  end
  if not require("gemini_companion.state").current.running then
    require("gemini_companion").start({ quiet = true })
  end
  local host = require("gemini_companion.host")
  if not host.channel then
    return false
  end
  if not connected or require("gemini_companion.agent.state").current.state == "stopped" then
    local cfg = M.config()
    host.agent("open", {
      protocol = cfg.protocol,
      a2a = cfg.a2a,
      acp = vim.tbl_extend("force", cfg.acp, { sessions_file = M.sessions_file() }),
      workspace = vim.fn.getcwd(),
    })
    connected = true
  end
  return true
end

--- The agent session was asked for (by the panel, a request or agent.prestart).
---@return boolean
function M.opened()
  return connected
end

---@param action string
---@param args? table
function M.request(action, args)
  if M.ensure() then
    require("gemini_companion.host").agent(action, args or vim.empty_dict())
  end
end

--- Cancel the agent's running prompt.
function M.cancel()
  if connected then
    require("gemini_companion.host").agent("cancel", vim.empty_dict())
  end
end

--- Stop the agent (and the server the plugin started for it).
function M.stop()
  if connected then
    require("gemini_companion.host").agent("stop", vim.empty_dict())
    connected = false
    require("gemini_companion.agent.state")._update({ state = "stopped", pending = {}, commands = {} })
  end
end

--- Forget the session (the Python side stopped it).
function M.reset()
  connected = false
end

return M
