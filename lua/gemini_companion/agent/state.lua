--- The agent's state as last published by the Python side (agent/session.py), and
--- the `User GeminiAgentUpdate` event. Read by the API, the panel, completion and
--- the statusline without a round trip to Python. `current` is the shown
--- conversation's; each conversation keeps its own (conversations.lua).
local M = {}

---@type gemini_companion.AgentState
M.current = { state = "stopped", pending = {}, commands = {} }

---@param state gemini_companion.AgentState
local function announce(state)
  M.set_status_lines()
  vim.api.nvim_exec_autocmds("User", { pattern = "GeminiAgentUpdate", modeline = false, data = state })
  vim.cmd.redrawstatus({ bang = true })
end

--- Called by transcript.lua for each state the Python side publishes (it sends one
--- only when something changed) for conversation `c` (default: the shown one).
---@param state gemini_companion.AgentState
---@param c? gemini_companion.AgentConversationSlot
function M._update(state, c)
  local conversations = require("gemini_companion.agent.conversations")
  local shown = conversations.current()
  c = c or shown
  state.pending = state.pending or {}
  state.commands = state.commands or {}
  state.conversation = state.conversation or c.id
  c.state = state
  conversations.observed(c)
  if state.state ~= "stopped" then
    c.started = true
  end
  if c == shown then
    M.current = state
  end
  announce(state)
end

--- The panel shows another conversation: its state is the current one.
---@param state gemini_companion.AgentState
function M._shown(state)
  M.current = state
  announce(state)
end

---@type table<integer, true> the transcript windows the panel opened
local panel_windows = {}

--- `header()` as a 'statusline' value for a window `width` columns wide: set when
--- the state changes (and the window's width), not an expression Neovim evaluates
--- at every redraw of a streaming answer.
---@param width? integer
---@return string
function M.status_line(width)
  return " " .. M.header(width and width - 2 or nil):gsub("%%", "%%%%") .. "%<"
end

---@param win integer
local function set_status_line(win)
  vim.wo[win][0].statusline = M.status_line(vim.api.nvim_win_get_width(win))
end

local resize_group = nil

--- Show the header in window `win`'s status line from now on (panel.lua, when it
--- opens a transcript window).
---@param win integer
function M.show_in(win)
  panel_windows[win] = true
  set_status_line(win)
  if not resize_group then
    -- A narrower window drops the header's least important parts.
    resize_group = vim.api.nvim_create_augroup("gemini_companion_agent_header", { clear = true })
    vim.api.nvim_create_autocmd({ "WinResized", "VimResized" }, {
      group = resize_group,
      callback = function()
        M.set_status_lines()
      end,
    })
  end
end

--- Write the current header into the status lines of the panel's transcript windows.
function M.set_status_lines()
  for win in pairs(panel_windows) do
    if vim.api.nvim_win_is_valid(win) then
      set_status_line(win)
    else
      panel_windows[win] = nil
    end
  end
end

--- The agent is busy with a prompt or waits for the user's answer.
---@return boolean
function M.busy()
  local s = M.current.state
  return s == "working" or s == "waiting" or s == "starting"
end

--- The panel's status line: the summary (what the agent is doing), the protocol,
--- then the mode and model when the agent has them (ACP). In `width` columns, the
--- least important go first: the protocol, the model, the tokens, the mode, the name.
---@param width? integer
---@return string
function M.header(width)
  local s = M.current
  local summary = M.summary()
  local parts = {}
  if summary ~= "" then
    parts[#parts + 1] = { summary, 1 }
  end
  parts[#parts + 1] = { "Gemini agent", 2 }
  if s.protocol then
    parts[#parts + 1] = { "(" .. s.protocol .. ")", 6 }
  end
  if s.mode then
    parts[#parts + 1] = { "mode: " .. s.mode, 3 }
  end
  if s.model then
    parts[#parts + 1] = { "model: " .. s.model, 5 }
  end
  local usage = M.usage_text()
  if usage ~= "" then
    parts[#parts + 1] = { usage, 4 }
  end
  return require("gemini_companion.agent.status_lines").fit(parts, width)
end

--- `n` with its thousands apart: 12,345.
---@param n integer
---@return string
local function thousands(n)
  local digits = tostring(math.floor(tonumber(n) or 0))
  return (digits:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

--- The tokens the conversation used so far, as the agent reported them
--- ("tokens: 12,345 in, 678 out"), or "" when it reported none.
---@return string
function M.usage_text()
  local total = (M.current.usage or {}).total
  if type(total) ~= "table" then
    return ""
  end
  return ("tokens: %s in, %s out"):format(thousands(total.input_tokens), thousands(total.output_tokens))
end

--- What the shown conversation does, for `summary()`.
---@return string
local function shown_summary()
  local s = M.current
  if s.state == "working" or s.state == "starting" then
    return "agent: " .. s.state
  elseif s.state == "waiting" then
    local n = #s.pending
    return n > 1 and ("agent: waiting for you (" .. n .. ")") or "agent: waiting for you"
  elseif s.state == "error" then
    return "agent: error"
  end
  return ""
end

--- Short text for statuslines: "" when the agent is stopped or idle; the other
--- conversations that wait for the user are named ("agent: #2 waits for you").
---@return string
function M.summary()
  local text = shown_summary()
  local others = package.loaded["gemini_companion.agent.conversations"]
  local waiting = others and others.waiting_others() or {}
  if #waiting == 0 then
    return text
  end
  local ids = {}
  for _, c in ipairs(waiting) do
    ids[#ids + 1] = "#" .. c.id
  end
  local wait = table.concat(ids, ", ") .. (#ids == 1 and " waits for you" or " wait for you")
  return text == "" and ("agent: " .. wait) or (text .. "; " .. wait)
end

--- Some conversation waits for the user (the statusline's pending colour).
---@return boolean
function M.someone_waits()
  local others = package.loaded["gemini_companion.agent.conversations"]
  return M.current.state == "waiting" or (others ~= nil and #others.waiting_others() > 0)
end

return M
