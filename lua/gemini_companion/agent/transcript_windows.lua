--- The windows showing the transcript (transcript.lua draws the buffer).
---
--- Folds: a thought (all its lines but the blank one before it) is one manual
--- fold in each window showing the transcript, made when the thought is drawn,
--- remade as it grows, and made again for a window the transcript enters later:
--- a fold expression would be evaluated for every line of a streaming answer.
---
--- Following the stream: a window whose cursor is on the last line (or where
--- this module last put it) follows: its cursor goes to the new last line, at
--- most once per frame. The buffer is written at once; only the windows' views
--- wait, so the lines a batch appends below a window's last row cost no
--- drawing, and a fast stream scrolls ~60 times a second, not once per batch.
--- The first batch after a pause moves them at once, as do the end of a turn
--- and the `bottom` op.
---
--- Switching conversations: a window that leaves a conversation's transcript
--- keeps its place there (its cursor and top line, or that it followed the end),
--- and gets it back when it shows that transcript again.
local M = {}

local api = vim.api

-- Folds --------------------------------------------------------------------------

--- Whether the fold at row `first` is closed in each window showing `b`, read
--- before the thought there changes: a fold Neovim shrank to one line (lines
--- replaced at its end) reads as open, however it was.
---@param b integer
---@param first integer
---@return table<integer, boolean>
function M.fold_states(b, first)
  local states = {}
  for _, win in ipairs(vim.fn.win_findbuf(b)) do
    states[win] = api.nvim_win_call(win, function()
      return vim.fn.foldclosed(first) ~= -1
    end)
  end
  return states
end

--- Make rows first..last one fold in window `win` (manual folds only): the fold
--- already there is replaced (Neovim's manual folds do not grow with the lines
--- appended to them), closed as it was (`closed`), or, new, as 'foldlevel' has it.
---@param win integer
---@param first integer
---@param last integer
---@param closed boolean?
local function fold_rows(win, first, last, closed)
  last = math.min(last, api.nvim_buf_line_count(api.nvim_win_get_buf(win)))
  if vim.wo[win].foldmethod ~= "manual" or first > last then
    return
  end
  if closed == nil then
    closed = vim.wo[win].foldlevel == 0
  end
  api.nvim_win_call(win, function()
    local fn = vim.fn
    local view = fn.winsaveview()
    if fn.foldlevel(first) > 0 then
      api.nvim_win_set_cursor(win, { first, 0 })
      pcall(vim.cmd, "normal! zd")
    end
    vim.cmd(("%d,%dfold"):format(first, last))
    if not closed then
      vim.cmd(("%dfoldopen"):format(first))
    end
    fn.winrestview(view)
  end)
end

--- Make rows first..last one fold in every window showing `b`, closed as
--- `states` (M.fold_states) has it.
---@param b integer
---@param first integer
---@param last integer
---@param states table<integer, boolean>?
function M.fold(b, first, last, states)
  for _, win in ipairs(vim.fn.win_findbuf(b)) do
    fold_rows(win, first, last, states and states[win])
  end
end

--- Make each of `rows` ({ first, last }) a fold in window `win`, instead of the
--- folds it has (manual folds only).
---@param win integer
---@param rows { [1]: integer, [2]: integer }[]
function M.fold_all(win, rows)
  if vim.wo[win].foldmethod ~= "manual" then
    return
  end
  api.nvim_win_call(win, function()
    local view = vim.fn.winsaveview()
    vim.cmd("normal! zE")
    local open = vim.wo[win].foldlevel > 0
    local count = api.nvim_buf_line_count(api.nvim_win_get_buf(win))
    for _, row in ipairs(rows) do
      -- Never past the end (rows of blocks the buffer lost: E16).
      if row[1] <= count then
        vim.cmd(("%d,%dfold"):format(row[1], math.min(row[2], count)))
        if open then
          vim.cmd(("%dfoldopen"):format(row[1]))
        end
      end
    end
    vim.fn.winrestview(view)
  end)
end

-- Following ----------------------------------------------------------------------

local FRAME_NS = 16 * 1000000

