--- The panel's conversations (`:GeminiAgentNew`): each has an id (unique in the
--- Neovim session: the Python side's conversation takes it, and every batch it
--- sends names it), its transcript buffer (transcript.lua), its prompt history,
--- the draft left in the prompt when the user switched away, and its last state.
--- One is shown at a time; the others go on in the background.
---
--- A conversation stopped (`:GeminiAgentStop`) and then prompted again starts
--- the agent in a new session: it takes a new id (the old one's late states are
--- then dropped), in the same transcript.
local M = {}

---@class gemini_companion.AgentConversationSlot
---@field id integer
---@field title string the first prompt's first line
---@field history string[] sent prompts, oldest first
---@field draft? string[] the prompt's lines when the user switched away
---@field state gemini_companion.AgentState its last state
---@field opened boolean its Python session was asked for
---@field started boolean a state other than "stopped" came since it was opened
---@field retired boolean stopped by :GeminiAgentStop: a new id before it is opened again
---@field seq integer when it was made (newest first in the list)
---@field used_at integer when it was last prompted (or made), os.time()
---@field renamed boolean the user named it (:GeminiAgentRename): its first prompt does not
---@field recorded? string the session or task the history has its name for
---@field loading? { id: string, title: string } the past conversation being loaded into it

---@type table<integer, gemini_companion.AgentConversationSlot>
local by_id = {}
---@type table<integer, gemini_companion.AgentConversationSlot> ids a conversation
--- had before it was renumbered -> the conversation
local old_ids = {}
local next_id, seq = 1, 0
---@type integer?
local current_id = nil

---@param id integer
---@return gemini_companion.AgentState
local function stopped(id)
  return { state = "stopped", pending = {}, commands = {}, conversation = id }
end

---@return gemini_companion.AgentConversationSlot
local function make()
  local id = next_id
  next_id = next_id + 1
  seq = seq + 1
  local c = {
    id = id,
    title = "",
    history = {},
    state = stopped(id),
    opened = false,
    started = false,
    retired = false,
    seq = seq,
    used_at = os.time(),
    renamed = false,
  }
  by_id[id] = c
  return c
end

--- The conversation shown (made on first use).
---@return gemini_companion.AgentConversationSlot
function M.current()
  local c = current_id and by_id[current_id]
  if not c then
    c = make()
    current_id = c.id
  end
  return c
end

--- The conversation `id`, or nil.
---@param id integer?
---@return gemini_companion.AgentConversationSlot?
function M.get(id)
  return id and by_id[id] or nil
end

