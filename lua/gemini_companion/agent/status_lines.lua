--- The agent panel's status lines fitted to their windows: a narrow window drops
--- the least important parts first, so what it shows is never cut mid-word. The
--- transcript's header is agent/state.lua's; the prompt's is here.
local M = {}

local api = vim.api

--- `parts` ({ text, priority }, in the order shown) joined by two spaces, the least
--- important (highest priority number) left out until the rest fits `width`
--- columns. The most important part is always kept (the line cuts it, at worst).
---@param parts { [1]: string, [2]: integer }[]
---@param width? integer
---@return string
function M.fit(parts, width)
  local kept = {}
  for i = 1, #parts do
    kept[i] = true
  end
  local function joined()
    local texts = {}
    for i, part in ipairs(parts) do
      if kept[i] then
        texts[#texts + 1] = part[1]
      end
    end
    return table.concat(texts, "  ")
  end
  local line = joined()
  local order = {}
  for i = 1, #parts do
    order[i] = i
  end
  table.sort(order, function(a, b)
    return parts[a][2] > parts[b][2]
  end)
  for n = 1, #order - 1 do
    if not width or vim.fn.strdisplaywidth(line) <= width then
      break
    end
    kept[order[n]] = false
    line = joined()
  end
  -- Put back a less important part that fits now (a short one after a long one left).
  for n = #order - 1, 1, -1 do
    local i = order[n]
    if width and not kept[i] then
      kept[i] = true
      local wider = joined()
      if vim.fn.strdisplaywidth(wider) <= width then
        line = wider
      else
        kept[i] = false
      end
    end
  end
  return line
end

--- The prompt window's status line: the images attached, `?`, the keys that
--- send, the context words; in a narrow window the least useful go first (the context words, then the
--- long form of the keys that send), so what is shown is never cut mid-word.
---@return string
function M.prompt()
  local keys = require("gemini_companion.config").get().agent.keymaps
  -- A %{} item is evaluated with the status line's window as the current one.
  local width = api.nvim_win_get_width(0) - 2
  ---@param long boolean
  local function parts(long)
    local list = {}
    if keys.help then
      list[#list + 1] = { keys.help .. " keys", 1 }
    end
    local send = {}
    if keys.send then
      send[#send + 1] = keys.send
    end
    if keys.send_insert then
      send[#send + 1] = keys.send_insert .. (long and " (insert)" or "")
    end
    if #send > 0 then
      list[#list + 1] = { table.concat(send, long and " / " or "/") .. " sends", 2 }
    end
    list[#list + 1] = { "@file #buffer", 3 }
    -- The images waiting for the next prompt (:GeminiAgentImage) first: the most
    -- important, kept at any width. Loaded once one is attached.
    local images = package.loaded["gemini_companion.agent.images"]
    if images and images.status() ~= "" then
      table.insert(list, 1, { images.status(), 0 })
    end
    return list
  end
  local line = M.fit(parts(true), width)
  if not line:find(" sends", 1, true) then
    line = M.fit(parts(false), width)
  end
  return line
end

return M
