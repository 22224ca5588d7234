--- Context forwarding (ide-companion-spec.md section II): which files are open,
--- which one is active, the cursor and the Visual selection, sent to the Python
--- side (rplugin/python3/gemini_companion/context.py) with `rpcnotify`, never
--- waiting. Python keeps the state, debounces buffer events and sends
--- `ide/contextUpdate`.
---
--- `CursorMoved` is the hot path: it only restarts one reusable `vim.uv` timer
--- (no `rpcnotify`, no queries). When the cursor has rested for `debounce_ms`, the
--- timer reads the position (and, in Visual mode, the selected text) once and
--- sends it; Python then sends at once instead of debouncing a second time.
--- Whether the current buffer is a file is kept in an upvalue, updated on
--- `BufEnter`/`WinEnter` and friends, so a move never asks.
local M = {}

local api, fn = vim.api, vim.fn

local group_name = "gemini_companion_context"
-- Enough lines for 16 KiB of selection (each line is at least its newline).
local max_selection_lines = 16384
local max_selection_bytes = 16384

-- Visual and Select modes, by the first character of the mode, and the
-- `getregion()` type each one selects.
local region_types = { v = "v", V = "V", ["\22"] = "\22", s = "v", S = "V", ["\19"] = "\22" }

---@type uv.uv_timer_t?
local timer = nil
local debounce_ms = 50
local enabled = false
-- Bumped on every enable/disable: a scheduled callback from an older run drops its work.
local generation = 0
-- The current buffer and whether it is a file (a BufEnter/WinEnter cache).
local current_buf = -1
local current_is_file = false
---@type table<integer, string> what Python was told: buffer -> path
local known = {}

---@param kind string
---@param ... any
local function send(kind, ...)
  require("gemini_companion.host").context(kind, ...)
end

