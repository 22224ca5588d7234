--- The agent panel's public API: `require("gemini_companion.agent")`.
---
--- The panel drives the Gemini CLI agent (over A2A or ACP, `agent.protocol`)
--- through the Python side; every call here returns at once (requests go as
--- notifications through host.lua) and the answers arrive as state updates
--- (`User GeminiAgentUpdate`) and transcript batches.
local M = {}

---@return gemini_companion.AgentConfig
local function config()
  return require("gemini_companion.config").get().agent
end

---@param message string
---@param level? integer
local function notify(message, level)
  vim.notify(message, level or vim.log.levels.INFO, { title = "Gemini agent" })
end

local connected = false

--- Make sure the companion runs and the agent session exists (connecting or
--- starting the agent in the background).
---@return boolean
local function ensure()
  if not require("gemini_companion.state").current.running then
    require("gemini_companion").start({ quiet = true })
  end
  local host = require("gemini_companion.host")
  if not host.channel then
    return false
  end
  if not connected or require("gemini_companion.agent.state").current.state == "stopped" then
    local cfg = config()
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

---@param action string
---@param args? table
local function request(action, args)
  if ensure() then
    require("gemini_companion.host").agent(action, args or vim.empty_dict())
  end
end

--- Open the panel in this tab and connect to the agent.
---@param opts? { enter?: boolean } enter: put the cursor in the prompt (default true)
function M.open(opts)
  require("gemini_companion.agent.panel").open(opts)
  ensure()
end

--- Close the panel's windows in this tab (the transcript is kept).
function M.close()
  require("gemini_companion.agent.panel").close()
end

function M.toggle()
  local panel = require("gemini_companion.agent.panel")
  if panel.visible() then
    panel.close()
  else
    M.open()
  end
end

--- Send a prompt to the agent (opening the panel without entering it). Text that
--- starts with "/" runs a slash command.
---@param text string
---@param opts? { references?: gemini_companion.AgentReference[] }
---@return boolean sent false when the agent is busy (the text is not lost: it stays where it was)
function M.send(text, opts)
  if type(text) ~= "string" or vim.trim(text) == "" then
    notify("nothing to send", vim.log.levels.WARN)
    return false
  end
  local panel = require("gemini_companion.agent.panel")
  if not panel.visible() then
    panel.open({ enter = false })
  end
  return M.submit(text, opts)
end

