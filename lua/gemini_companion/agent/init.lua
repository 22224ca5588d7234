--- The agent panel's public API: `require("gemini_companion.agent")`.
---
--- The panel drives the Gemini CLI agent (over A2A or ACP, `agent.protocol`)
--- through the Python side; every call here returns at once (requests go as
--- notifications through host.lua) and the answers arrive as state updates
--- (`User GeminiAgentUpdate`) and transcript batches.
---
--- The work is done by the modules beside this one, each loaded when first used:
--- connection.lua (connecting, requests, cancel, stop), prompt.lua (sending),
--- answers.lua (answering confirmations), resume.lua (past sessions).
local M = {}

--- Open the panel in this tab and connect to the agent.
---@param opts? { enter?: boolean } enter: put the cursor in the prompt (default true)
function M.open(opts)
  -- The agent's start is asked for first: the host starts it while the windows are
  -- drawn here (issue 31 item 3).
  require("gemini_companion.agent.connection").ensure()
  require("gemini_companion.agent.panel").open(opts)
end

--- Close the panel's windows in this tab (the transcript is kept).
function M.close()
  require("gemini_companion.agent.panel").close()
end

function M.toggle()
  -- Not loaded, the panel is not open: the agent's start is asked for before the
  -- panel's modules load (7 ms, issue 31 item 3).
  local panel = package.loaded["gemini_companion.agent.panel"]
  if panel and panel.visible() then
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
  return require("gemini_companion.agent.prompt").send(text, opts)
end

--- Send without touching the windows (the prompt buffer's keys call this). The
--- `@path` and `#buffer`/`#selection`/`#diagnostics` the text names go with it
--- (agent/context.lua). While the agent starts, the prompt waits for it.
---@param text string
---@param opts? { references?: gemini_companion.AgentReference[] }
---@return boolean sent
function M.submit(text, opts)
  return require("gemini_companion.agent.prompt").submit(text, opts)
end

--- Attach an image to the next prompt (:GeminiAgentImage): the PNG, JPEG, GIF or
--- WebP file at `path`, or without one the clipboard's image (wl-paste, xclip or
--- pngpaste). It is checked when the prompt is sent (at most 5 MiB). `drop`:
--- detach the images attached so far instead.
---@param path? string
---@param opts? { drop?: boolean }
function M.image(path, opts)
  require("gemini_companion.agent.images").command(path or "", opts and opts.drop)
end

--- Split "/memory add some text" into the longest known command name and its
--- arguments ("memory add", "some text").
---@param text string without the "/"
---@return string name, string args
function M.split_command(text)
  return require("gemini_companion.agent.prompt").split_command(text)
end

--- Start a new conversation (:GeminiAgentNew) and show it; the others go on
--- (their turns, their pending requests). Over ACP it is a new session of the
--- same agent process, over A2A a task of its own.
---@return integer id
function M.new()
  local id = require("gemini_companion.agent.conversations").new()
  local connection = require("gemini_companion.agent.connection")
  if connection.opened() or require("gemini_companion.agent.panel").visible() then
    connection.ensure()
  end
  return id
end

--- Show conversation `id` in the panel (its transcript, its draft, its history).
---@param id integer
---@return boolean ok false when there is no such conversation (a message says so)
function M.switch(id)
  return require("gemini_companion.agent.conversations").switch(tonumber(id) or -1)
end

