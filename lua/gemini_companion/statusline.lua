--- A statusline component: the companion's state, connected CLI sessions and a
--- diff waiting for an answer. Reads only Lua state (no call into Python), so it
--- is cheap enough for every redraw.
local M = {}

--- Diffs waiting for the user's answer (0 when the diff view was never used).
---@return integer
function M.pending_diffs()
  local diff = package.loaded["gemini_companion.diff"]
  if type(diff) ~= "table" or type(diff.views) ~= "function" then
    return 0
  end
  local ok, views = pcall(diff.views)
  if not ok or type(views) ~= "table" then
    return 0
  end
  local n = 0
  for _, view in ipairs(views) do
    if view.state == nil or view.state == "open" then
      n = n + 1
    end
  end
  return n
end

---@class gemini_companion.StatuslineOptions
---@field highlight? boolean wrap the parts in %#Group# items (default true)
---@field stopped? string text when the server is not running (default "", show nothing)

---@param opts? gemini_companion.StatuslineOptions
---@return string
function M.render(opts)
  opts = opts or {}
  local highlight = opts.highlight ~= false
  local function part(group, text)
    return highlight and ("%#" .. group .. "#" .. text .. "%*") or text
  end
  local state = require("gemini_companion.state").current
  if not state.running then
    local text = opts.stopped or ""
    return text ~= "" and part("GeminiCompanionStopped", text) or ""
  end
  local sessions = #(state.sessions or {})
  local text
  if sessions == 0 then
    text = part("GeminiCompanionIdle", "Gemini")
  else
    text = part("GeminiCompanionConnected", sessions == 1 and "Gemini ●" or ("Gemini ●" .. sessions))
  end
  local agent = package.loaded["gemini_companion.agent.state"]
  local summary = agent and agent.summary() or ""
  if summary ~= "" then
    local group = agent.current.state == "waiting" and "GeminiCompanionPending" or "GeminiCompanionConnected"
    text = text .. " " .. part(group, summary)
  end
  local usage = agent and agent.usage_text() or ""
  if usage ~= "" then
    text = text .. " " .. part("GeminiCompanionIdle", usage)
  end
  local pending = M.pending_diffs()
  if pending > 0 then
    text = text .. " " .. part("GeminiCompanionPending", pending == 1 and "diff" or (pending .. " diffs"))
  end
  return text
end

return M