--- The path Python should know `buf` by, or nil when it is not a file: unlisted,
--- a special `'buftype'` (help, terminal, nofile, prompt, quickfix, ...), unnamed,
--- or a `scheme://` name (oil://, fugitive://, term://). Whether the file exists
--- on disk is checked by Python, for the few files it sends.
---@param buf integer
---@return string?
function M.file_path(buf)
  if not api.nvim_buf_is_valid(buf) then
    return nil
  end
  if not vim.bo[buf].buflisted or vim.bo[buf].buftype ~= "" then
    return nil
  end
  local name = api.nvim_buf_get_name(buf)
  if name == "" or name:find("^%a[%w+.-]*://") then
    return nil
  end
  return name
end

--- Text of a Visual region, at most a little over 16 KiB (Python cuts it exactly).
---@param from integer[] getpos() of one end
---@param to integer[] getpos() of the other end
---@param region_type string "v", "V" or "\22"
---@return string?
local function region_text(from, to, region_type)
  if from[2] == 0 or to[2] == 0 then
    return nil
  end
  -- Huge selections (ggVG in a big file): read no more lines than can be sent.
  if math.abs(to[2] - from[2]) >= max_selection_lines then
    local first = from[2] < to[2] and from or to
    to = { 0, first[2] + max_selection_lines - 1, vim.v.maxcol, 0 }
    from = first
  end
  local ok, lines = pcall(fn.getregion, from, to, { type = region_type })
  if not ok then
    return nil
  end
  local text = table.concat(lines, "\n")
  if #text > max_selection_bytes + 4 then
    text = text:sub(1, max_selection_bytes + 4)
  end
  return text
end

--- The cursor as the CLI counts it: 1-based line and character (not byte).
---@return integer line
---@return integer character
local function cursor_position()
  -- charcol() is 0 in a buffer not read yet (BufEnter of :edit): that is 1:1.
  return math.max(fn.line("."), 1), math.max(fn.charcol("."), 1)
end

--- Send the settled cursor, or in Visual mode the cursor and the selection.
local function send_position()
  local buf = api.nvim_get_current_buf()
  if not current_is_file or buf ~= current_buf then
    return
  end
  local line, col = cursor_position()
  local region_type = region_types[api.nvim_get_mode().mode:sub(1, 1)]
  if region_type then
    send("selection", buf, line, col, region_text(fn.getpos("v"), fn.getpos("."), region_type))
  else
    send("cursor", buf, line, col)
  end
end

-- The timer's callback, made once per enable(): it runs in a fast (libuv)
-- context, so the reading is scheduled onto the main loop, where the run number
-- drops the work of a run that has ended since.
---@type fun()?
local on_timer = nil

---@param run integer
local function make_on_timer(run)
  local function read()
    if enabled and run == generation then
      send_position()
    end
  end
  return function()
    vim.schedule(read)
  end
end

local update_time = vim.uv.update_time

local function restart_timer()
  if timer and on_timer then
    update_time()
    timer:start(debounce_ms, 0, on_timer)
  end
end

--- CursorMoved, CursorMovedI: the hot path. Keep it this small.
local function on_cursor_moved()
  if current_is_file then -- only ever true while enabled, with the timer made
    -- libuv counts from the time cached when this loop iteration began, which
    -- can be milliseconds ago on a busy loop: the quiet time starts now.
    update_time()
    timer:start(debounce_ms, 0, on_timer)
  end
end

--- Leaving the file (another window, another buffer): send what is pending now,
--- while the position can still be read.
local function flush_pending()
  if timer and timer:is_active() then
    timer:stop()
    send_position()
  end
end

--- Tell Python what `buf` is now, if that changed; returns its path.
---@param buf integer
---@param force? boolean send even if unchanged (the file may have appeared on disk)
---@return string?
local function refresh(buf, force)
  local path = M.file_path(buf)
  if path ~= known[buf] or (force and path) then
    if path then
      send("buffer", buf, path)
    elseif known[buf] then
      send("close", buf)
    end
    known[buf] = path
  end
  return path
end

--- BufEnter, WinEnter: a file becomes the active file; anything else (a terminal,
--- help, a scratch buffer) leaves the active file as it is.
local function on_enter()
  local buf = api.nvim_get_current_buf()
  local path = refresh(buf)
  if fn.win_gettype() == "autocmd" then
    -- `nvim_buf_call()` on a buffer no window shows (a task runner's hidden
    -- terminal): current only for the call, the user stays where they are.
    return
  end
  current_buf = buf
  current_is_file = path ~= nil
  if path then
    send("focus", buf, path, cursor_position())
  end
end

--- BufWinEnter, BufFilePost, BufWritePost, OptionSet: `buf` may have become a
--- file or stopped being one.
---@param buf integer
---@param force? boolean
local function on_buffer_changed(buf, force)
  local path = refresh(buf, force)
  if buf == api.nvim_get_current_buf() and (path ~= nil) ~= current_is_file then
    -- Checked once the event's caller is done: a buffer current only for an
    -- `nvim_buf_call()` (another plugin's `termopen()` in a hidden buffer: its
    -- 'buftype' and name change) is not where the user is, and no BufEnter
    -- comes when the user's window is current again.
    vim.schedule(function()
      local now = api.nvim_get_current_buf()
      if enabled and (now ~= current_buf or (known[now] ~= nil) ~= current_is_file) then
        on_enter()
      end
    end)
  end
end

---@param args vim.api.keyset.create_autocmd.callback_args
local function on_mode_changed(args)
  local ev = vim.v.event
  local old_type = region_types[ev.old_mode:sub(1, 1)]
  local new_type = region_types[ev.new_mode:sub(1, 1)]
  if not current_is_file or args.buf ~= current_buf then
    return
  end
  if new_type then
    -- Entering Visual mode (or switching between v, V and Ctrl-V): even
    -- without a move there is a selection to report.
    restart_timer()
  elseif old_type and timer and timer:is_active() then
    -- Left Visual mode before the selection was sent (a quick <C-w>l to the
    -- terminal): the live region is gone, the '< and '> marks hold it.
    timer:stop()
    local line, col = cursor_position()
    send("selection", current_buf, line, col, region_text(fn.getpos("'<"), fn.getpos("'>"), old_type))
  end
end

--- Everything Python needs to start from: every listed file buffer with its last
--- use, and the focused file with the cursor.
local function sync()
  local buffers, best, best_used = {}, nil, -1
  known = {}
  for _, info in ipairs(fn.getbufinfo({ buflisted = 1 })) do
    local path = M.file_path(info.bufnr)
    if path then
      known[info.bufnr] = path
      buffers[#buffers + 1] = { info.bufnr, path, info.lastused }
      if info.lastused >= best_used then -- ties (1 s resolution): the later buffer
        best, best_used = info, info.lastused
      end
    end
  end
  local buf = api.nvim_get_current_buf()
  current_buf = buf
  current_is_file = known[buf] ~= nil
  local focus = vim.NIL
  if current_is_file then
    focus = { buf, cursor_position() }
  else
    -- In a terminal (or another non-file buffer) now: the file of the window the
    -- user came from, else the file used last, is still the one being worked on.
    local prev_win = fn.win_getid(fn.winnr("#"))
    local win, target = nil, nil
    if prev_win ~= 0 and prev_win ~= api.nvim_get_current_win() and known[api.nvim_win_get_buf(prev_win)] then
      win, target = prev_win, api.nvim_win_get_buf(prev_win)
    elseif best and best.lastused > 0 then
      target = best.bufnr
      win = fn.win_findbuf(target)[1]
    end
    if target then
      local pos = win and api.nvim_win_get_cursor(win) or api.nvim_buf_get_mark(target, '"')
      local line = math.max(pos[1], 1)
      local text = api.nvim_buf_get_lines(target, line - 1, line, false)[1] or ""
      focus = { target, line, math.max(fn.charidx(text, math.min(pos[2], #text)), 0) + 1 }
    end
  end
  send("sync", buffers, focus)
end

--- Start forwarding (the server has been asked to start). Safe to call again:
--- Python keeps what it knows, so a repeated sync sends nothing new.
---@param opts? gemini_companion.ContextConfig
function M.enable(opts)
  debounce_ms = math.max(0, math.floor((opts and opts.debounce_ms) or 50))
  generation = generation + 1
  enabled = true
  timer = timer or vim.uv.new_timer()
  on_timer = make_on_timer(generation)
  local group = api.nvim_create_augroup(group_name, { clear = true })
  local function autocmd(events, callback, pattern)
    api.nvim_create_autocmd(events, { group = group, callback = callback, pattern = pattern })
  end
  autocmd({ "CursorMoved", "CursorMovedI" }, on_cursor_moved)
  autocmd("ModeChanged", on_mode_changed)
  autocmd({ "BufEnter", "WinEnter" }, on_enter)
  autocmd({ "BufLeave", "WinLeave" }, flush_pending)
  autocmd({ "BufAdd", "BufWinEnter", "BufFilePost" }, function(args)
    on_buffer_changed(args.buf)
  end)
  autocmd("BufWritePost", function(args)
    on_buffer_changed(args.buf, true)
  end)
  autocmd("OptionSet", function()
    on_buffer_changed(api.nvim_get_current_buf())
  end, { "buftype", "buflisted" })
  -- A terminal opened: a CLI may be about to connect, and the server loads what
  -- serving it takes now rather than while the CLI waits (server.py). Said once,
  -- at once if a terminal is already open (one opened before the start: a CLI may
  -- be run in its shell).
  local terminal_open = false
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if vim.bo[buf].buftype == "terminal" then
      terminal_open = true
      break
    end
  end
  if terminal_open then
    send("terminal")
  else
    api.nvim_create_autocmd("TermOpen", {
      group = group,
      once = true,
      callback = function()
        send("terminal")
      end,
    })
  end
  autocmd({ "BufDelete", "BufWipeout" }, function(args)
    if known[args.buf] then
      known[args.buf] = nil
      send("close", args.buf)
    end
    if args.buf == current_buf then
      current_is_file = false
    end
  end)
  sync()
end

--- Stop forwarding (the server stops).
function M.disable()
  enabled = false
  generation = generation + 1
  pcall(api.nvim_del_augroup_by_name, group_name)
  if timer then
    timer:stop()
  end
  known = {}
  current_is_file = false
  current_buf = -1
end

---@return boolean
function M.enabled()
  return enabled
end

return M