--- The conversations, newest first: `{ id, title, session_id, state, live }`
--- (title: the first prompt's first line).
---@return gemini_companion.AgentConversation[]
function M.conversations()
  return require("gemini_companion.agent.conversations").list()
end

--- Cancel the shown conversation's running prompt.
function M.cancel()
  require("gemini_companion.agent.connection").cancel()
end

--- Stop the agent (and the server the plugin started for it): every
--- conversation's turn; the conversations stay listed, not live.
function M.stop()
  require("gemini_companion.agent.connection").stop()
end

--- Answer the oldest pending confirmation the transcript shows with `option` (an
--- option id or kind; default: allow once), naming it.
---@param option? string
---@param call_id? string
function M.accept(option, call_id)
  require("gemini_companion.agent.answers").accept(option, call_id)
end

--- Reject the oldest pending confirmation the transcript shows, naming it.
---@param option? string
---@param call_id? string
function M.reject(option, call_id)
  require("gemini_companion.agent.answers").reject(option, call_id)
end

--- The shown conversation's state (`conversation`: its id): protocol, dialect,
--- task/context or session ids, state, pending confirmations and slash commands.
---@return gemini_companion.AgentState
function M.state()
  local s = vim.deepcopy(require("gemini_companion.agent.state").current)
  s.protocol = s.protocol or require("gemini_companion.agent.connection").config().protocol
  return s
end

--- The transcript's lines of conversation `id` (default: the one shown).
---@param id? integer
---@return string[]
function M.transcript(id)
  return require("gemini_companion.agent.transcript").lines(id)
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
    local panel = require("gemini_companion.agent.panel")
    vim.api.nvim_buf_set_lines(panel.prompt_buffer(), -1, -1, false, { mention })
    if require("gemini_companion.config").get().agent.panel.insert then
      panel.start_insert() -- after the mention
    end
    return
  end
  M.send(text, { references = refs })
end

--- Completion of :GeminiAgent: slash commands and their sub-commands after "/".
---@param arg_lead string
---@param cmdline string
---@return string[]
function M.complete(arg_lead, cmdline)
  return require("gemini_companion.agent.prompt").complete(arg_lead, cmdline)
end

--- :GeminiAccept/:GeminiReject: the diff of this tab answers them (with `option`:
--- one of an agent's edit's options); elsewhere (the agent panel, or any window
--- without a diff) the agent's oldest pending confirmation, with `option` when given.
---@param accept boolean
---@param option string
function M.answer_command(accept, option)
  require("gemini_companion.agent.answers").answer_command(accept, option)
end

--- Option ids :GeminiAccept (`accept`) or :GeminiReject may name here (their
--- completion): in a diff tab those of its edit (none for a CLI's diff), elsewhere
--- those of the oldest pending confirmation.
---@param accept? boolean
---@return string[]
function M.answer_options(accept)
  return require("gemini_companion.agent.answers").answer_options(accept)
end

--- The conversation history file (under `stdpath("state")`), for
--- :GeminiAgentConversations and :GeminiAgentResume.
---@return string
function M.sessions_file()
  return require("gemini_companion.agent.connection").sessions_file()
end

--- Past ACP sessions of the current directory, most recent first, but the one
--- open in the panel. None over A2A.
---@return gemini_companion.AgentHistoryRecord[]
function M.sessions()
  return require("gemini_companion.agent.resume").sessions()
end

--- Load a past session into the agent (ACP `session/load`): its conversation is
--- replayed into the transcript and the next prompt continues it. Without an id,
--- choose one with `vim.ui.select`.
---@param session_id? string
function M.resume(session_id)
  require("gemini_companion.agent.resume").resume(session_id)
end

--- Switch the session's mode (ACP `session/set_mode`: default, autoEdit, yolo, plan).
---@param mode string
function M.set_mode(mode)
  require("gemini_companion.agent.connection").request("mode", { mode = mode })
end

--- Switch the session's model (what the agent offers, `state().models`).
---@param model string
function M.set_model(model)
  require("gemini_companion.agent.connection").request("model", { model = model })
end

--- Completion of :GeminiAgentMode, :GeminiAgentModel and :GeminiAgentResume.
---@param what "modes"|"models"|"sessions"
---@param lead string
---@return string[]
function M.complete_choice(what, lead)
  return require("gemini_companion.agent.resume").complete_choice(what, lead)
end

--- For tests and :checkhealth: forget the session (the Python side stopped it).
function M._reset()
  require("gemini_companion.agent.connection").reset()
end

return M
