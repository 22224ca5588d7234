--- One diff view's tab, windows and buffers: made from the Python side's spec, and
--- taken down again. The open views are kept here by id; `gemini_companion.diff`
--- (the commands and what diff.py calls) finds them here.
---
--- What the left side shows: the file's own buffer when it is loaded, unsaved edits
--- included (it stays the user's buffer: editable, never written or reloaded by the
--- plugin); otherwise a read-only copy of the file on disk; for a new file, an empty
--- buffer. The proposal is a scratch buffer (buftype=acwrite): `:w` accepts it.
--- Buffers are named and filled through the API only (diff/text.lua says why).
--- Their names: diff/names.lua.
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
---@field proposed { body: string, eol: boolean, fileformat: string } the proposal as it came (`:e!` brings it back)

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

---@class gemini_companion.diff.Created what to undo if opening fails
---@field bufs integer[]
---@field tabs_before? integer[]
---@field bufs_before? integer[]

--- The open views by id.
---@type table<integer, gemini_companion.DiffView>
M.by_id = {}

local augroup = api.nvim_create_augroup("gemini_companion_diff", { clear = true })

---@param message string
---@param level? integer
function M.notify(message, level)
  vim.notify(message, level or vim.log.levels.INFO, { title = "Gemini companion" })
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
function M.teardown(view, result)
  if view.state == "closed" then
    return
  end
  local was_orphaned = view.state == "orphaned"
  view.state = "closed"
  M.by_id[view.id] = nil
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
      require("gemini_companion.diff").accept(view.id)
    end, { buffer = buf, desc = "Accept the Gemini proposal" })
  end
  if keymaps.reject then
    vim.keymap.set("n", keymaps.reject, function()
      require("gemini_companion.diff").reject(view.id)
    end, { buffer = buf, desc = "Reject the Gemini proposal" })
  end
end

--- Set the filetype for highlighting; a failing filetype plugin does not stop the diff.
---@param buf integer
---@param filetype string
local function set_filetype(buf, filetype)
  local ok, err = pcall(function()
    vim.bo[buf].filetype = filetype
  end)
  if not ok then
    M.notify(("filetype %s failed in the diff view: %s"):format(filetype, err), vim.log.levels.WARN)
  end
end

