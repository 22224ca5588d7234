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
---@field max_width? integer columns it may take: the least important parts go first

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
  -- { group, text, rank }, in the order shown; rank 1 is kept longest: whether a
  -- CLI is connected, then a diff waiting for an answer, then the agent's state,
  -- then the tokens its conversation used.
  local parts = {}
  local sessions = #(state.sessions or {})
  if sessions == 0 then
    parts[1] = { "GeminiCompanionIdle", "Gemini", 1 }
  else
    parts[1] = { "GeminiCompanionConnected", sessions == 1 and "Gemini ●" or ("Gemini ●" .. sessions), 1 }
  end
  local agent = package.loaded["gemini_companion.agent.state"]
  local summary = agent and agent.summary() or ""
  if summary ~= "" then
    local group = agent.someone_waits() and "GeminiCompanionPending" or "GeminiCompanionConnected"
    parts[#parts + 1] = { group, summary, 3 }
  end
  local usage = agent and agent.usage_text() or ""
  if usage ~= "" then
    parts[#parts + 1] = { "GeminiCompanionIdle", usage, 4 }
  end
  local pending = M.pending_diffs()
  if pending > 0 then
    parts[#parts + 1] = { "GeminiCompanionPending", pending == 1 and "diff" or (pending .. " diffs"), 2 }
  end
  local width = opts.max_width
  for rank = 4, 2, -1 do
    local used = -1
    for _, p in ipairs(parts) do
      used = used + 1 + vim.fn.strdisplaywidth(p[2])
    end
    if not width or used <= width then
      break
    end
    for i = #parts, 1, -1 do
      if parts[i][3] == rank then
        table.remove(parts, i)
      end
    end
  end
  local texts = {}
  for _, p in ipairs(parts) do
    texts[#texts + 1] = part(p[1], p[2])
  end
  return table.concat(texts, " ")
end

return M
