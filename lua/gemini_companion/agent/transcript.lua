--- The transcript buffer (filetype `gemini_agent`): read-only, markdown, and
--- drawn only here, from the batches of operations the Python side sends
--- (agent/view.py documents them). A block is a range of lines starting at an
--- extmark; a tool block is replaced whole on each update, text blocks grow at the
--- end. The buffer outlives its windows, so reopening the panel shows it again.
---
--- Markdown: agent/markdown.lua, told of every block drawn and every append
--- (`agent.markdown` chooses how). The panel's own lines (role lines, tool
--- blocks, notices, thoughts) are highlighted by block, not by pattern, through a
--- decoration provider that looks only at the lines on screen.
---
--- The windows showing it (thoughts' folds, following the stream):
--- agent/transcript_windows.lua.
---
--- Over 400 lines long because the blocks' table (their extmarks, kinds and
--- pending confirmations) is read by all that is here: drawing a batch, the
--- highlighting by block and the rows of each thought's fold.
local M = {}

local api = vim.api
local windows = require("gemini_companion.agent.transcript_windows")
local ns = api.nvim_create_namespace("gemini_companion_agent_blocks")
local hl_ns = api.nvim_create_namespace("gemini_companion_agent_highlights")

---@type integer?
local buf = nil
---@type integer[] block ids in transcript order
local order = {}
---@type table<integer, { mark: integer, index: integer, kind: string, pending?: string }>
local blocks = {}
---@type table<string, integer> call id -> the block that shows its confirmation
local shown = {}

local set_provider -- defined below, with the highlighting by block
local read_only -- defined below, with _apply
local save, restore -- defined below, after _apply
---@type { lines: string[], starts: integer[] }? the transcript and its blocks'
--- first rows when Neovim unloaded the buffer, until it reads it again
local saved = nil

---@type integer?, integer the buffer's changedtick after the last append, and
--- the length of its last line then (bytes)
local tail_tick, tail_len = nil, 0

local NAME = "gemini-agent://transcript"

--- The transcript buffer, created on first use.
---@return integer
function M.buffer()
  if buf and api.nvim_buf_is_valid(buf) then
    if not api.nvim_buf_is_loaded(buf) then
      vim.fn.bufload(buf) -- unloaded by the user (`:bunload`): drawn again
    end
    return buf
  end
  buf = api.nvim_create_buf(false, true)
  order, blocks, shown = {}, {}, {}
  tail_tick, tail_len, saved = nil, 0, nil
  api.nvim_buf_set_name(buf, NAME)
  local bo = vim.bo[buf]
  bo.buftype = "nofile"
  bo.bufhidden = "hide"
  bo.swapfile = false
  bo.undolevels = -1
  bo.modifiable = false
  bo.filetype = "gemini_agent"
  require("gemini_companion.highlights").define()
  set_provider()
  api.nvim_create_autocmd("BufWinEnter", {
    buffer = buf,
    callback = function()
      M.fold_window(api.nvim_get_current_win())
    end,
  })
  api.nvim_create_autocmd("BufEnter", {
    buffer = buf,
    callback = function(args)
      read_only(args.buf)
    end,
  })
  -- `:edit` in its window (or `:bunload`) empties the buffer, then reads it
  -- again: the transcript is drawn again as it was.
  api.nvim_create_autocmd("BufUnload", {
    buffer = buf,
    callback = function(args)
      save(args.buf)
    end,
  })
  api.nvim_create_autocmd("BufReadCmd", {
    buffer = buf,
    callback = function(args)
      restore(args.buf)
    end,
  })
  require("gemini_companion.agent.markdown").start(buf)
  return buf
end

--- The first block shown at or after row `top` (binary search on the blocks'
--- extmarks), as an index in `order`.
---@param b integer
---@param top integer
---@return integer
local function block_at(b, top)
  local lo, hi = 1, #order
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    if api.nvim_buf_get_extmark_by_id(b, ns, blocks[order[mid]].mark, {})[1] <= top then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return lo
end

---@type { start: integer, kind: string }[] the blocks on screen, set by on_win
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

