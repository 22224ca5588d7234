--- The transcript buffers (filetype `gemini_agent`), one per conversation
--- (conversations.lua): read-only, markdown, and drawn only here, from the
--- batches of operations the Python side sends (agent/view.py documents them;
--- each names its conversation). A block is a range of lines starting at an
--- extmark; a tool block is replaced whole on each update, text blocks grow at the
--- end. The buffer outlives its windows, so reopening the panel shows it again.
---
--- Its parts: the blocks' table and their drawing (transcript_blocks.lua), the
--- highlighting of the panel's own lines by block (transcript_decor.lua), the
--- transcript kept across an unload of the buffer (transcript_persist.lua), the
--- windows showing it, thoughts' folds and following the stream
--- (transcript_windows.lua). Markdown: agent/markdown.lua, told of every block
--- drawn and every append (`agent.markdown` chooses how).
local M = {}

local api = vim.api
local windows = require("gemini_companion.agent.transcript_windows")
local blk = require("gemini_companion.agent.transcript_blocks")

---@type table<integer, integer> conversation id -> its transcript buffer
local bufs = {}
---@type table<integer, gemini_companion.AgentBlocks> buffer -> its blocks
local tables = {}

local NAME = "gemini-agent://transcript"

--- Work on the blocks of buffer `b` (transcript_blocks.lua holds one table at a time).
---@param b integer
local function use(b)
  local t = tables[b]
  if not t then
    t = blk.new()
    tables[b] = t
  end
  blk.use(t)
end

---@param id? integer a conversation (default: the one shown)
---@return integer
local function conversation_id(id)
  return id or require("gemini_companion.agent.conversations").current().id
end

--- The buffer of block `id`, with its table in use, or nil.
---@param id integer
---@return integer?
local function owner(id)
  for b, t in pairs(tables) do
    if t.blocks[id] and api.nvim_buf_is_valid(b) then
      blk.use(t)
      return b
    end
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
local function read_only(b)
  if api.nvim_get_option_value("modifiable", { buf = b }) then
    vim.bo[b].modifiable = false
  end
end

--- Conversation `id`'s transcript buffer (default: the one shown), created on
--- first use, with its blocks' table in use.
---@param id? integer
---@return integer
function M.buffer(id)
  id = conversation_id(id)
  local buf = bufs[id]
  if buf and api.nvim_buf_is_valid(buf) then
    if not api.nvim_buf_is_loaded(buf) then
      vim.fn.bufload(buf) -- unloaded by the user (`:bunload`): drawn again
    end
    use(buf)
    return buf
  end
  buf = api.nvim_create_buf(false, true)
  bufs[id] = buf
  use(buf)
  blk.reset()
  local persist = require("gemini_companion.agent.transcript_persist")
  persist.reset(buf)
  local named = vim.fn.bufexists(NAME) == 1 and (NAME .. "/" .. id) or NAME
  api.nvim_buf_set_name(buf, named)
  local bo = vim.bo[buf]
  bo.buftype = "nofile"
  bo.bufhidden = "hide"
  bo.swapfile = false
  bo.undolevels = -1
  bo.modifiable = false
  bo.filetype = "gemini_agent"
  require("gemini_companion.highlights").define()
  require("gemini_companion.agent.transcript_decor").start(function(b)
    if tables[b] then
      use(b)
      return true
    end
    return false
  end)
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
      use(args.buf)
      persist.save(args.buf)
    end,
  })
  api.nvim_create_autocmd("BufReadCmd", {
    buffer = buf,
    callback = function(args)
      use(args.buf)
      persist.restore(args.buf, writable, read_only)
    end,
  })
  require("gemini_companion.agent.markdown").start(buf)
  return buf
end

--- Whether `b` is a conversation's transcript buffer.
---@param b integer
---@return boolean
function M.is_transcript(b)
  return tables[b] ~= nil
end

--- Conversation `old` is now `new` (conversations.lua renumbered it): same buffer.
---@param old integer
---@param new integer
function M._renumbered(old, new)
  bufs[new], bufs[old] = bufs[old], nil
end

--- The rows of block `id` (first, and last exclusive), or nil when it is gone
--- (agent/markdown.lua, which classifies a big batch in slices).
---@param id integer
---@return integer? start, integer? finish
function M._range(id)
  local b = owner(id)
  if b then
    return blk.range(b, id)
  end
end

--- Thought `id`'s rows and its fold's state in each window, before it changes.
---@param b integer
---@param id integer
---@return table<integer, boolean>?
local function fold_states(b, id)
  local first = blk.blocks[id] and blk.thought_rows(b, id)
  return first and windows.fold_states(b, first)
end

--- Fold thought `id` in every window showing the transcript.
---@param b integer
---@param id integer
---@param states table<integer, boolean>?
local function fold_thought(b, id, states)
  local first, last = blk.thought_rows(b, id)
  if first then
    windows.fold(b, first, last, states)
  end