--- Send without touching the windows (the prompt buffer's keys call this). The
--- `@path` and `#buffer`/`#selection`/`#diagnostics` the text names go with it
--- (agent/context.lua). While the agent starts, the prompt waits for it.
---@param text string
---@param opts? { references?: gemini_companion.AgentReference[] }
---@return boolean sent
function M.submit(text, opts)
  local state = require("gemini_companion.agent.state")
  local s = state.current.state
  if s == "working" or s == "waiting" then
    -- One line, never a "Press ENTER": this comes from the prompt's keys too.
    require("gemini_companion.agent.messages").post(
      "the agent is busy: wait, answer, or :GeminiAgentCancel (text kept)",
      vim.log.levels.WARN
    )
    return false
  end
  local command = text:match("^/(.*)$")
  if command then
    local name, args = M.split_command(vim.trim(command))
    request("command", { name = name, args = args })
    return true
  end
  local refs, err = require("gemini_companion.agent.context").references(text)
  if not refs then
    require("gemini_companion.agent.messages").post(err or "cannot attach the context", vim.log.levels.ERROR)
    return false
  end
  for _, ref in ipairs(opts and opts.references or {}) do
    table.insert(refs, 1, ref)
  end
  request("prompt", { text = text, references = #refs > 0 and refs or nil })
  return true
end

--- Split "/memory add some text" into the longest known command name and its
--- arguments ("memory add", "some text").
---@param text string without the "/"
---@return string name, string args
function M.split_command(text)
  local words = vim.split(text, "%s+", { trimempty = true })
  local known = {}
  for _, name in ipairs(require("gemini_companion.agent.state").current.commands or {}) do
    known[name] = true
  end
  for n = #words, 1, -1 do
    local name = table.concat(words, " ", 1, n)
    if known[name] then
      return name, table.concat(words, " ", n + 1)
    end
  end
  return words[1] or "", table.concat(words, " ", 2)
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

--- The agent's state: protocol, dialect, task/context or session ids, state,
--- pending confirmations and slash commands.
---@return gemini_companion.AgentState
function M.state()
  local s = vim.deepcopy(require("gemini_companion.agent.state").current)
  s.protocol = s.protocol or config().protocol
  return s
end

--- The transcript's lines.
---@return string[]
function M.transcript()
  return require("gemini_companion.agent.transcript").lines()
end

--- :GeminiAgent [text] (with a range: the lines go with the prompt, embedded).
---@param args { args: string, range: integer, line1: integer, line2: integer }
function M.command(args)
  local text = args.args or ""
  local refs
  if args.range > 0 then
    local path = vim.api.nvim_buf_get_name(0)
    if path ~= "" then
      local lines = vim.api.nvim_buf_get_lines(0, args.line1 - 1, args.line2, false)
      refs = {
        {
          path = vim.fs.normalize(vim.fn.fnamemodify(path, ":p")),
          start_line = args.line1,
          end_line = args.line2,
          text = table.concat(lines, "\n"),
        },
      }
    end
  end
  if text == "" and not refs then
    M.toggle()
    return
  end
  if text == "" then
    -- A range alone: put the reference in the prompt for the user to complete (the
    -- lines are read again when it is sent).
    local ref = refs[1]
    M.open()
    local mention = ("@%s#L%d-%d "):format(vim.fn.fnamemodify(ref.path, ":."), ref.start_line, ref.end_line)
    vim.api.nvim_buf_set_lines(require("gemini_companion.agent.panel").prompt_buffer(), -1, -1, false, { mention })
    return
  end
  M.send(text, { references = refs })
end

--- Completion of :GeminiAgent: slash commands and their sub-commands after "/".
---@param _ string
---@param cmdline string
---@return string[]
function M.complete(_, cmdline)
  local typed = cmdline:match("^%S*GeminiAgent!?%s+(.*)$") or cmdline:match("^.-GeminiAgent!?%s+(.*)$")
  if not typed or typed:sub(1, 1) ~= "/" then
    return {}
  end
  typed = typed:sub(2)
  local words = vim.split(typed, " ", { plain = true })
  local done = table.concat(words, " ", 1, #words - 1)
  local lead = words[#words]
  local out, seen = {}, {}
  for _, name in ipairs(require("gemini_companion.agent.state").current.commands or {}) do
    local parts = vim.split(name, " ", { plain = true })
    if #parts == #words and table.concat(parts, " ", 1, #parts - 1) == done then
      local word = parts[#parts]
      if vim.startswith(word, lead) and not seen[word] then
        seen[word] = true
        out[#out + 1] = #words == 1 and ("/" .. word) or word
      end
    end
  end
  table.sort(out)
  return out
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

--- Where the ACP transport records the sessions it started (agent/acp/sessions.py),
--- for :GeminiAgentResume.
---@return string
function M.sessions_file()
  return vim.fs.joinpath(vim.fn.stdpath("state"), "gemini-companion", "acp-sessions.json")
end

---@class gemini_companion.AgentSession
---@field id string
---@field cwd string
---@field title string The first prompt
---@field created_at number
---@field updated_at number

--- Past ACP sessions of the current directory, most recent first, but the one
--- open in the panel (read from the plugin's own record: no round trip to the
--- agent). None over A2A: the A2A server cannot load a conversation.
---@return gemini_companion.AgentSession[]
function M.sessions()
  if M.state().protocol ~= "acp" then
    return {}
  end
  local file = io.open(M.sessions_file(), "r")
  if not file then
    return {}
  end
  local text = file:read("*a")
  file:close()
  local ok, records = pcall(vim.json.decode, text)
  if not ok or type(records) ~= "table" then
    return {}
  end
  local cwd = vim.fn.getcwd()
  local open = require("gemini_companion.agent.state").current.session_id
  local found = vim.tbl_filter(function(r)
    -- The conversation open in the panel is not offered: loading it changes nothing.
    return type(r) == "table" and r.cwd == cwd and type(r.id) == "string" and r.id ~= open
  end, records)
  table.sort(found, function(a, b)
    return (a.updated_at or 0) > (b.updated_at or 0)
  end)
  return found
end

--- Load a past session into the agent (ACP `session/load`): its conversation is
--- replayed into the transcript and the next prompt continues it. Without an id,
--- choose one with `vim.ui.select`.
---@param session_id? string
function M.resume(session_id)
  if M.state().protocol ~= "acp" then
    notify('resuming a conversation needs agent.protocol = "acp": the A2A server cannot load one', vim.log.levels.WARN)
    return
  end
  if session_id and session_id ~= "" then
    local panel = require("gemini_companion.agent.panel")
    if not panel.visible() then
      panel.open({ enter = false })
    end
    request("resume", { session_id = session_id })
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

--- Switch the session's mode (ACP `session/set_mode`: default, autoEdit, yolo, plan).
---@param mode string
function M.set_mode(mode)
  request("mode", { mode = mode })
end

--- Switch the session's model (what the agent offers, `state().models`).
---@param model string
function M.set_model(model)
  request("model", { model = model })
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

--- For tests and :checkhealth: forget the session (the Python side stopped it).
function M._reset()
  connected = false
end

return M
