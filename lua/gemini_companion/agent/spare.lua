--- `agent.prestart`: the agent started before the panel opens (issue 31 item 4).
---
--- Armed past `VimEnter` (plugin/gemini_companion.lua), never on the start-up path:
--- a timer waits until Neovim has had no key for `IDLE_MS`, each key pushing it
--- back (what `CursorHold` does, in any mode and without 'updatetime'), then the
--- agent session is opened as the panel opens it, without its windows. The panel
--- opened later finds it ready. What the start says meanwhile (it failed: no
--- `gemini`, no login) is held (messages.lua) and shown once, when the panel opens
--- or the user asks the agent anything. The agent is the panel's one agent: it
--- stops with the companion and at `:qa` like one the panel started.
local M = {}

local uv = vim.uv or vim.loop

--- Milliseconds without a key before the spare starts.
M.IDLE_MS = 1000

local ns = vim.api.nvim_create_namespace("gemini_companion_spare")
local timer = nil ---@type uv.uv_timer_t?
local last_key = 0
--- "armed" (waiting for idle), "started", or nil (never armed, or disarmed).
---@type "armed"|"started"|nil
M.status = nil

local function disarm()
  vim.on_key(nil, ns)
  if timer then
    timer:stop()
    timer:close()
    timer = nil
  end
end

local function fire()
  if M.status ~= "armed" or not timer then
    return
  end
  uv.update_time()
  local idle = uv.now() - last_key
  if idle < M.IDLE_MS then
    timer:start(M.IDLE_MS - idle, 0, vim.schedule_wrap(fire))
    return
  end
  disarm()
  M.status = "started"
  local connection = require("gemini_companion.agent.connection")
  if connection.opened() then
    return -- the panel came first: nothing to start
  end
  require("gemini_companion.agent.messages").hold()
  vim.api.nvim_exec_autocmds("User", { pattern = "GeminiAgentSpare", modeline = false })
  connection.ensure({ spare = true })
end

--- Start waiting for Neovim to be idle (called past VimEnter; once).
function M.arm()
  if M.status then
    return
  end
  M.status = "armed"
  last_key = uv.now()
  vim.on_key(function()
    last_key = uv.now()
  end, ns)
  timer = assert(uv.new_timer())
  timer:start(M.IDLE_MS, 0, vim.schedule_wrap(fire))
end

--- The user reached for the agent (the panel opened, a request): what the spare's
--- start said is shown now, and a spare not started yet is not needed.
function M.claimed()
  if M.status == "armed" then
    disarm()
    M.status = nil
  end
  require("gemini_companion.agent.messages").release()
end

return M