--- Each following window has an extmark (its id is the window's) on the row its
--- cursor was noted on: the mark moves with the lines inserted or deleted above
--- it, as Neovim moves the cursor, so a block above that grows or shrinks (a
--- tool block getting its result) is not taken for the user moving the cursor.
local follow_ns = api.nvim_create_namespace("gemini_companion_agent_follow")

---@type table<integer, true> the windows following the stream
local follows = {}
---@type uv.uv_timer_t?
local follow_timer = nil
local follow_due = false
local last_move = 0

--- The row (1-based) window `win` was noted on, as lines above it moved it.
---@param b integer
---@param win integer
---@return integer?
local function noted_row(b, win)
  local pos = api.nvim_buf_get_extmark_by_id(b, follow_ns, win, {})
  return pos[1] and pos[1] + 1
end

---@param b integer
---@param win integer
---@param row integer
local function follow(b, win, row)
  follows[win] = true
  -- Left gravity: lines written at the mark (the empty last line replaced) go
  -- after it, as they go after the cursor.
  api.nvim_buf_set_extmark(b, follow_ns, row - 1, 0, { id = win, right_gravity = false })
end

---@param b integer
---@param win integer
local function unfollow(b, win)
  follows[win] = nil
  pcall(api.nvim_buf_del_extmark, b, follow_ns, win)
end

--- Note which windows follow the stream, before a batch is drawn: those on the
--- last line (or the one before), and those still where they were last put.
---@param b integer
function M.note_following(b)
  local count = api.nvim_buf_line_count(b)
  for _, win in ipairs(vim.fn.win_findbuf(b)) do
    local row = api.nvim_win_get_cursor(win)[1]
    -- Still following (its mark already on the row), or now at the end.
    if not (follows[win] and noted_row(b, win) == row) then
      if row >= count - 1 then
        follow(b, win, row)
      else
        unfollow(b, win)
      end
    end
  end
end

--- Put each following window's cursor on the last line of `b`, unless the user
--- moved it since it was noted.
---@param b integer
local function move_followers(b)
  follow_due = false
  if follow_timer then
    follow_timer:stop()
  end
  last_move = vim.uv.hrtime()
  if not api.nvim_buf_is_valid(b) then
    follows = {}
    return
  end
  local count = api.nvim_buf_line_count(b)
  for win in pairs(follows) do
    local row = api.nvim_win_is_valid(win) and api.nvim_win_get_buf(win) == b and api.nvim_win_get_cursor(win)[1]
    -- Still on its mark, or on the last lines (put there by lines deleted
    -- under it, or by the user).
    if row and (row == noted_row(b, win) or row >= count - 1) then
      if row ~= count then
        pcall(api.nvim_win_set_cursor, win, { count, 0 })
      end
      follow(b, win, count)
    else
      unfollow(b, win)
    end
  end
end

--- `b` changed: move the windows following it now when none moved within the
--- last frame, else once that frame is over.
---@param b integer
function M.follow_soon(b)
  if next(follows) == nil then
    return
  end
  -- The batch just drawn can take a following window's cursor where its mark did
  -- not go: a block at the end replaced by a shorter one (a confirmation's card
  -- once answered) deletes the cursor's line, the cursor stays on the new last
  -- line and the mark goes to the deletion's start. No key ran during the batch,
  -- so the cursor is where following put it: note it there again.
  for win in pairs(follows) do
    if api.nvim_win_is_valid(win) and api.nvim_win_get_buf(win) == b then
      follow(b, win, api.nvim_win_get_cursor(win)[1])
    end
  end
  if follow_due then
    return
  end
  local since = vim.uv.hrtime() - last_move
  if since >= FRAME_NS then
    move_followers(b)
    return
  end
  follow_due = true
  follow_timer = follow_timer or assert(vim.uv.new_timer())
  follow_timer:start(
    math.ceil((FRAME_NS - since) / 1000000),
    0,
    vim.schedule_wrap(function()
      if follow_due then
        move_followers(b)
      end
    end)
  )
end

--- Move the windows following `b` now if a move waits (the turn ended).
---@param b integer
function M.follow_now(b)
  if follow_due then
    move_followers(b)
  end
end

-- Switching conversations ------------------------------------------------------

---@type table<integer, table<integer, table|false>> buffer -> window -> its view
--- (winsaveview()) when it went to another transcript; false: it followed the end
local views = {}

--- Window `win` is about to show another transcript: note its place in the one
--- it shows.
---@param win integer
function M.leave(win)
  local b = api.nvim_win_get_buf(win)
  local row = api.nvim_win_get_cursor(win)[1]
  local following = row >= api.nvim_buf_line_count(b) - 1 or (follows[win] and noted_row(b, win) == row)
  views[b] = views[b] or {}
  views[b][win] = not following and api.nvim_win_call(win, vim.fn.winsaveview)
  unfollow(b, win)
end

--- Window `win` shows another transcript now: its place there as it left it, or
--- (it followed the end there, or is new to it) the last line, following.
---@param win integer
function M.enter(win)
  local b = api.nvim_win_get_buf(win)
  local view = views[b] and views[b][win]
  if view then
    api.nvim_win_call(win, function()
      vim.fn.winrestview(view)
    end)
    return
  end
  local count = api.nvim_buf_line_count(b)
  pcall(api.nvim_win_set_cursor, win, { count, 0 })
  follow(b, win, count)
end

--- Every window showing `b` shows its last line (the `bottom` op).
---@param b integer
function M.bottom(b)
  for _, win in ipairs(vim.fn.win_findbuf(b)) do
    follow(b, win, api.nvim_win_get_cursor(win)[1])
  end
  move_followers(b)
end

return M
