--- The highlighting of the transcript's own lines (role lines, tool blocks,
--- notices, thoughts) by block, not by pattern: a decoration provider that looks
--- only at the blocks on screen (agent/transcript_blocks.lua's table). The
--- answer's markdown is agent/markdown.lua's.
local M = {}

local api = vim.api
local hl_ns = api.nvim_create_namespace("gemini_companion_agent_highlights")

---@type { start: integer, kind: string, group?: string }[] the blocks on screen, set by on_win
local on_screen = {}

local ROLES = { ["▍ You"] = true, ["▍ Gemini"] = true }
local NOTICES = { Error = "GeminiAgentError", Warning = "GeminiAgentNote", Note = "GeminiAgentNote" }

--- The panel's own group for line `row`, or nil (the markdown highlighter's).
---@param b integer
---@param row integer
---@return string?
local function own_group(b, row)
  local block
  for i = #on_screen, 1, -1 do
    if on_screen[i].start <= row then
      block = on_screen[i]
      break
    end
  end
  if not block or block.kind == "text" or block.kind == "message" then
    return nil
  end
  local line = api.nvim_buf_get_lines(b, row, row + 1, false)[1] or ""
  if line == "" then
    return nil
  elseif block.kind == "thought" then
    return "GeminiAgentThought"
  elseif block.kind == "prompt" then
    return ROLES[line] and "GeminiAgentRole" or nil
  elseif block.kind == "tool" then
    if line:find("^%[tool%] ") then
      return "GeminiAgentTool"
    elseif line:find("^  %? Waiting for you") then
      return "GeminiAgentWaiting"
    end
  elseif block.kind == "notice" then
    if row == block.start + 1 then
      block.group = NOTICES[line:match("^%[(%a+)%]") or ""]
    end
    return block.group
  end
end

local provider_set = false

--- Highlight the transcript buffers from now on: `take(b)` tells whether `b` is
--- one, and puts its blocks' table in use.
---@param take fun(b: integer): boolean
function M.start(take)
  if provider_set then
    return
  end
  provider_set = true
  local blocks = require("gemini_companion.agent.transcript_blocks")
  api.nvim_set_decoration_provider(hl_ns, {
    on_win = function(_, _, b, top, bot)
      if not take(b) or #blocks.order == 0 then
        return false
      end
      local order = blocks.order
      require("gemini_companion.agent.markdown_code").on_win(b, top, bot)
      on_screen = {}
      local own = false
      for i = blocks.block_at(b, top), #order do
        local block = blocks.blocks[order[i]]
        local start = blocks.start(b, order[i])
        if start > bot then
          break
        end
        on_screen[#on_screen + 1] = { start = start, kind = block.kind }
        own = own or (block.kind ~= "text" and block.kind ~= "message")
      end
      -- Only the answer's text on screen (a streaming answer, mostly): no on_line
      -- call for each of its rows at each redraw.
      return own
    end,
    on_line = function(_, _, b, row)
      local group = own_group(b, row)
      if group then
        local line = api.nvim_buf_get_lines(b, row, row + 1, false)[1]
        api.nvim_buf_set_extmark(b, hl_ns, row, 0, {
          end_col = #line,
          hl_group = group,
          ephemeral = true,
          priority = 150, -- over tree-sitter's 100
        })
      end
    end,
  })
end

return M