--- A read-only copy of the file on disk (empty for a new file), named
--- "<path> (on disk)" ("<path> (new file)").
---@param path string
---@param filetype string?
---@param created gemini_companion.diff.Created each buffer is added at once, so a failure below removes it
---@return integer buf
---@return boolean new_file
local function disk_copy(path, filetype, created)
  local text = require("gemini_companion.diff.text")
  local stat = vim.uv.fs_stat(path)
  local name = require("gemini_companion.diff.names").free(path, stat and "on disk" or "new file")
  if stat and stat.type ~= "file" then
    -- diff.py refused it already; checked again right before the read, which would
    -- block the main loop for ever on a FIFO or a pipe.
    error(("%s is not a regular file"):format(path), 0)
  end
  local buf = stat and text.load_native(path, name, created.bufs)
  if not buf then
    buf = api.nvim_create_buf(false, true)
    created.bufs[#created.bufs + 1] = buf
    vim.bo[buf].undolevels = -1
    if stat then
      text.load_file(buf, path)
    end
    pcall(api.nvim_buf_set_name, buf, name)
  end
  vim.b[buf].gemini_diff_view = true
  api.nvim_create_autocmd("BufReadCmd", { -- `:e!` reads the file again (the name is none)
    group = augroup,
    buffer = buf,
    callback = function()
      vim.bo[buf].modifiable = true
      api.nvim_buf_set_lines(buf, 0, -1, false, {})
      pcall(text.load_file, buf, path)
      vim.bo[buf].modifiable, vim.bo[buf].modified = false, false
    end,
  })
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if filetype then
    set_filetype(buf, filetype)
  end
  return buf, stat == nil
end

--- Put the proposal as it came into its buffer, as the start of its undo history.
---@param buf integer
---@param proposed { body: string, eol: boolean, fileformat: string }
local function fill_proposal(buf, proposed)
  local bo = vim.bo[buf]
  bo.undolevels = -1 -- the proposal is the start of the undo history, not a change
  bo.fixeol = false
  bo.fileformat = proposed.fileformat
  bo.eol = proposed.eol
  api.nvim_buf_set_lines(buf, 0, -1, false, require("gemini_companion.diff.text").split_lines(proposed.body))
  bo.undolevels = -123456 -- back to the global value
end

--- The proposal's scratch buffer, named "<path> (proposal)", and what an unchanged
--- accept compares against.
---@param spec gemini_companion.DiffSpec
---@param filetype string?
---@param created gemini_companion.diff.Created
---@return integer buf
---@return { tick: integer, eol: boolean, fileformat: string }? kept
---@return { body: string, eol: boolean, fileformat: string } proposed
local function proposal_buffer(spec, filetype, created)
  local text = require("gemini_companion.diff.text")
  local proposal = api.nvim_create_buf(false, true)
  created.bufs[#created.bufs + 1] = proposal
  local bo = vim.bo[proposal]
  bo.buftype = "acwrite"
  bo.bufhidden = "wipe"
  bo.swapfile = false
  local body = spec.text_file and text.read_file(spec.text_file) or spec.text
  local proposed = { body = body, eol = spec.eol, fileformat = spec.fileformat }
  fill_proposal(proposal, proposed)
  -- The buffer as shown, before any filetype plugin runs: any change since, even one
  -- undone, and the accept sends the buffer's text.
  local kept = spec.kept
      and { tick = api.nvim_buf_get_changedtick(proposal), eol = spec.eol, fileformat = spec.fileformat }
    or nil
  api.nvim_buf_set_name(proposal, require("gemini_companion.diff.names").free(spec.file_path, "proposal"))
  vim.b[proposal].gemini_diff_view = true
  if filetype then
    set_filetype(proposal, filetype)
  end
  bo.modified = false
  return proposal, kept, proposed
end

--- A new tab with `original` left and `proposal` right, both in diff mode.
---@param original integer
---@param proposal integer
---@param created gemini_companion.diff.Created
---@return integer tab
---@return integer original_win
---@return integer proposal_win
local function diff_tab(original, proposal, created)
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
  return tab, original_win, proposal_win
end

--- `:w` of the proposal accepts it (`:w other-file` writes a copy); wiping it out
--- (its window or tab closed) rejects it.
---@param view gemini_companion.DiffView
local function watch_proposal(view)
  local proposal = view.proposal
  api.nvim_create_autocmd("BufWriteCmd", {
    group = augroup,
    buffer = proposal,
    callback = function(args)
      if args.match ~= api.nvim_buf_get_name(proposal) then
        local fh, err = io.open(args.match, "wb")
        if not fh then
          M.notify("could not write " .. args.match .. ": " .. tostring(err), vim.log.levels.ERROR)
          return
        end
        fh:write(require("gemini_companion.diff.text").buffer_text(proposal))
        fh:close()
        return
      end
      require("gemini_companion.diff").accept(view.id)
    end,
  })
  -- `:e!` discards the user's edits: the proposal as it came, not the empty buffer
  -- of a file that does not exist.
  api.nvim_create_autocmd("BufReadCmd", {
    group = augroup,
    buffer = proposal,
    callback = function()
      fill_proposal(proposal, view.proposed)
      if view.kept then
        view.kept.tick = api.nvim_buf_get_changedtick(proposal)
      end
      vim.bo[proposal].modified = false
    end,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = augroup,
    buffer = proposal,
    callback = function()
      if view.state == "open" or view.state == "orphaned" then
        local orphaned = view.state == "orphaned"
        vim.schedule(function()
          M.teardown(view, "rejected")
        end)
        if not orphaned then
          require("gemini_companion.host").diff_reject(view.id)
        end
      end
    end,
  })
end

--- Make the view's tab and register it. Whatever it made is listed in `created`, for
--- the caller to undo if this fails.
---@param spec gemini_companion.DiffSpec
---@param created gemini_companion.diff.Created
---@return gemini_companion.DiffView
function M.open(spec, created)
  local path = spec.file_path
  for _, view in pairs(M.by_id) do
    if view.file_path == path then -- a view left by a CLI that is gone
      M.teardown(view, "replaced")
    end
  end
  require("gemini_companion.highlights").define() -- setup() may not have run
  local filetype = vim.filetype.match({ filename = path })
  local proposal, kept, proposed = proposal_buffer(spec, filetype, created)

  local target = require("gemini_companion.reload").buffers_of(path)[1]
  local original, owned, new_file = target, false, false
  if not original then
    original, new_file = disk_copy(path, filetype, created)
    owned = true
  end
  local tab, original_win, proposal_win = diff_tab(original, proposal, created)

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
    proposed = proposed,
  }
  M.by_id[spec.id] = view
  require("gemini_companion.diff.winbar").set(view)
  map_keys(view, proposal)
  if owned then
    map_keys(view, original)
  end
  watch_proposal(view)

  -- Start at the first change.
  api.nvim_win_set_cursor(proposal_win, { 1, 0 })
  if vim.fn.diff_hlID(1, 1) == 0 and vim.fn.diff_filler(1) == 0 then
    pcall(vim.cmd, "keepjumps normal! ]c")
  end
  -- Normal mode, whatever mode the user was in (Insert mode in the agent's prompt
  -- after <C-s>): the next keys must not edit the proposal.
  vim.cmd.stopinsert()
  return view
end

--- Undo what a failed `open` made: its tab, its buffers and the empty one :tabnew made.
---@param id integer
---@param created gemini_companion.diff.Created
function M.undo(id, created)
  local view = M.by_id[id]
  if view then
    view.state = "closed"
    M.by_id[id] = nil
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
end

return M
