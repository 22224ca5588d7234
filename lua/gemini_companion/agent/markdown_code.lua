--- Code fences of the transcript in their language (agent/markdown.lua finds
--- them): a fence that closed is queued, and highlighted once it is on screen
--- and the screen has kept still for `SETTLE_MS` (the transcript's decoration
--- provider calls `on_win`; the stream scrolls fences past), with one parse
--- of its text alone (`vim.treesitter.get_string_parser`) and one pass of the
--- language's `highlights` query, into real extmarks in the namespace
--- `gemini_companion_agent_code` with the groups Neovim's highlighter uses
--- (`@keyword.lua`, ...). A long answer's fences that scroll past while it
--- streams cost nothing until they are looked at; each costs about 0.1-0.2 ms
--- for a few lines (most of it the query's predicates) once shown.
local M = {}

local api = vim.api

M.ns = api.nvim_create_namespace("gemini_companion_agent_code")
--- A queued fence: an extmark over its body, its info string in `queued`.
local queue_ns = api.nvim_create_namespace("gemini_companion_agent_code_queue")

---@type table<integer, string> queued fence's key (`key`) -> its info string
local queued = {}

--- A queued fence's key: its buffer and its mark's id (each buffer numbers its
--- marks: one transcript buffer per conversation).
---@param b integer
---@param id integer
---@return integer
local function key(b, id)
  return b * 4294967296 + id
end

---@type table<string, string|false>
local langs = {}

--- The tree-sitter language of a fence's info string, when its parser is
--- installed ("py" and "sh" through the file types of `x.py`, `x.sh`), else false.
---@param info string
---@return string|false
local function lang_of(info)
  -- No language's name is long: matching a long one against every file type's
  -- pattern stalled Neovim 30 ms on a fence line of 10,000 bytes.
  if #info > 40 then
    return false
  end
  info = info:lower()
  if langs[info] ~= nil then
    return langs[info]
  end
  local found = false
  if info:match("^[%w_+#.-]+$") then
    local candidates = { info, vim.treesitter.language.get_lang(info) }
    local ft = vim.filetype.match({ filename = "x." .. info })
    if ft then
      candidates[#candidates + 1] = vim.treesitter.language.get_lang(ft) or ft
    end
    for _, lang in ipairs(candidates) do
      if lang:match("^[%w_]+$") and pcall(vim.treesitter.language.add, lang) then
        local ok, query = pcall(vim.treesitter.query.get, lang, "highlights")
        if ok and query then
          found = lang
          break
        end
      end
    end
  end
  langs[info] = found
  return found
end

--- Highlight a fence's body (rows `first`..`last` - 1, absolute) in its language:
--- one parse of its text, one pass of the highlights query.
---@param b integer
---@param first integer
---@param last integer
---@param info string
local function highlight(b, first, last, info)
  api.nvim_buf_clear_namespace(b, M.ns, first, last)
  local lang = last > first and lang_of(info)
  if not lang then
    return
  end
  local text = table.concat(api.nvim_buf_get_lines(b, first, last, false), "\n")
  local ok, parser = pcall(vim.treesitter.get_string_parser, text, lang)
  local query = ok and vim.treesitter.query.get(lang, "highlights")
  if not query then
    return
  end
  local tree = parser:parse()[1]
  if not tree then
    return
  end
  local names = query.captures
  local groups = {} ---@type table<integer, string|false>
  for id, node, metadata in query:iter_captures(tree:root(), text) do
    local group = groups[id]
    if group == nil then
      local name = names[id]
      group = not (name:find("^_") or name == "spell" or name == "nospell" or name == "conceal")
        and ("@" .. name .. "." .. lang)
      groups[id] = group
    end
    if group then
      local sr, sc, er, ec = node:range()
      local priority = tonumber(metadata.priority or metadata[id] and metadata[id].priority)
        or vim.hl.priorities.treesitter
      api.nvim_buf_set_extmark(b, M.ns, first + sr, sc, {
        end_row = first + er,
        end_col = ec,
        hl_group = group,
        priority = priority,
        strict = false,
      })
    end
  end
  parser:destroy()
end

--- Forget the highlights and queued fences of rows `first`..`last` - 1 (they are
--- being redrawn).
---@param b integer
---@param first integer
---@param last integer
function M.clear(b, first, last)
  api.nvim_buf_clear_namespace(b, M.ns, first, last)
  if last <= first or next(queued) == nil then
    return
  end
  for _, m in ipairs(api.nvim_buf_get_extmarks(b, queue_ns, { first, 0 }, { last - 1, -1 }, {})) do
    queued[key(b, m[1])] = nil
    api.nvim_buf_del_extmark(b, queue_ns, m[1])
  end
end

--- Queue rows `first`..`last` - 1, a fence's body with this info string, for
--- highlighting when they are on screen; nothing without a parser for it.
---@param b integer
---@param first integer
---@param last integer
---@param info string
function M.queue(b, first, last, info)
  M.clear(b, first, last)
  if last > first and lang_of(info) then
    local id = api.nvim_buf_set_extmark(b, queue_ns, first, 0, { end_row = last, end_col = 0 })
    queued[key(b, id)] = info
  end
end

--- Highlight the queued fences among rows `top`..`bot` of buffer `b`.
---@param b integer
---@param top integer
---@param bot integer
local function light(b, top, bot)
  local found = api.nvim_buf_get_extmarks(b, queue_ns, { top, 0 }, { bot, -1 }, { overlap = true, details = true })
  for _, m in ipairs(found) do
    local info = queued[key(b, m[1])]
    queued[key(b, m[1])] = nil
    api.nvim_buf_del_extmark(b, queue_ns, m[1])
    if info then
      highlight(b, m[2], m[4].end_row, info)
    end
  end
end

--- How long the screen must keep still before the fences on it are parsed: a
--- stream that scrolls fences past faster than this parses none of them until it
--- slows down (or ends), and then only those on screen.
M.SETTLE_MS = 40

---@type uv.uv_timer_t?
local timer = nil

--- The fences on screen in the windows showing `b` once it is still.
---@param b integer
local function settled(b)
  if not api.nvim_buf_is_valid(b) then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(b)) do
    local top, bot = vim.fn.line("w0", win) - 1, vim.fn.line("w$", win)
    light(b, top, bot)
  end
end

--- A window is about to show rows `top`..`bot` of `b`: if queued fences are
--- among them, they are parsed once the screen keeps still for `SETTLE_MS`.
---@param b integer
---@param top integer
---@param bot integer
function M.on_win(b, top, bot)
  if next(queued) == nil then
    return
  end
  if #api.nvim_buf_get_extmarks(b, queue_ns, { top, 0 }, { bot, -1 }, { overlap = true, limit = 1 }) == 0 then
    return
  end
  timer = timer or assert(vim.uv.new_timer())
  timer:start(
    M.SETTLE_MS,
    0,
    vim.schedule_wrap(function()
      settled(b)
    end)
  )
end

--- Forget every queued fence (a new transcript buffer).
function M.reset()
  queued = {}
end

return M
