--- The prompt's history (the panel's history keys): each conversation's own
--- (conversations.lua), browsed in the one prompt buffer, whose unsent text is
--- kept while browsing.
local M = {}

local api = vim.api

---@type integer? position while browsing the history
local pos = nil
---@type string? the unsent text kept while browsing the history
local draft = nil

---@return string[]
local function history()
  return require("gemini_companion.agent.conversations").current().history
end

---@param buf integer
---@return string
local function buffer_text(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

---@param buf integer
---@param text string
local function set_prompt(buf, text)
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, "\n", { plain = true }))
end

--- `text` was sent from the prompt.
---@param text string
function M.add(text)
  local h = history()
  if h[#h] ~= text then
    h[#h + 1] = text
  end
  M.stop_browsing()
end

--- Browsing is over (a prompt sent, another conversation shown).
function M.stop_browsing()
  pos, draft = nil, nil
end

--- Show an older (`step` -1) or newer (1) prompt in the prompt buffer `buf`.
---@param buf integer
---@param step integer
function M.step(buf, step)
  local h = history()
  if #h == 0 then
    return
  end
  if pos == nil then
    if step > 0 then
      return
    end
    draft = buffer_text(buf)
    pos = #h
  else
    pos = pos + step
  end
  if pos < 1 then
    pos = 1
  end
  if pos > #h then
    pos = nil
    set_prompt(buf, draft or "")
    return
  end
  set_prompt(buf, h[pos])
end

--- The shown conversation's history, oldest first.
---@return string[]
function M.entries()
  return vim.deepcopy(history())
end

return M
