--- Messages from the agent panel to the user, coalesced (issue 23): at most one
--- every `INTERVAL` ms, the ones between folded into the next ("and 3 more"), so a
--- flood of agent errors is one message, never a wait on the message area.
---
--- Neovim waits about a second before a message that follows an error message
--- (an `emsg`), with every request to it behind the wait; and two messages in one
--- redraw ask "Press ENTER". So with Neovim's own `vim.notify` an error is echoed
--- in `ErrorMsg` as one line that fits (the transcript has errors in full), never
--- as an `emsg`; a `vim.notify` a plugin replaced (nvim-notify, snacks, noice, fidget)
--- gets the message and its level as they are.
local M = {}

local uv = vim.uv or vim.loop

--- Milliseconds between two messages shown.
M.INTERVAL = 1500

---@type { text: string, level: integer }[]
local queued = {}
local last_shown = nil ---@type integer?
local timer = nil ---@type uv.uv_timer_t?

---@return boolean
local function builtin_notify()
  local info = debug.getinfo(vim.notify, "S")
  return info ~= nil and info.source:find("vim/_editor.lua", 1, true) ~= nil
end

---@param text string
---@param level integer
local function show(text, level)
  if builtin_notify() then
    local hl = level >= vim.log.levels.ERROR and "ErrorMsg" or level == vim.log.levels.WARN and "WarningMsg" or nil
    local line = text:match("^[^\n]*")
    local room = math.max(vim.v.echospace, 20)
    if line == text and vim.fn.strdisplaywidth(line) <= room then
      vim.api.nvim_echo({ { line, hl } }, true, {})
      return
    end
    -- One line that fits on screen, which no "Press ENTER" follows (errors are
    -- in full in the transcript).
    -- What the Python side posts is in the transcript too (errors and refused
    -- requests are notices there).
    local note = " … (more in the transcript)"
    line = vim.fn.strcharpart(line, 0, room - vim.fn.strdisplaywidth(note) - 1) .. note
    vim.api.nvim_echo({ { line, hl } }, true, {})
  else
    local brief = require("gemini_companion.state").brief(text, "the agent's transcript")
    vim.notify(brief, level, { title = "Gemini agent" })
  end
end

local function flush()
  if #queued == 0 then
    return
  end
  local worst = queued[1]
  for _, m in ipairs(queued) do
    if m.level > worst.level then
      worst = m
    end
  end
  local text = worst.text
  if #queued > 1 then
    local first, rest = text:match("^([^\n]*)(.*)$")
    text = ("%s (and %d more: see the transcript)%s"):format(first, #queued - 1, rest)
  end
  queued = {}
  last_shown = uv.now()
  show(text, worst.level)
end

--- True while messages wait for `release()` (agent.prestart's start, spare.lua).
local held = false

--- Keep what is posted from now on until `release()`: the agent started before
--- the panel says nothing until the user reaches for it.
function M.hold()
  held = true
end

--- Show what was held (as one message, as a flood is), and post freely again.
function M.release()
  if held then
    held = false
    flush()
  end
end

--- Show `text` now, or with the next message when one was shown less than
--- `INTERVAL` ms ago.
---@param text string
---@param level integer
function M.post(text, level)
  queued[#queued + 1] = { text = text, level = level }
  if held then
    return
  end
  uv.update_time()
  local since = last_shown and (uv.now() - last_shown) or math.huge
  if since >= M.INTERVAL and not (timer and timer:is_active()) then
    flush()
    return
  end
  timer = timer or assert(uv.new_timer())
  if not timer:is_active() then
    timer:start(math.max(M.INTERVAL - since, 1), 0, vim.schedule_wrap(flush))
  end
end

return M
