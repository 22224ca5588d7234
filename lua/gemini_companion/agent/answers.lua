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

local REJECTS = { reject_once = true, reject_always = true }

---@param option gemini_companion.AgentOption
---@return string
local function hint(option)
  return ":GeminiAccept " .. option.id
end

--- The option widens the answer beyond this one request (agent/consent.py's `always`).
---@param option gemini_companion.AgentOption
---@return boolean
local function always(option)
  return option.kind == "allow_always"
    or ((option.kind or "") == "" and (option.id .. " " .. (option.name or "")):lower():find("always", 1, true) ~= nil)
end

--- The option an accept of `pending` names (`wanted`: an id or a kind), or nil.
---@param pending gemini_companion.AgentPending
---@param wanted string
---@return gemini_companion.AgentOption?
local function named(pending, wanted)
  return vim.iter(pending.options or {}):find(function(o)
    return o.id == wanted or o.kind == wanted
  end)
end

--- Why an accept without an option does not answer `pending` (agent/consent.py
--- says the same): it answers "allow once" only, of a request shown whole.
---@param pending gemini_companion.AgentPending
---@return string?
function M.bare_accept_refusal(pending)
  local title = vim.fn.strcharpart(tostring(pending.title or pending.id):match("^[^\n]*"), 0, 60)
  if pending.hidden then
    return ("nothing answered: %s is longer than the panel shows (%d characters not shown)."):format(
      title,
      pending.hidden
    ) .. " Read it whole in require('gemini_companion.agent').state().pending, then name an option" .. " to accept it, or :GeminiReject"
  end
  local allows = {}
  for _, o in ipairs(pending.options or {}) do
    if o.kind == "allow_once" then
      return nil
    end
    if not REJECTS[o.kind] then
      allows[#allows + 1] = o
    end
  end
  local offers
  if #allows == 0 then
    offers = "this agent offers no way to accept it: :GeminiReject"
  elseif vim.iter(allows):all(function(o)
    return o.kind == "allow_always"
  end) then
    offers = "this agent offers only 'always': " .. table.concat(vim.tbl_map(hint, allows), ", ")
  else
    offers = "this agent offers no 'allow once'; name one: "
      .. table.concat(
        vim.tbl_map(function(o)
          return ("%s (%s)"):format(hint(o), o.name)
        end, allows),
        ", "
      )
  end
  return ("nothing answered for %s: %s"):format(title, offers)
end

--- What an accept of `pending` with `option` says it sends: "always" when it widens.
---@param pending gemini_companion.AgentPending
---@param option? string
---@return string
local function accepting(pending, option)
  local chosen = option and named(pending, option)
  if chosen and always(chosen) then
    return chosen.kind == "allow_always" and " (always)" or (" (always: %s)"):format(chosen.id)
  end
  return option and (" (" .. option .. ")") or ""
end

--- Whether an accept of `pending` with `option` widens the answer.
---@param pending gemini_companion.AgentPending
---@param option? string
---@return boolean
local function widens(pending, option)
  local chosen = option and named(pending, option)
  return chosen ~= nil and always(chosen)
end

--- The first line of `text`, at most 60 characters.
---@param text string
---@return string
local function short(text)
  local line = tostring(text):match("^[^\n]*")
  return vim.fn.strchars(line) > 60 and (vim.fn.strcharpart(line, 0, 59) .. "…") or line
end

---@param action "answer"|"reject"
---@param option? string
---@param call_id? string
local function answer_pending(action, option, call_id)
  local pending
  if not call_id then
    pending = oldest_shown()
    if not pending then
      local waiting = #require("gemini_companion.agent.state").current.pending
      notify(
        waiting > 0 and "what the agent asks is not shown in the transcript yet: nothing answered"
          or "nothing is waiting for an answer",
        vim.log.levels.WARN
      )
      return
    end
  else
    pending = vim.iter(require("gemini_companion.agent.state").current.pending):find(function(p)
      return p.id == call_id
    end)
  end
  if action == "answer" and pending and not option then
    local why = M.bare_accept_refusal(pending)
    if why then
      notify(why, vim.log.levels.WARN)
      return
    end
  end
  if pending and (not call_id or (action == "answer" and widens(pending, option))) then
    call_id = pending.id
    local title = short(pending.title or call_id)
    local suffix = action == "answer" and accepting(pending, option) or (option and (" (" .. option .. ")") or "")
    local command = pending.command
    if command and not tostring(pending.title):find(command, 1, true) then
      -- Named as it runs too: its title says something else (agent/disclose.py).
      suffix = (" ($ %s)%s"):format(short(command), suffix)
    end
    notify(("%s %q%s"):format(action == "answer" and "accepting" or "rejecting", title, suffix))
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
--- option id or kind; default: allow once, and nothing when the agent offers no
--- "allow once" or the request is not shown whole), naming it.
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
    -- diff.accept refuses a bare accept the agent's edit does not allow (M.diff_refusal)
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
      if accept and always(o) then
        notify(("accepting %q%s"):format(view.file_path or pending.title, accepting(pending, o.id)))
      end
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

--- Why an accept without an option in diff view `view` does not answer the
--- agent's edit it shows (`bare_accept_refusal`), or nil (a CLI's diff, an
--- accept the edit allows, or an edit not in the state yet: Python checks too).
---@param view gemini_companion.DiffView
---@return string?
function M.diff_refusal(view)
  local pending = pending_of(view)
  return pending and M.bare_accept_refusal(pending)
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