function set_provider()
  if provider_set then
    return
  end
  provider_set = true
  api.nvim_set_decoration_provider(hl_ns, {
    on_win = function(_, _, b, top, bot)
      if b ~= buf or #order == 0 then
        return false
      end
      require("gemini_companion.agent.markdown_code").on_win(b, top, bot)
      on_screen = {}
      local own = false
      for i = block_at(b, top), #order do
        local block = blocks[order[i]]
        local start = api.nvim_buf_get_extmark_by_id(b, ns, block.mark, {})[1]
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

---@param b integer
---@param id integer
---@return integer start, integer finish (exclusive)
local function range(b, id)
  local block = blocks[id]
  local start = api.nvim_buf_get_extmark_by_id(b, ns, block.mark, {})[1]
  local next_id = order[block.index + 1]
  local finish = next_id and api.nvim_buf_get_extmark_by_id(b, ns, blocks[next_id].mark, {})[1]
    or api.nvim_buf_line_count(b)
  return start, finish
end

--- The rows of block `id` (first, and last exclusive), or nil when it is gone
--- (agent/markdown.lua, which classifies a big batch in slices).
---@param id integer
---@return integer? start, integer? finish
function M._range(id)
  if blocks[id] and buf and api.nvim_buf_is_valid(buf) then
    return range(buf, id)
  end
end

--- Lines as Neovim takes them: one holding a newline (which nvim_buf_set_lines
--- refuses, failing the whole batch) becomes several.
---@param lines string[]
---@return string[]
local function as_lines(lines)
  for i, line in ipairs(lines) do
    if line:find("\n", 1, true) then
      local out = vim.list_slice(lines, 1, i - 1)
      for j = i, #lines do
        vim.list_extend(out, vim.split(lines[j], "\n", { plain = true }))
      end
      return out
    end
  end
  return lines
end

---@param b integer
---@param id integer
---@param lines string[]
local function add_block(b, id, lines)
  local start
  if #order == 0 then
    start = 0
    api.nvim_buf_set_lines(b, 0, -1, false, lines)
  else
    start = api.nvim_buf_line_count(b)
    api.nvim_buf_set_lines(b, start, start, false, lines)
  end
  order[#order + 1] = id
  blocks[id] = { index = #order, mark = api.nvim_buf_set_extmark(b, ns, start, 0, {}), kind = "text" }
end

---@param b integer
---@param id integer
---@param lines string[]
local function set_block(b, id, lines)
  lines = as_lines(lines)
  if not blocks[id] then
    add_block(b, id, lines)
    return
  end
  local start, finish = range(b, id)
  api.nvim_buf_set_lines(b, start, finish, false, lines)
  api.nvim_buf_set_extmark(b, ns, start, 0, { id = blocks[id].mark })
end

--- A block op: its lines, then what it shows (a confirmation is "shown" only
--- once its lines are in the buffer).
---@param b integer
---@param op { id: integer, lines: string[], kind?: string, pending?: string }
local function draw_block(b, op)
  local block = blocks[op.id]
  if block and block.pending then
    shown[block.pending] = nil
    block.pending = nil
  end
  set_block(b, op.id, op.lines)
  block = blocks[op.id]
  block.kind = op.kind or block.kind
  if op.pending then
    block.pending = op.pending
    shown[op.pending] = op.id
  end
end

--- When drawing an op failed: its lines with control characters made visible,
--- or a line saying it could not be drawn. A confirmation never hides: it is
--- either shown in full or not "shown" at all (then nothing answers it unnamed).
---@param b integer
---@param op table
---@param err string
local function draw_failed(b, op, err)
  local lines = {}
  for _, line in ipairs(type(op.lines) == "table" and op.lines or {}) do
    lines[#lines + 1] = tostring(line):gsub("%c", function(c)
      return ("<%02x>"):format(c:byte())
    end)
  end
  table.insert(lines, 1, "[Error] this block could not be drawn: " .. tostring(err):gsub("%c", " "))
  local ok = pcall(draw_block, b, { id = op.id, lines = lines, kind = "notice", pending = op.pending })
  if not ok and op.pending then
    shown[op.pending] = nil
  end
end

--- `text` cut at its newlines (vim.split's work, without its checks and
--- iterator: it runs for every streamed chunk).
---@param text string
---@return string[]
local function split_lines(text)
  local pieces, init = {}, 1
  while true do
    local nl = text:find("\n", init, true)
    if not nl then
      pieces[#pieces + 1] = init == 1 and text or text:sub(init)
      return pieces
    end
    pieces[#pieces + 1] = text:sub(init, nl - 1)
    init = nl + 1
  end
end

---@param b integer
---@param id integer
---@param text string
---@param prefix string
---@return integer first the first row it changed
---@return integer count the buffer's line count after it
local function append(b, id, text, prefix)
  if not blocks[id] then
    add_block(b, id, { "", "" })
  end
  local pieces = split_lines(text)
  local last = api.nvim_buf_line_count(b) - 1
  local col = tail_len
  if tail_tick ~= api.nvim_buf_get_changedtick(b) then
    col = #(api.nvim_buf_get_lines(b, last, last + 1, false)[1] or "")
  end
  for i = 2, #pieces do
    pieces[i] = prefix .. pieces[i]
  end
  tail_len = #pieces == 1 and col + #pieces[1] or #pieces[#pieces]
  if col > 0 then
    -- Inserted at the line's end: Neovim does not re-check the view of the
    -- windows whose cursor is on it (they follow the stream, and are moved once
    -- a frame), nor is the line read back and written whole.
    api.nvim_buf_set_text(b, last, col, last, col, pieces)
  else
    -- An empty line: text inserted there would take a cursor on it along.
    api.nvim_buf_set_lines(b, last, last + 1, false, pieces)
  end
  tail_tick = api.nvim_buf_get_changedtick(b)
  return last, last + #pieces
end

--- The rows (1-based, inclusive) a thought's fold covers: from its subject to its
--- last line; nil when it has no such lines (drawn as something else).
---@param b integer
---@param id integer
---@return integer? first, integer? last
local function thought_rows(b, id)
  if blocks[id].kind ~= "thought" then
    return nil
  end
  local start, finish = range(b, id)
  if finish < start + 2 then
    return nil
  end
  return start + 2, finish
end

--- Thought `id`'s rows and its fold's state in each window, before it changes.
---@param b integer
---@param id integer
---@return table<integer, boolean>?
local function fold_states(b, id)
  local first = blocks[id] and thought_rows(b, id)
  return first and windows.fold_states(b, first)
end

--- Fold thought `id` in every window showing the transcript.
---@param b integer
---@param id integer
---@param states table<integer, boolean>?
local function fold_thought(b, id, states)
  local first, last = thought_rows(b, id)
  if first then
    windows.fold(b, first, last, states)
  end
end

--- Fold every thought in window `win` (one the transcript just entered, or whose
--- 'foldmethod' the panel just set to manual); the window's other folds go.
---@param win integer
function M.fold_window(win)
  local b = buf
  if not b or not api.nvim_win_is_valid(win) or api.nvim_win_get_buf(win) ~= b then
    return
  end
  local rows = {}
  for _, id in ipairs(order) do
    local first, last = thought_rows(b, id)
    if first then
      rows[#rows + 1] = { first, last }
    end
  end
  windows.fold_all(win, rows)
end

--- The last block is over (a block follows it, or the turn ended).
---@param b integer
local function finish_last(b)
  local id = order[#order]
  if id then
    local start, finish = range(b, id)
    require("gemini_companion.agent.markdown").finish(b, id, start, finish)
  end
end

--- 'modifiable' is set only while the buffer is written, and reset when the
--- buffer is entered, when a batch ends with it current, and when a turn ends:
--- not set and reset for each batch of a stream read from another window (each
--- setting runs the OptionSet autocommands' patterns).
---@param b integer
local function writable(b)
  if not api.nvim_get_option_value("modifiable", { buf = b }) then
    vim.bo[b].modifiable = true
  end
end

---@param b integer
function read_only(b)
  if api.nvim_get_option_value("modifiable", { buf = b }) then
    vim.bo[b].modifiable = false
  end
end

---@type table? agent/markdown.lua, required on the first op drawn
local markdown = nil

--- Draw one block or append op (in a pcall: _apply).
---@param b integer
---@param op table
local function draw_op(b, op)
  local md = markdown or require("gemini_companion.agent.markdown")
  markdown = md
  local id = op.id
  local states = fold_states(b, id)
  if op.op == "block" then
    if not blocks[id] then
      finish_last(b)
    end
    draw_block(b, op)
    local start, finish = range(b, id)
    md.update(b, id, blocks[id].kind, start, start, finish, true)
  else
    local first, count = append(b, id, op.text, op.prefix or "")
    local block = blocks[id]
    md.update(b, id, block.kind, api.nvim_buf_get_extmark_by_id(b, ns, block.mark, {})[1], first, count, false)
  end
  if blocks[id].kind == "thought" then
    fold_thought(b, id, states)
  end
end

local levels = { info = vim.log.levels.INFO, warning = vim.log.levels.WARN, error = vim.log.levels.ERROR }

---@type integer?, integer? the newest conversation drawn, and the host's channel
--- that sent it (a host started again numbers its conversations from 1 again)
local newest, newest_host = nil, nil

--- A batch of a conversation older than the newest drawn (one stopped, whose
--- agent is still ending): dropped whole. A batch that names no conversation
--- (the tests') is never stale.
---@param ops table[]
---@return boolean
local function stale(ops)
  local first = ops[1]
  if not (first and first.op == "conversation") then
    return false
  end
  local host = require("gemini_companion.host").channel
  if newest_host ~= host then
    newest, newest_host = nil, host
  end
  if newest and first.id < newest then
    return true
  end
  newest = first.id
  return false
end

--- Draw one batch (agent/view.py, through host.lua's agent_draw). Each op is
--- drawn on its own: one that fails is shown as failed and the others still draw.
---@param ops table[]
function M._apply(ops)
  if stale(ops) then
    return
  end
  local b = M.buffer()
  windows.note_following(b)
  local changed = false
  local messages = require("gemini_companion.agent.messages")
  for _, op in ipairs(ops) do
    if op.op == "block" or op.op == "append" then
      if not changed then
        writable(b)
      end
      local ok, err = pcall(draw_op, b, op)
      if not ok then
        if op.op == "block" then
          draw_failed(b, op, err)
        end
        messages.post("Gemini agent: drawing the transcript failed: " .. tostring(err), vim.log.levels.WARN)
      end
      changed = true
    end
  end
  if changed then
    if api.nvim_get_current_buf() == b then
      read_only(b)
    end
    windows.follow_soon(b)
    require("gemini_companion.agent.renderers").changed(b)
  end
  for _, op in ipairs(ops) do
    if op.op == "state" then
      if op.state and op.state.state ~= "working" then
        read_only(b)
        pcall(finish_last, b)
        windows.follow_now(b)
      end
      require("gemini_companion.agent.state")._update(op.state)
    elseif op.op == "notify" then
      pcall(messages.post, op.text, levels[op.level] or vim.log.levels.INFO)
    elseif op.op == "checktime" then
      pcall(vim.cmd.checktime)
    elseif op.op == "bottom" then
      windows.bottom(b)
    end
  end
end

---@param b integer
function save(b)
  saved = nil
  if b ~= buf then
    return
  end
  local starts = {}
  for i, id in ipairs(order) do
    starts[i] = api.nvim_buf_get_extmark_by_id(b, ns, blocks[id].mark, {})[1]
  end
  saved = { lines = api.nvim_buf_get_lines(b, 0, -1, false), starts = starts }
end

--- Draw the transcript saved when the buffer was unloaded again, with its
--- blocks' marks and their markdown (the thoughts' folds: BufWinEnter, next).
---@param b integer
function restore(b)
  local s = saved
  saved = nil
  if b ~= buf or not s or #s.starts ~= #order then
    return
  end
  api.nvim_buf_clear_namespace(b, -1, 0, -1)
  writable(b)
  api.nvim_buf_set_lines(b, 0, -1, false, s.lines)
  read_only(b)
  vim.bo[b].modified = false
  tail_tick = nil
  for i, id in ipairs(order) do
    blocks[id].mark = api.nvim_buf_set_extmark(b, ns, s.starts[i], 0, { id = blocks[id].mark })
  end
  local md = require("gemini_companion.agent.markdown")
  md.reset()
  require("gemini_companion.agent.markdown_code").reset()
  for i, id in ipairs(order) do
    local start, finish = range(b, id)
    md.update(b, id, blocks[id].kind, start, start, finish, true)
    if i < #order then
      md.finish(b, id, start, finish)
    end
  end
  require("gemini_companion.agent.renderers").changed(b)
end

--- The call id of the oldest confirmation in `pending` whose lines are in the
--- transcript (what `:GeminiAccept` without an id answers), or nil.
---@param pending gemini_companion.AgentPending[]
---@return gemini_companion.AgentPending?
function M.first_shown(pending)
  for _, p in ipairs(pending) do
    if M.shows(p.id) then
      return p
    end
  end
end

--- The transcript shows the confirmation of this tool call in full.
---@param call_id string
---@return boolean
function M.shows(call_id)
  local id = shown[call_id]
  return id ~= nil and blocks[id] ~= nil and blocks[id].pending == call_id
end

--- The transcript's lines (for tests and for `:w` to a file by the user).
---@return string[]
function M.lines()
  return api.nvim_buf_get_lines(M.buffer(), 0, -1, false)
end

return M