end

--- Fold every thought in window `win` (one the transcript just entered, or whose
--- 'foldmethod' the panel just set to manual); the window's other folds go.
---@param win integer
function M.fold_window(win)
  if not api.nvim_win_is_valid(win) then
    return
  end
  local b = api.nvim_win_get_buf(win)
  if not tables[b] then
    return
  end
  use(b)
  local rows = {}
  for _, id in ipairs(blk.order) do
    local first, last = blk.thought_rows(b, id)
    if first then
      rows[#rows + 1] = { first, last }
    end
  end
  windows.fold_all(win, rows)
end

--- The last block is over (a block follows it, or the turn ended).
---@param b integer
local function finish_last(b)
  local order = blk.order
  local id = order[#order]
  if id then
    local start, finish = blk.range(b, id)
    require("gemini_companion.agent.markdown").finish(b, id, start, finish)
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
  local blocks = blk.blocks
  local states = fold_states(b, id)
  if op.op == "block" then
    if not blocks[id] then
      finish_last(b)
    end
    blk.draw(b, op)
    local start, finish = blk.range(b, id)
    md.update(b, id, blocks[id].kind, start, start, finish, true)
  else
    local first, count = blk.append(b, id, op.text, op.prefix or "")
    md.update(b, id, blocks[id].kind, blk.start(b, id), first, count, false)
  end
  if blocks[id].kind == "thought" then
    fold_thought(b, id, states)
  end
end

local levels = { info = vim.log.levels.INFO, warning = vim.log.levels.WARN, error = vim.log.levels.ERROR }
--- The conversation a batch draws into: the one it names (the shown one when it
--- names none: the tests'), and whether the batch is stale: of a session stopped
--- and replaced since (conversations.lua), whose agent is still ending. A stale
--- batch's lines are drawn (the stopped session draws nothing after its last
--- notice), its state never.
---@param ops table[]
---@return gemini_companion.AgentConversationSlot c, boolean stale
local function target(ops)
  local conversations = require("gemini_companion.agent.conversations")
  local first = ops[1]
  if not (first and first.op == "conversation") then
    return conversations.current(), false
  end
  local old = conversations.retired(first.id)
  if old then
    return old, true
  end
  return conversations.get(first.id) or conversations.current(), false
end

--- Draw one batch (agent/view.py, through host.lua's agent_draw). Each op is
--- drawn on its own: one that fails is shown as failed and the others still draw.
---
--- - `{ op = "block", id, lines, kind, pending? }`: create the block at the end of
---   the transcript, or replace its lines; `pending`: the call id of the
---   confirmation these lines show (a confirmation without an id is answered
---   only once it is drawn);
--- - `{ op = "append", id, text, prefix }`: append text to the last line of the
---   (last) block `id`; new lines start with `prefix`;
--- - `{ op = "state", state }`: the agent's state (`agent.state()`);
--- - `{ op = "notify", text, level }`: a message to the user (agent/messages.lua);
--- - `{ op = "checktime" }`: `:checktime`, a file the agent wrote may be loaded;
--- - `{ op = "bottom" }`: the transcript's windows show its last line;
--- - `{ op = "conversation", id }`, first in a conversation's batches: the one it
---   draws into (a batch of one stopped and replaced since is stale: `target`).
---@param ops table[]
function M._apply(ops)
  local c, stale = target(ops)
  local b = M.buffer(c.id)
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
          blk.draw_failed(b, op, err)
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
    if op.op == "state" and stale then
      read_only(b) -- a stopped session's: the conversation's state is the new one's
    elseif op.op == "state" then
      if op.state and op.state.state ~= "working" then
        read_only(b)
        pcall(finish_last, b)
        windows.follow_now(b)
      end
      require("gemini_companion.agent.state")._update(op.state, c)
    elseif op.op == "notify" then
      pcall(messages.post, op.text, levels[op.level] or vim.log.levels.INFO)
    elseif op.op == "checktime" then
      pcall(vim.cmd.checktime)
    elseif op.op == "bottom" then
      windows.bottom(b)
    end
  end
end

--- The call id of the oldest confirmation in `pending` whose lines are in the
--- transcript (what `:GeminiAccept` without an id answers), or nil.
---@param pending gemini_companion.AgentPending[]
---@return gemini_companion.AgentPending?
function M.first_shown(pending)
  M.buffer()
  for _, p in ipairs(pending) do
    if blk.shows(p.id) then
      return p
    end
  end
end

--- The transcript shows the confirmation of this tool call in full.
---@param call_id string
---@return boolean
function M.shows(call_id)
  M.buffer()
  return blk.shows(call_id)
end

--- The transcript's lines (for tests and for `:w` to a file by the user) of
--- conversation `id` (default: the one shown).
---@param id? integer
---@return string[]
function M.lines(id)
  return api.nvim_buf_get_lines(M.buffer(id), 0, -1, false)
end

return M
