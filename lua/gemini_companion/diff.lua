--- The diff view (ide-companion-spec.md section III): a tab with the file as it is
--- now beside the agent's proposal, in diff mode. The Python side (diff.py) owns
--- the protocol and calls the `_`-prefixed functions; this module owns the windows
--- and buffers and reports the user's answer through host.lua.
---
--- What the left side shows: the file's own buffer when it is loaded, unsaved edits
--- included (it stays the user's buffer: editable, never written or reloaded by the
--- plugin); otherwise a read-only copy of the file on disk; for a new file, an empty
--- buffer. The proposal is a scratch buffer (buftype=acwrite): `:w` accepts it.
local M = {}

local api = vim.api

---@class gemini_companion.DiffView
---@field id integer
---@field file_path string
---@field session string MCP session of the CLI that asked, or "agent" (the agent panel)
---@field call_id? string the agent's tool call (an agent panel's edit)
---@field tab integer
---@field proposal integer proposal buffer
---@field proposal_win integer
---@field original integer left buffer
---@field original_win integer
---@field original_owned boolean the left buffer is a copy this module made
---@field unsaved boolean the file's buffer had unsaved changes when the diff opened
---@field new_file boolean
---@field state "open"|"accepting"|"orphaned"|"closed"
---@field kept? { tick: integer, eol: boolean, fileformat: string } the Python side keeps the proposal as the client sent it: the buffer as shown, for an unchanged accept

---@type table<integer, gemini_companion.DiffView>
local views = {}

local augroup = api.nvim_create_augroup("gemini_companion_diff", { clear = true })

local function notify(message, level)
  vim.notify(message, level or vim.log.levels.INFO, { title = "Gemini companion" })
end

---@param s string
---@return string
local function statusline_escape(s)
  return (s:gsub("%%", "%%%%"))
end

---@param path string
---@return string
local function display_path(path)
  return vim.fn.fnamemodify(path, ":~:.")
end