--- The conversation that had id `id` before it was renumbered (its agent session
--- stopped), or nil: what that session still sends while it ends ("The agent
--- stopped.") is drawn there, its state never.
---@param id integer
---@return gemini_companion.AgentConversationSlot?
function M.retired(id)
  return old_ids[id]
end

--- Give `c` a new id (its agent was stopped; a new session starts): what the old
--- id's session still sends is dropped from now on.
---@param c gemini_companion.AgentConversationSlot
function M.renumber(c)
  old_ids[c.id] = c
  by_id[c.id] = nil
  local was_current = current_id == c.id
  local old = c.id
  c.id = next_id
  next_id = next_id + 1
  by_id[c.id] = c
  c.started, c.retired, c.opened = false, false, false
  c.state = vim.tbl_extend("force", c.state, { conversation = c.id })
  if was_current then
    current_id = c.id
  end
  require("gemini_companion.agent.transcript")._renumbered(old, c.id)
end

--- Every conversation, newest first.
---@return gemini_companion.AgentConversationSlot[]
function M.all()
  local out = {}
  for _, c in pairs(by_id) do
    out[#out + 1] = c
  end
  table.sort(out, function(a, b)
    return a.seq > b.seq
  end)
  return out
end

---@class gemini_companion.AgentConversation
---@field id integer
---@field title string The first prompt's first line ("" before it)
---@field session_id? string ACP: its session; A2A: its task
---@field state string Its state (as `state().state`)
---@field live boolean Its agent session runs (not stopped)

--- The conversations for the API, newest first.
---@return gemini_companion.AgentConversation[]
function M.list()
  local out = {}
  for _, c in ipairs(M.all()) do
    out[#out + 1] = {
      id = c.id,
      title = c.title,
      session_id = c.state.session_id or c.state.task_id,
      state = c.state.state,
      live = c.state.state ~= "stopped" and not c.retired,
    }
  end
  return out
end

--- A new conversation, shown at once (the current one goes on).
---@return integer id
function M.new()
  if not (current_id and by_id[current_id]) then
    return M.current().id -- the first conversation
  end
  local c = make()
  M.switch(c.id)
  return c.id
end

--- Show conversation `id` in the panel: its transcript in the panel's windows,
--- its draft in the prompt.
---@param id integer
---@return boolean ok false (and a message) when there is no such conversation
function M.switch(id)
  local c = by_id[id]
  if not c then
    require("gemini_companion.agent.messages").post(
      ("Gemini agent: no conversation #%s"):format(tostring(id)),
      vim.log.levels.ERROR
    )
    return false
  end
  local from = M.current()
  if from.id == id then
    return true
  end
  local panel = require("gemini_companion.agent.panel")
  from.draft = panel.take_draft()
  current_id = id
  panel.show_conversation(c.draft)
  c.draft = nil
  require("gemini_companion.agent.state")._shown(c.state)
  return true
end

--- The first prompt names the conversation.
---@param c gemini_companion.AgentConversationSlot
---@param text string
function M.sent(c, text)
  c.used_at = os.time()
  if c.title == "" then
    c.title = vim.split(vim.trim(text), "\n", { plain = true })[1] or ""
  end
  if c.state.protocol == "a2a" and c.state.task_id then
    require("gemini_companion.agent.history").used_task(c.state.task_id, c.title)
  end
end

--- Name conversation `c` `title` (:GeminiAgentRename), in the history too once it
--- has a session (or task).
---@param c gemini_companion.AgentConversationSlot
---@param title string
function M.rename(c, title)
  c.title, c.renamed = title, true
  c.recorded = nil
  M.observed(c)
end

--- A state of `c` came (state.lua): a past conversation loaded into it gives it its
--- title; the history learns the name the user gave it, and A2A tasks (the Python
--- side records ACP sessions as the agent makes them).
---@param c gemini_companion.AgentConversationSlot
function M.observed(c)
  local id = c.state.session_id or c.state.task_id
  if c.loading and id == c.loading.id then
    c.title, c.loading = c.title ~= "" and c.title or c.loading.title, nil
  end
  if not id or id == c.recorded then
    return
  end
  local history = require("gemini_companion.agent.history")
  if c.state.protocol == "a2a" and c.title ~= "" then
    c.recorded = history.used_task(id, c.title) and id or nil
  end
  if c.renamed then
    c.recorded = history.rename(id, c.title, { protocol = c.state.protocol }) and id or nil
  end
end

--- Conversations other than the shown one that wait for the user, oldest first.
---@return gemini_companion.AgentConversationSlot[]
function M.waiting_others()
  local out = {}
  for _, c in pairs(by_id) do
    if c.id ~= current_id and c.state.state == "waiting" then
      out[#out + 1] = c
    end
  end
  table.sort(out, function(a, b)
    return a.seq < b.seq
  end)
  return out
end

--- Stopped (`:GeminiAgentStop`): every conversation is over; a new prompt starts
--- a new session in it.
function M.stop_all()
  for _, c in pairs(by_id) do
    if c.opened then
      c.retired = true
    end
    c.state = vim.tbl_extend("force", c.state, { state = "stopped", pending = {} })
    c.state.detail = nil
  end
end

--- The Python side forgot its sessions (tests, :checkhealth).
function M.forget()
  for _, c in pairs(by_id) do
    c.opened = false
  end
end

return M
