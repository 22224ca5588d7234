--- :GeminiAgentConversations: the workspace's conversations, live (this Neovim's,
--- conversations.lua) and past (the history file, history.lua), through
--- `vim.ui.select` (so the user's picker shows them). Choosing a live one shows
--- it; choosing a past ACP one loads it (`session/load`) into a new conversation
--- of its own. `rename` and `delete` pick one the same way, then rename it (a title
--- asked with `vim.ui.input`) or forget it.
local M = {}

---@class gemini_companion.AgentConversationEntry
---@field title string
---@field used_at number when it was last used (os.time())
---@field protocol string "acp" or "a2a"
---@field live? integer the conversation's id in the panel (nil: a past one)
---@field session_id? string ACP: its session; A2A: its task
---@field unloadable? string why it cannot be loaded (nil: it can)

---@param message string
---@param level? integer
local function notify(message, level)
  require("gemini_companion.agent.connection").notify(message, level)
end

---@return string
local function protocol()
  return require("gemini_companion.agent.connection").protocol()
end

--- Why the past conversation `r` cannot be loaded now, or nil.
---@param r gemini_companion.AgentHistoryRecord
---@return string?
local function why_not(r)
  if r.protocol == "a2a" then
    return "an A2A task cannot be loaded again: the A2A server keeps its tasks only while it runs"
  end
  if protocol() ~= "acp" then
    return 'loading it needs agent.protocol = "acp"'
  end
  if r.error ~= "" then
    return "its last load failed: " .. r.error
  end
end

--- The workspace's conversations: the live ones (newest first), then the past ones
--- (most recently used first). A past one without a prompt is left out: there is
--- nothing in it to find again.
---@return gemini_companion.AgentConversationEntry[]
function M.entries()
  local out, shown = {}, {}
  for _, c in ipairs(require("gemini_companion.agent.conversations").all()) do
    local id = c.state.session_id or c.state.task_id
    if id then
      shown[id] = true
    end
    out[#out + 1] = {
      title = c.title,
      used_at = c.used_at,
      protocol = c.state.protocol or protocol(),
      live = c.id,
      session_id = id,
    }
  end
  for _, r in ipairs(require("gemini_companion.agent.history").workspace()) do
    if not shown[r.id] and (r.title ~= "" or r.error ~= "") then
      out[#out + 1] = {
        title = r.title,
        used_at = r.updated_at,
        protocol = r.protocol,
        session_id = r.id,
        unloadable = why_not(r),
      }
    end
  end
  return out
end

--- How entry `e` reads in the picker: a mark ("*" the shown conversation, "+" a live
--- one, "!" one that cannot be loaded), its title, when it was last used, its
--- protocol, and why it cannot be loaded.
---@param e gemini_companion.AgentConversationEntry
---@return string
function M.label(e)
  local mark = " "
  if e.live then
    mark = e.live == require("gemini_companion.agent.conversations").current().id and "*" or "+"
  elseif e.unloadable then
    mark = "!"
  end
  local title = e.title ~= "" and e.title or "(no prompt yet)"
  local when = e.used_at > 0 and os.date("%Y-%m-%d %H:%M", math.floor(e.used_at)) or "----------------"
  local line = ("%s %s  %s  %s"):format(mark, when, e.protocol, title)
  if e.unloadable then
    line = line .. "  [cannot load: " .. e.unloadable .. "]"
  end
  return line
end

--- Load the past ACP conversation `e` into a conversation of its own: the shown one
--- when nothing was said in it yet, else a new one. It takes `e`'s title once the
--- agent has loaded it (conversations.observed); a load that fails leaves it
--- empty, saying why, and marks `e` in the history.
---@param e gemini_companion.AgentConversationEntry
local function load(e)
  local conversations = require("gemini_companion.agent.conversations")
  local panel = require("gemini_companion.agent.panel")
  if not panel.visible() then
    panel.open({ enter = false })
  end
  local c = conversations.current()
  if c.title ~= "" or #c.history > 0 or c.loading then
    c = conversations.get(require("gemini_companion.agent").new()) or c
  end
  c.loading = { id = e.session_id, title = e.title }
  require("gemini_companion.agent.resume").resume(e.session_id)
end

--- Choose entry `e`: show it (live) or load it (past).
---@param e gemini_companion.AgentConversationEntry
function M.choose(e)
  if e.live then
    require("gemini_companion.agent.conversations").switch(e.live)
  elseif e.unloadable and e.protocol == "a2a" or e.unloadable and protocol() ~= "acp" then
    notify(("cannot load %q: %s"):format(e.title, e.unloadable), vim.log.levels.WARN)
  else
    load(e) -- a load that failed before is tried again: the reason may be gone
  end
end

---@param prompt string
---@param entries gemini_companion.AgentConversationEntry[]
---@param then_ fun(e: gemini_companion.AgentConversationEntry)
local function pick(prompt, entries, then_)
  if #entries == 0 then
    notify("no conversations in " .. vim.fn.getcwd(), vim.log.levels.WARN)
    return
  end
  vim.ui.select(entries, { prompt = prompt, format_item = M.label, kind = "gemini_companion.conversation" }, function(e)
    if e then
      then_(e)
    end
  end)
end

--- Rename entry `e` `title`: the live conversation and its history record.
---@param e gemini_companion.AgentConversationEntry
---@param title string
function M.rename_entry(e, title)
  title = vim.trim(title)
  if title == "" or title:find("\n", 1, true) then
    notify("a conversation's title is one line of text", vim.log.levels.ERROR)
    return
  end
  local conversations = require("gemini_companion.agent.conversations")
  local c = e.live and conversations.get(e.live)
  if c then
    conversations.rename(c, title)
  elseif e.session_id then
    require("gemini_companion.agent.history").rename(e.session_id, title, { protocol = e.protocol })
  end
end

--- :GeminiAgentRename {title}: name the shown conversation.
---@param title string
function M.rename_shown(title)
  local c = require("gemini_companion.agent.conversations").current()
  M.rename_entry({ title = c.title, used_at = c.used_at, protocol = protocol(), live = c.id }, title)
end

--- :GeminiAgentConversations [rename|delete].
---@param action string "", "rename" or "delete"
function M.command(action)
  if action == "" then
    pick("Gemini conversations", M.entries(), M.choose)
  elseif action == "rename" then
    pick("Rename which conversation?", M.entries(), function(e)
      vim.ui.input({ prompt = "New title: ", default = e.title }, function(title)
        if title then
          M.rename_entry(e, title)
        end
      end)
    end)
  elseif action == "delete" then
    local entries = vim.tbl_filter(function(e)
      return e.session_id ~= nil
    end, M.entries())
    pick("Delete which conversation from the history?", entries, function(e)
      if
        require("gemini_companion.agent.history").delete(e.session_id --[[@as string]])
      then
        notify(("deleted %q from the history"):format(e.title))
      end
    end)
  else
    notify(("unknown :GeminiAgentConversations action %q: none, rename or delete"):format(action), vim.log.levels.ERROR)
  end
end

return M