---@param buf integer
---@return string
local function buffer_text(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local sep = vim.bo[buf].fileformat == "dos" and "\r\n" or vim.bo[buf].fileformat == "mac" and "\r" or "\n"
  return table.concat(lines, sep) .. (vim.bo[buf].eol and sep or "")
end

--- The view of the current tab, else the only one still waiting for an answer
--- (views of disconnected CLIs aside), else the only one.
---@return gemini_companion.DiffView?
---@return string? error
local function current_view()
  local tab = api.nvim_get_current_tabpage()
  local buf = api.nvim_get_current_buf()
  local all, live = {}, {}
  for _, view in pairs(views) do
    if view.tab == tab or view.proposal == buf then
      return view
    end
    all[#all + 1] = view
    if view.state ~= "orphaned" then
      live[#live + 1] = view
    end
  end
  if #live == 1 then
    return live[1]
  end
  if #all == 1 then
    return all[1]
  end
  if #all == 0 then
    return nil, "no Gemini diff is open"
  end
  return nil, "several Gemini diffs are open: run this in the tab of the one you mean"
end

--- A key as the user types it: <LocalLeader>a with the default leader is \a.
---@param lhs string
---@return string
local function key_label(lhs)
  local function leader(value)
    return value == " " and "<Space>" or value
  end
  return (
    lhs
      :gsub("<[Ll]ocal[Ll]eader>", function()
        return leader(vim.g.maplocalleader or "\\")
      end)
      :gsub("<[Ll]eader>", function()
        return leader(vim.g.mapleader or "\\")
      end)
  )
end

---@param view gemini_companion.DiffView
local function set_winbars(view)
  local keymaps = require("gemini_companion.config").get().diff.keymaps
  local name = statusline_escape(display_path(view.file_path))
  if api.nvim_win_is_valid(view.proposal_win) then
    local bar
    if view.state == "orphaned" then
      bar = "%#GeminiDiffWarning# Gemini CLI disconnected:%< this proposal can no longer be sent."
        .. " Copy what you need, then :GeminiReject"
    else
      -- Short enough for half an 80-column screen; %< cuts the hint, not the name.
      local accept = ":w" .. (keymaps.accept and (" or " .. key_label(keymaps.accept)) or "")
      local reject = ":q" .. (keymaps.reject and (" or " .. key_label(keymaps.reject)) or "")
      bar = "%#GeminiDiffTitle# Proposed: "
        .. name
        .. " %#GeminiDiffHint#%<  accept "
        .. statusline_escape(accept)
        .. "  reject "
        .. statusline_escape(reject)
    end
    vim.wo[view.proposal_win].winbar = bar
  end
  if api.nvim_win_is_valid(view.original_win) then
    local what = view.new_file and "new file"
      or view.original_owned and "on disk"
      or view.unsaved and "%#GeminiDiffWarning#your buffer, unsaved changes: accepting writes the proposal to disk and keeps them here"
      or "your buffer"
    vim.wo[view.original_win].winbar = "%#GeminiDiffTitle# Current: " .. name .. " %#GeminiDiffHint#%<(" .. what .. ")"
  end
end

---@param view gemini_companion.DiffView
---@param result string
local function fire_closed(view, result)
  api.nvim_exec_autocmds("User", {
    pattern = "GeminiDiffClosed",
    modeline = false,
    data = { id = view.id, file_path = view.file_path, session = view.session, result = result },
  })
end

--- Close the view's tab and buffers; the user's own buffer is left as it is.
---@param view gemini_companion.DiffView
---@param result string
local function teardown(view, result)
  if view.state == "closed" then
    return
  end
  local was_orphaned = view.state == "orphaned"
  view.state = "closed"
  views[view.id] = nil
  if not view.original_owned and api.nvim_win_is_valid(view.original_win) then
    -- Restores the options :diffthis changed in the window of the user's buffer.
    api.nvim_win_call(view.original_win, function()
      vim.cmd("diffoff")
      vim.wo.winbar = ""
    end)
  end
  if api.nvim_tabpage_is_valid(view.tab) then
    if #api.nvim_list_tabpages() == 1 then
      vim.cmd("tabnew") -- closing the last tab's windows would quit Neovim
    end
    for _, win in ipairs(api.nvim_tabpage_list_wins(view.tab)) do
      -- force: a modified buffer of the user's becomes hidden, never discarded
      pcall(api.nvim_win_close, win, true)
    end
  end
  for _, buf in ipairs({ view.proposal, view.original_owned and view.original or nil }) do
    if api.nvim_buf_is_valid(buf) then
      pcall(api.nvim_buf_delete, buf, { force = true })
    end
  end
  fire_closed(view, was_orphaned and result ~= "replaced" and "disconnected" or result)
end

---@param view gemini_companion.DiffView
---@param buf integer
local function map_keys(view, buf)
  local keymaps = require("gemini_companion.config").get().diff.keymaps
  if keymaps.accept then
    vim.keymap.set("n", keymaps.accept, function()
      M.accept(view.id)
    end, { buffer = buf, desc = "Accept the Gemini proposal" })
  end
  if keymaps.reject then
    vim.keymap.set("n", keymaps.reject, function()
      M.reject(view.id)
    end, { buffer = buf, desc = "Reject the Gemini proposal" })
  end
end

--- Lines of `text`, split at "\n". The text crosses the RPC channel as one string and
--- is split here: much faster than a list of lines for big files.
---@param text string
---@return string[]
local function split_lines(text)
  local lines, n, pos = {}, 0, 1
  local find, sub = string.find, string.sub
  while true do
    local nl = find(text, "\n", pos, true)
    n = n + 1
    if not nl then
      lines[n] = sub(text, pos)
      return lines
    end
    lines[n] = sub(text, pos, nl - 1)
    pos = nl + 1
  end
end

---@param buf integer
---@return string
local function buffer_body(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

-- From this size on, a proposal's text goes to the Python side through a private file
-- (diff.py reads and removes it): an RPC message that big would leave the host's
-- message buffer at its size for good.
local FILE_HANDOFF_BYTES = 256 * 1024

--- The proposal's text for the Python side: `{text, eol, fileformat}`, or for a big
--- one `text_file` naming a file (0600, in Neovim's private temp folder) that holds it.
---@param buf integer
---@return { text: string, text_file?: string, eol: boolean, fileformat: string }
local function proposal_content(buf)
  local bo = vim.bo[buf]
  local content = { text = buffer_body(buf), eol = bo.eol, fileformat = bo.fileformat }
  if #content.text >= FILE_HANDOFF_BYTES then
    local path = vim.fn.tempname()
    local fd = vim.uv.fs_open(path, "wx", tonumber("600", 8))
    if fd then
      local written = vim.uv.fs_write(fd, content.text, 0)
      vim.uv.fs_close(fd)
      if written == #content.text then
        content.text, content.text_file = "", path
      else -- a full disk: the text goes inline, as a small one does
        vim.uv.fs_unlink(path)
      end
    end
  end
  return content
end

--- The bytes of `path`, whole.
---@param path string
---@return string
local function read_file(path)
  local fd = assert(vim.uv.fs_open(path, "r", 0))
  local ok, data = pcall(function()
    local size = assert(vim.uv.fs_fstat(fd)).size
    local data = assert(vim.uv.fs_read(fd, size, 0))
    if #data == size then
      return data -- the usual case: one string, no copy
    end
    local parts = { data }
    local read = #data
    while read < size do
      local part = assert(vim.uv.fs_read(fd, size - read, read))
      if part == "" then
        break
      end
      parts[#parts + 1] = part
      read = read + #part
    end
    return table.concat(parts)
  end)
  vim.uv.fs_close(fd)
  if not ok then
    error(data, 0)
  end
  return data
end

--- Set the filetype for highlighting; a failing filetype plugin does not stop the diff.
---@param buf integer
---@param filetype string
local function set_filetype(buf, filetype)
  local ok, err = pcall(function()
    vim.bo[buf].filetype = filetype
  end)
  if not ok then
    notify(("filetype %s failed in the diff view: %s"):format(filetype, err), vim.log.levels.WARN)
  end
end

---@param path string
---@param filetype string?
---@param created integer[] the buffer is added here at once, so a failure below removes it
---@return integer buf
---@return boolean new_file
local function disk_copy(path, filetype, created)
  local buf = api.nvim_create_buf(false, true)
  created[#created + 1] = buf
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].undolevels = -1
  local stat = vim.uv.fs_stat(path)
  local new_file = stat == nil
  if stat and stat.type ~= "file" then
    -- diff.py refused it already; checked again right before the read, which would
    -- block the main loop for ever on a FIFO or a pipe.
    error(("%s is not a regular file"):format(path), 0)
  end
  if not new_file then
    local before = {}
    for _, b in ipairs(api.nvim_list_bufs()) do
      before[b] = true
    end
    -- Neovim's own reader: fast, and it detects the fileformat and encoding as :edit does.
    api.nvim_buf_call(buf, function()
      vim.cmd("silent noautocmd keepalt keepjumps read ++edit " .. vim.fn.fnameescape(path))
    end)
    api.nvim_buf_set_lines(buf, 0, 1, false, {})
    -- :read registers the file name as an (unloaded, unlisted) buffer: not ours to keep.
    for _, b in ipairs(api.nvim_list_bufs()) do
      if not before[b] and b ~= buf and not api.nvim_buf_is_loaded(b) then
        pcall(api.nvim_buf_delete, b, { force = true })
      end
    end
  end
  pcall(api.nvim_buf_set_name, buf, "gemini://current" .. path)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if filetype then
    set_filetype(buf, filetype)
  end
  return buf, new_file
end

---@class gemini_companion.DiffSpec
---@field id integer
---@field file_path string
---@field text string the lines joined by "\n"
---@field text_file? string a private file holding `text` instead (a big proposal)
---@field eol boolean
---@field fileformat string
---@field session string
---@field call_id? string
---@field outside_workspace? boolean outside the workspace: shown only if loaded already
---@field kept? boolean the Python side keeps the proposal as it came (an unchanged accept sends it)

---@param spec gemini_companion.DiffSpec
---@param created { bufs: integer[], tabs_before?: integer[], bufs_before?: integer[] } what to undo if opening fails
---@return gemini_companion.DiffView
local function open_view(spec, created)
  local path = spec.file_path
  for _, view in pairs(views) do
    if view.file_path == path then -- a view left by a CLI that is gone
      teardown(view, "replaced")
    end
  end
  require("gemini_companion.highlights").define() -- setup() may not have run
  local filetype = vim.filetype.match({ filename = path })

  local proposal = api.nvim_create_buf(false, true)
  created.bufs[#created.bufs + 1] = proposal
  local bo = vim.bo[proposal]
  bo.buftype = "acwrite"
  bo.bufhidden = "wipe"
  bo.swapfile = false
  bo.undolevels = -1 -- the proposal is the start of the undo history, not a change
  bo.fixeol = false
  bo.fileformat = spec.fileformat
  bo.eol = spec.eol
  api.nvim_buf_set_lines(proposal, 0, -1, false, split_lines(spec.text_file and read_file(spec.text_file) or spec.text))
  bo.undolevels = -123456 -- back to the global value
  -- The buffer as shown, before any filetype plugin runs: any change since, even one
  -- undone, and the accept sends the buffer's text.
  local kept = spec.kept
      and { tick = api.nvim_buf_get_changedtick(proposal), eol = spec.eol, fileformat = spec.fileformat }
    or nil
  local name = "gemini://diff" .. path
  local stale = vim.fn.bufnr("^" .. vim.fn.escape(name, "\\/.*$^~[]") .. "$")
  if stale > 0 and stale ~= proposal then
    pcall(api.nvim_buf_delete, stale, { force = true })
  end
  api.nvim_buf_set_name(proposal, name)
  if filetype then
    set_filetype(proposal, filetype)
  end
  bo.modified = false

  local target = require("gemini_companion.reload").buffers_of(path)[1]
  local original, owned, new_file = target, false, false
  if not original then
    original, new_file = disk_copy(path, filetype, created.bufs)
    owned = true
  end

  created.tabs_before = api.nvim_list_tabpages()
  created.bufs_before = api.nvim_list_bufs()
  vim.cmd("tabnew")
  local tab = api.nvim_get_current_tabpage()
  local original_win = api.nvim_get_current_win()
  local placeholder = api.nvim_get_current_buf()
  pcall(function()
    vim.wo[original_win].winfixbuf = false
  end)
  api.nvim_win_set_buf(original_win, original)
  if placeholder ~= original and api.nvim_buf_is_valid(placeholder) then
    pcall(api.nvim_buf_delete, placeholder, { force = true })
  end
  vim.cmd("diffthis")
  local proposal_win = api.nvim_open_win(proposal, true, { split = "right", win = original_win })
  vim.cmd("diffthis")

  ---@type gemini_companion.DiffView
  local view = {
    id = spec.id,
    file_path = path,
    session = spec.session,
    call_id = spec.call_id,
    tab = tab,
    proposal = proposal,
    proposal_win = proposal_win,
    original = original,
    original_win = original_win,
    original_owned = owned,
    unsaved = target ~= nil and vim.bo[target].modified,
    new_file = new_file,
    state = "open",
    kept = kept,
  }
  views[spec.id] = view
  set_winbars(view)
  map_keys(view, proposal)
  if owned then
    map_keys(view, original)
  end

  api.nvim_create_autocmd("BufWriteCmd", {
    group = augroup,
    buffer = proposal,
    callback = function(args)
      if args.match ~= api.nvim_buf_get_name(proposal) then
        -- `:w other-file` writes a copy; only `:w` of the proposal itself accepts.
        local fh, err = io.open(args.match, "wb")
        if not fh then
          notify("could not write " .. args.match .. ": " .. tostring(err), vim.log.levels.ERROR)
          return
        end
        fh:write(buffer_text(proposal))
        fh:close()
        return
      end
      M.accept(view.id)
    end,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = augroup,
    buffer = proposal,
    callback = function()
      if view.state == "open" or view.state == "orphaned" then
        -- The proposal window or tab was closed: a rejection.
        local orphaned = view.state == "orphaned"
        vim.schedule(function()
          teardown(view, "rejected")
        end)
        if not orphaned then
          require("gemini_companion.host").diff_reject(view.id)
        end
      end
    end,
  })

  -- Start at the first change.
  api.nvim_win_set_cursor(proposal_win, { 1, 0 })
  if vim.fn.diff_hlID(1, 1) == 0 and vim.fn.diff_filler(1) == 0 then
    pcall(vim.cmd, "keepjumps normal! ]c")
  end

  return view
end

--- Open the view (called by diff.py). An error reaches the CLI as isError, with
--- whatever was half made undone.
---@param spec gemini_companion.DiffSpec
---@return true|{ refused: "outside_workspace" }
function M._open(spec)
  if spec.outside_workspace and not require("gemini_companion.reload").buffers_of(spec.file_path)[1] then
    -- Outside the workspace a diff could show any file Neovim can read: only a file
    -- the user has open already is shown. diff.py says why to the CLI.
    return { refused = "outside_workspace" }
  end
  local created = { bufs = {} }
  local ok, err = pcall(open_view, spec, created)
  if ok then
    local view = err --[[@as gemini_companion.DiffView]]
    local fired, event_err = pcall(api.nvim_exec_autocmds, "User", {
      pattern = "GeminiDiffOpened",
      modeline = false,
      data = {
        id = view.id,
        file_path = view.file_path,
        session = view.session,
        tab = view.tab,
        proposal_buf = view.proposal,
        original_buf = view.original,
        unsaved = view.unsaved,
        new_file = view.new_file,
      },
    })
    if not fired then -- another plugin's handler failed: the diff itself is fine
      notify("GeminiDiffOpened handler failed: " .. tostring(event_err), vim.log.levels.ERROR)
    end
    return true
  end
  local view = views[spec.id]
  if view then
    view.state = "closed"
    views[spec.id] = nil
  end
  local function new_since(before, now)
    local old = {}
    for _, h in ipairs(before or now) do
      old[h] = true
    end
    return vim.tbl_filter(function(h)
      return not old[h]
    end, now)
  end
  for _, tab in ipairs(new_since(created.tabs_before, api.nvim_list_tabpages())) do
    for _, win in ipairs(api.nvim_tabpage_list_wins(tab)) do
      pcall(api.nvim_win_close, win, true)
    end
  end
  -- Ours, and the empty buffer :tabnew made.
  local doomed = new_since(created.bufs_before, api.nvim_list_bufs())
  vim.list_extend(doomed, created.bufs)
  for _, buf in ipairs(doomed) do
    if
      api.nvim_buf_is_valid(buf)
      and (vim.tbl_contains(created.bufs, buf) or api.nvim_buf_get_name(buf) == "" and not vim.bo[buf].modified)
    then
      pcall(api.nvim_buf_delete, buf, { force = true })
    end
  end
  error(err, 0)
end

--- The view `id` names, else the one :GeminiAccept/:GeminiReject mean here; warns
--- when there is none.
---@param id? integer
---@return gemini_companion.DiffView?
local function resolve_view(id)
  local view, err = views[id or -1], nil
  if not view then
    view, err = current_view()
  end
  if not view then
    notify(err or "no Gemini diff is open", vim.log.levels.WARN)
  end
  return view
end

--- An option names one of the agent's answers: only an agent panel's edit has them
--- (a CLI's `openDiff` takes none). Errors when `option` is given to a CLI's diff.
---@param view gemini_companion.DiffView
---@param option? string
---@return boolean
local function option_allowed(view, option)
  if option and view.session ~= "agent" then
    notify(
      ("This diff is the Gemini CLI's: it takes no option (%s). :GeminiAccept accepts the"):format(option)
        .. " proposal, with your edits; :GeminiReject rejects it.",
      vim.log.levels.ERROR
    )
    return false
  end
  return true
end

--- Accept the proposal: send its text, user's edits included; the CLI writes the file.
---@param id? integer a view id; default: the view of the current tab
---@param option? string an agent panel's edit: the option id to answer with (unchecked here:
--- `require("gemini_companion.agent").answer_command` checks it against the agent's offer)
function M.accept(id, option)
  local view = resolve_view(id)
  if not view or not option_allowed(view, option) then
    return
  end
  if view.state == "orphaned" then
    notify(
      "The Gemini CLI that proposed this change has disconnected: nothing can be sent."
        .. " Copy what you need, then :GeminiReject or close the tab.",
      vim.log.levels.WARN
    )
    return
  end
  if view.state ~= "open" or not api.nvim_buf_is_valid(view.proposal) then
    return
  end
  view.state = "accepting"
  local kept, bo = view.kept, vim.bo[view.proposal]
  if
    kept
    and api.nvim_buf_get_changedtick(view.proposal) == kept.tick
    and bo.eol == kept.eol
    and bo.fileformat == kept.fileformat
  then
    -- As shown: the Python side sends the proposal as the client sent it.
    require("gemini_companion.host").diff_accept(view.id, { unchanged = true }, kept.eol, kept.fileformat, option)
  else
    local content = proposal_content(view.proposal)
    local body = content.text_file and { file = content.text_file } or content.text
    require("gemini_companion.host").diff_accept(view.id, body, content.eol, content.fileformat, option)
  end
  vim.bo[view.proposal].modified = false
end

--- Reject the proposal and close its tab.
---@param id? integer a view id; default: the view of the current tab
---@param option? string an agent panel's edit: the (reject) option id to answer with
function M.reject(id, option)
  local view = resolve_view(id)
  if not view or not option_allowed(view, option) then
    return
  end
  if view.state == "accepting" or view.state == "closed" then
    return
  end
  if view.state == "open" then
    require("gemini_companion.host").diff_reject(view.id, option)
  end
  teardown(view, "rejected")
end

--- The open views, for statuslines and tests.
---@return gemini_companion.DiffView[]
function M.views()
  return vim.tbl_values(views)
end

--- Called by diff.py once the answer went out (or was not needed).
---@param id integer
---@param result string
---@return boolean
function M._finish(id, result)
  local view = views[id]
  if not view then
    return false
  end
  teardown(view, result)
  if result == "accepted" then
    require("gemini_companion.reload").when_written(view.file_path)
  end
  return true
end

--- Called by diff.py for closeDiff (and when a diff is replaced): close without an
--- answer and return the proposal's lines (joined by "\n"), 'eol' and 'fileformat'
--- (a big text in a file: `proposal_content`).
---@param id integer
---@param result string
---@return { text: string, text_file?: string, eol: boolean, fileformat: string }?
function M._close(id, result)
  local view = views[id]
  if not view then
    return nil
  end
  local content
  if api.nvim_buf_is_valid(view.proposal) then
    content = proposal_content(view.proposal)
  end
  teardown(view, result)
  return content
end

--- Called by diff.py when the view's CLI is gone: keep the tab, marked, so edits
--- made in it are not lost; nothing more can be sent for it.
---@param id integer
function M._orphan(id)
  local view = views[id]
  if not view or view.state == "closed" then
    return
  end
  if not api.nvim_buf_is_valid(view.proposal) then
    teardown(view, "disconnected")
    return
  end
  if view.state == "accepting" then
    vim.bo[view.proposal].modified = true -- its text was not sent: protect it from :q
  end
  view.state = "orphaned"
  set_winbars(view)
  notify(
    ("The Gemini CLI disconnected: the diff for %s can no longer be accepted."):format(display_path(view.file_path)),
    vim.log.levels.WARN
  )
end

--- The Python host is gone (host.lua): no view can be answered any more.
function M._orphan_all()
  for _, id in ipairs(vim.tbl_keys(views)) do
    M._orphan(id)
  end
end

--- Called by diff.py when the accepted text cannot be sent (not valid UTF-8).
---@param id integer
---@param message string
---@return boolean still_open
function M._accept_failed(id, message)
  local view = views[id]
  notify(message, vim.log.levels.ERROR)
  if not view or view.state == "closed" or not api.nvim_buf_is_valid(view.proposal) then
    if view then
      teardown(view, "rejected")
    end
    return false
  end
  view.state = "open"
  view.kept = nil -- the next accept sends the buffer's text
  vim.bo[view.proposal].modified = true
  return true
end

return M
