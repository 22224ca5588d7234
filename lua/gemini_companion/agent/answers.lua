--- Answering the agent's confirmations: accept or reject the oldest the
--- transcript shows (naming it), or the one of the diff tab the cursor is in
--- (:GeminiAccept/:GeminiReject [option]), and the options those may name.
local M = {}

---@param message string
---@param level? integer
local function notify(message, level)
  require("gemini_companion.agent.connection").notify(message, level)
end

---@param action string
---@param args? table
local function request(action, args)
  require("gemini_companion.agent.connection").request(action, args)
end

--- The confirmation an answer without an id is for: the oldest whose lines the
--- transcript shows in full (one that could not be drawn is never answered unseen).
---@return gemini_companion.AgentPending?
local function oldest_shown()
  local pending = require("gemini_companion.agent.state").current.pending
  return require("gemini_companion.agent.transcript").first_shown(pending)
end

---@param action "answer"|"reject"
---@param option? string
---@param call_id? string
local function answer_pending(action, option, call_id)
  if not call_id then
    local pending = oldest_shown()
    if not pending then
      local waiting = #require("gemini_companion.agent.state").current.pending
      notify(
        waiting > 0 and "what the agent asks is not shown in the transcript yet: nothing answered"
          or "nothing is waiting for an answer",
        vim.log.levels.WARN
      )
      return
    end
    call_id = pending.id
    local title = tostring(pending.title or call_id):match("^[^\n]*")
    if vim.fn.strchars(title) > 60 then
      title = vim.fn.strcharpart(title, 0, 59) .. "…"
    end
    notify(
      ("%s %q%s"):format(
        action == "answer" and "accepting" or "rejecting",
        title,
        option and (" (" .. option .. ")") or ""
      )
    )
  end
  if action == "answer" and package.loaded["gemini_companion.diff"] then
    -- An edit open in its diff tab is accepted there: with the user's edits to it.
    for _, view in ipairs(require("gemini_companion.diff").views()) do
      if view.session == "agent" and view.call_id == call_id and view.state == "open" then
        require("gemini_companion.diff").accept(view.id, option)
        return
      end
    end
  end
  request(action, { option = option, call_id = call_id })
end

--- Answer the oldest pending confirmation the transcript shows with `option` (an
--- option id or kind; default: allow once), naming it.
---@param option? string
---@param call_id? string
function M.accept(option, call_id)
  answer_pending("answer", option, call_id)
end

--- Reject the oldest pending confirmation the transcript shows, naming it.
---@param option? string
---@param call_id? string
function M.reject(option, call_id)
  answer_pending("reject", option, call_id)
end

--- The diff view of the current tab, if any.
---@return gemini_companion.DiffView?
local function diff_of_tab()
  local diff = package.loaded["gemini_companion.diff"]
  local tab = vim.api.nvim_get_current_tabpage()
  return diff and vim.iter(diff.views()):find(function(v)
    return v.tab == tab
  end)
end

local REJECTS = { reject_once = true, reject_always = true }

--- The options of a pending confirmation that :GeminiAccept (`accept`) or
--- :GeminiReject may name: reject options are :GeminiReject's, the others
--- :GeminiAccept's.
---@param pending gemini_companion.AgentPending
---@param accept boolean
---@return gemini_companion.AgentOption[]
local function options_for(pending, accept)
  return vim.tbl_filter(function(o)
    return (REJECTS[o.kind] == nil) == accept
  end, pending.options or {})
end

--- The pending confirmation a diff view shows (an agent panel's edit), if any.
---@param view gemini_companion.DiffView
---@return gemini_companion.AgentPending?
local function pending_of(view)
  if view.session ~= "agent" or not view.call_id then
    return nil
  end
  return vim.iter(require("gemini_companion.agent.state").current.pending):find(function(p)
    return p.id == view.call_id
  end)
end

--- :GeminiAccept/:GeminiReject [option] in a diff tab. An agent's edit takes one
--- of the options its confirmation offers (answered with the proposal, your edits
--- included); a CLI's diff takes none. A bad option is an error and changes nothing.
---@param view gemini_companion.DiffView
---@param accept boolean
---@param option string
local function answer_diff(view, accept, option)
  local diff = require("gemini_companion.diff")
  local answer = accept and diff.accept or diff.reject
  if option == "" or view.session ~= "agent" then
    answer(view.id, option ~= "" and option or nil) -- diff.lua refuses an option for a CLI's diff
    return
  end
  local pending = pending_of(view)
  if not pending then
    notify("the agent is no longer waiting for an answer to this edit", vim.log.levels.ERROR)
    return
  end
  local choices = options_for(pending, accept)
  for _, o in ipairs(choices) do
    if o.id == option or o.kind == option then
      answer(view.id, o.id)
      return
    end
  end
  local ids = table.concat(
    vim.tbl_map(function(o)
      return o.id
    end, choices),
    ", "
  )
  notify(
    ("no option %q for this edit with :Gemini%s: choose one of %s"):format(
      option,
      accept and "Accept" or "Reject",
      ids ~= "" and ids or "(none)"
    ),
    vim.log.levels.ERROR
  )
end

--- :GeminiAccept/:GeminiReject: the diff of this tab answers them (with `option`:
--- one of an agent's edit's options); elsewhere (the agent panel, or any window
--- without a diff) the agent's oldest pending confirmation, with `option` when given.
---@param accept boolean
---@param option string
function M.answer_command(accept, option)
  local view = diff_of_tab()
  if view then
    answer_diff(view, accept, option)
    return
  end
  local waits = #require("gemini_companion.agent.state").current.pending > 0
  if not waits then
    if option ~= "" then
      notify("nothing is waiting for an answer", vim.log.levels.WARN)
      return
    end
    require("gemini_companion.diff")[accept and "accept" or "reject"]()
    return
  end
  M[accept and "accept" or "reject"](option ~= "" and option or nil)
end

--- Option ids :GeminiAccept (`accept`) or :GeminiReject may name here (their
--- completion): in a diff tab those of its edit (none for a CLI's diff), elsewhere
--- those of the oldest pending confirmation.
---@param accept? boolean
---@return string[]
function M.answer_options(accept)
  local view = diff_of_tab()
  local pending
  if view then
    pending = pending_of(view)
  else
    pending = oldest_shown()
  end
  if not pending then
    return {}
  end
  local options = view and options_for(pending, accept ~= false) or pending.options or {}
  return vim.tbl_map(function(o)
    return o.id
  end, options)
end

return M
