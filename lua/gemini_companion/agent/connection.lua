--- The agent panel's link to the agent: connecting (starting the companion and
--- opening the agent session in the background), the requests the API sends
--- through host.lua, cancel and stop, and the title of the API's messages.
local M = {}

---@return gemini_companion.AgentConversationSlot
local function shown()
  return require("gemini_companion.agent.conversations").current()
end

---@return gemini_companion.AgentConfig
function M.config()
  return require("gemini_companion.config").get().agent
end

--- The protocol the agent speaks now (`state().protocol`), else the configured one.
---@return string
function M.protocol()
  return require("gemini_companion.agent.state").current.protocol or M.config().protocol
end

---@param message string
---@param level? integer
function M.notify(message, level)
  vim.notify(message, level or vim.log.levels.INFO, { title = "Gemini agent" })
end

--- The conversation history (history.lua; the Python side's agent/history/), for
--- :GeminiAgentConversations and :GeminiAgentResume.
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
  local c = shown()
  if not c.opened or c.state.state == "stopped" then
    if c.opened and (c.retired or c.started) then
      -- Its agent session is over: a new one, under a new id (conversations.lua).
      require("gemini_companion.agent.conversations").renumber(c)
    end
    local cfg = M.config()
    require("gemini_companion.agent.history").check()
    host.agent("open", {
      conversation = c.id,
      protocol = cfg.protocol,
      a2a = cfg.a2a,
      acp = vim.tbl_extend("force", cfg.acp, { sessions_file = M.sessions_file() }),
      workspace = vim.fn.getcwd(),
    })
    c.opened = true
  end
  return true
end

--- The agent session of some conversation was asked for (by the panel, a request
--- or agent.prestart).
---@return boolean
function M.opened()
  for _, c in ipairs(require("gemini_companion.agent.conversations").all()) do
    if c.opened then
      return true
    end
  end
  return false
end

--- A request for the shown conversation (or for `args.conversation`: a prompt
--- sent again once its attachments are confirmed goes where it was sent from).
---@param action string
---@param args? table
function M.request(action, args)
  if M.ensure() then
    local sent = vim.tbl_extend("keep", args or {}, { conversation = shown().id })
    require("gemini_companion.host").agent(action, sent)
  end
end

--- Cancel the shown conversation's running prompt.
function M.cancel()
  local c = shown()
  if c.opened then
    require("gemini_companion.host").agent("cancel", { conversation = c.id })
  end
end

--- Stop the agent (and the server the plugin started for it): every
--- conversation's turn; they stay listed, not live.
function M.stop()
  if M.opened() then
    require("gemini_companion.host").agent("stop", vim.empty_dict())
    require("gemini_companion.agent.conversations").stop_all()
    require("gemini_companion.agent.state")._update(shown().state)
  end
end

--- Forget the session (the Python side stopped it).
function M.reset()
  require("gemini_companion.agent.conversations").forget()
end

return M
