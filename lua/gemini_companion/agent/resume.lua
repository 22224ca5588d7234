--- Resuming a past ACP conversation (:GeminiAgentResume): the sessions the plugin
--- recorded for this directory, the picker, and the completion of
--- :GeminiAgentMode, :GeminiAgentModel and :GeminiAgentResume.
local M = {}

---@param message string
---@param level? integer
local function notify(message, level)
  require("gemini_companion.agent.connection").notify(message, level)
end

---@return string
local function protocol()
  return require("gemini_companion.agent.connection").protocol()
end

--- Past ACP sessions of the current directory, most recent first, but the one
--- open in the panel (read from the plugin's own record: no round trip to the
--- agent). None over A2A: the A2A server cannot load a conversation.
---@return gemini_companion.AgentHistoryRecord[]
function M.sessions()
  if protocol() ~= "acp" then
    return {}
  end
  local open = require("gemini_companion.agent.state").current.session_id
  return vim.tbl_filter(function(r)
    -- The conversation open in the panel is not offered: loading it changes nothing.
    return r.protocol == "acp" and r.id ~= open
  end, require("gemini_companion.agent.history").workspace())
end

--- Load a past session into the agent (ACP `session/load`): its conversation is
--- replayed into the transcript and the next prompt continues it. Without an id,
--- choose one with `vim.ui.select`.
---@param session_id? string
function M.resume(session_id)
  if protocol() ~= "acp" then
    notify('resuming a conversation needs agent.protocol = "acp": the A2A server cannot load one', vim.log.levels.WARN)
    return
  end
  if session_id and session_id ~= "" then
    local panel = require("gemini_companion.agent.panel")
    if not panel.visible() then
      panel.open({ enter = false })
    end
    require("gemini_companion.agent.connection").request("resume", { session_id = session_id })
    return
  end
  local sessions = M.sessions()
  if #sessions == 0 then
    notify("no past agent sessions in " .. vim.fn.getcwd(), vim.log.levels.WARN)
    return
  end
  vim.ui.select(sessions, {
    prompt = "Resume which conversation?",
    format_item = function(s)
      local title = s.title ~= "" and s.title or "(no prompt)"
      return ("%s  %s"):format(os.date("%Y-%m-%d %H:%M", math.floor(s.updated_at or 0)), title)
    end,
  }, function(choice)
    if choice then
      M.resume(choice.id)
    end
  end)
end

---@param list string[]?
---@param lead string
---@return string[]
local function starting_with(list, lead)
  return vim.tbl_filter(function(item)
    return vim.startswith(item, lead)
  end, list or {})
end

--- Completion of :GeminiAgentMode, :GeminiAgentModel and :GeminiAgentResume.
---@param what "modes"|"models"|"sessions"
---@param lead string
---@return string[]
function M.complete_choice(what, lead)
  if what == "sessions" then
    return starting_with(
      vim.tbl_map(function(s)
        return s.id
      end, M.sessions()),
      lead
    )
  end
  return starting_with(require("gemini_companion.agent.state").current[what], lead)
end

return M
