--- Sending to the agent: a prompt (with the context its text names) or a slash
--- command, and the completion of :GeminiAgent's slash commands.
local M = {}

--- Send a prompt to the agent (opening the panel without entering it). Text that
--- starts with "/" runs a slash command.
---@param text string
---@param opts? { references?: gemini_companion.AgentReference[] }
---@return boolean sent false when the agent is busy (the text is not lost: it stays where it was)
function M.send(text, opts)
  if type(text) ~= "string" or vim.trim(text) == "" then
    require("gemini_companion.agent.connection").notify("nothing to send", vim.log.levels.WARN)
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
  local request = require("gemini_companion.agent.connection").request
  local s = state.current.state
  if s == "working" or s == "waiting" then
    -- One line, never a "Press ENTER": this comes from the prompt's keys too.
    require("gemini_companion.agent.messages").post(
      "the agent is busy: wait, answer, or :GeminiAgentCancel (text kept)",
      vim.log.levels.WARN
    )
    return false
  end
  local conversations = require("gemini_companion.agent.conversations")
  conversations.sent(conversations.current(), text)
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
  local images = require("gemini_companion.agent.images").take()
  request("prompt", { text = text, references = #refs > 0 and refs or nil, images = #images > 0 and images or nil })
  return true
end

--- Put `text` back in the prompt of conversation `c`, unless the user typed
--- something there since: in the prompt buffer when `c` is shown, else as its
--- draft (shown when the user switches back to it).
---@param text string
---@param c gemini_companion.AgentConversationSlot
local function give_back(text, c)
  local lines = vim.split(text, "\n", { plain = true })
  local function blank(typed)
    return #typed <= 1 and (typed[1] or "") == ""
  end
  if c ~= require("gemini_companion.agent.conversations").current() then
    if blank(c.draft or {}) then
      c.draft = lines
    end
    return
  end
  local buf = require("gemini_companion.agent.panel").prompt_buffer()
  if blank(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  end
end

--- The Python side did not send the prompt `request` (agent/attach.py, through
--- host.lua): it attaches files `outside` the workspace, each asked about here by
--- its real path (all confirmed: the same request goes again, with them confirmed
--- for this prompt only); or an attachment cannot be sent (`reason`). Refused or
--- declined, nothing is sent and the text is back in the prompt.
--- The images it attached wait for the next prompt again, but the one refused
--- (the Python side left it out of `request`) or declined.
---@param request { text: string, conversation?: integer, references?: table[], images?: gemini_companion.AgentImage[], confirmed?: string[] }
---@param outside string[] real paths
---@param reason string "" when only `outside` needs an answer
function M._attach_refused(request, outside, reason)
  local messages = require("gemini_companion.agent.messages")
  -- The conversation it was sent from (renumbered since if its agent stopped),
  -- whichever is shown now.
  local conversations = require("gemini_companion.agent.conversations")
  local c = conversations.get(request.conversation)
    or conversations.retired(request.conversation or -1)
    or conversations.current()
  local function not_sent(why, level, declined)
    give_back(request.text, c)
    require("gemini_companion.agent.images").give_back(
      vim.tbl_filter(function(image)
        return not declined or not image.path or (vim.uv.fs_realpath(image.path) or image.path) ~= declined
      end, request.images or {}),
      c
    )
    messages.post(why .. ": nothing sent (your text is back in the prompt)", level)
  end
  if reason ~= "" or #outside == 0 then
    not_sent(reason ~= "" and reason or "cannot attach the context", vim.log.levels.ERROR)
    return
  end
  local confirmed = vim.list_extend({}, request.confirmed or {})
  local function ask(i)
    if i > #outside then
      request.confirmed = confirmed
      require("gemini_companion.agent.connection").request("prompt", request)
      return
    end
    local path = outside[i]
    vim.ui.select({ "Attach it to this prompt", "Do not send the prompt" }, {
      prompt = ("@%s is outside the workspace: attach it?"):format(path),
      kind = "gemini_companion_attach",
    }, function(_, choice)
      if choice == 1 then
        confirmed[#confirmed + 1] = path
        ask(i + 1)
      else
        not_sent(("@%s is outside the workspace"):format(path), vim.log.levels.WARN, path)
      end
    end)
  end
  vim.schedule(function() -- out of the RPC message: the default select waits for keys
    ask(1)
  end)
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

return M
