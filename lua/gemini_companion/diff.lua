--- The diff view (ide-companion-spec.md section III): a tab with the file as it is
--- now beside the agent's proposal, in diff mode. The Python side (diff.py) owns
--- the protocol and calls the `_`-prefixed functions; this module answers them and
--- the user's commands, and reports the user's answer through host.lua. The tab,
--- windows and buffers of a view are diff/view.lua's; text in and out of them,
--- diff/text.lua's.
local M = {}

local api = vim.api

local function view_module()
  return require("gemini_companion.diff.view")
end

local function notify(message, level)
  view_module().notify(message, level)
end

--- The view of the current tab, else the only one still waiting for an answer
--- (views of disconnected CLIs aside), else the only one.
---@return gemini_companion.DiffView?
---@return string? error
local function current_view()
  local tab = api.nvim_get_current_tabpage()
  local buf = api.nvim_get_current_buf()
  local all, live = {}, {}
  for _, view in pairs(view_module().by_id) do
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
  local view_of = view_module()
  local created = { bufs = {} }
  local ok, err = pcall(view_of.open, spec, created)
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
  view_of.undo(spec.id, created)
  error(err, 0)
end

--- The view `id` names, else the one :GeminiAccept/:GeminiReject mean here; warns
--- when there is none.
---@param id? integer
---@return gemini_companion.DiffView?
local function resolve_view(id)
  local view, err = view_module().by_id[id or -1], nil
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
  if view.session == "agent" and not option then
    -- "allow once" only, never more: an agent offering none is answered by name.
    local why = require("gemini_companion.agent.answers").diff_refusal(view)
    if why then
      notify(why, vim.log.levels.WARN)
      return
    end
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
    local content = require("gemini_companion.diff.text").proposal_content(view.proposal)
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
  view_module().teardown(view, "rejected")
end

--- The open views, for statuslines and tests.
---@return gemini_companion.DiffView[]
function M.views()
  return vim.tbl_values(view_module().by_id)
end

--- Called by diff.py once the answer went out (or was not needed).
---@param id integer
---@param result string
---@return boolean
function M._finish(id, result)
  local view = view_module().by_id[id]
  if not view then
    return false
  end
  view_module().teardown(view, result)
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
  local view = view_module().by_id[id]
  if not view then
    return nil
  end
  local content
  if api.nvim_buf_is_valid(view.proposal) then
    content = require("gemini_companion.diff.text").proposal_content(view.proposal)
  end
  view_module().teardown(view, result)
  return content
end

--- Called by diff.py when the view's CLI is gone: keep the tab, marked, so edits
--- made in it are not lost; nothing more can be sent for it.
---@param id integer
function M._orphan(id)
  local view = view_module().by_id[id]
  if not view or view.state == "closed" then
    return
  end
  if not api.nvim_buf_is_valid(view.proposal) then
    view_module().teardown(view, "disconnected")
    return
  end
  if view.state == "accepting" then
    vim.bo[view.proposal].modified = true -- its text was not sent: protect it from :q
  end
  view.state = "orphaned"
  require("gemini_companion.diff.winbar").set(view)
  notify(
    ("The Gemini CLI disconnected: the diff for %s can no longer be accepted."):format(
      require("gemini_companion.diff.winbar").display_path(view.file_path)
    ),
    vim.log.levels.WARN
  )
end

--- The Python host is gone (host.lua): no view can be answered any more.
function M._orphan_all()
  for _, id in ipairs(vim.tbl_keys(view_module().by_id)) do
    M._orphan(id)
  end
end

--- Called by diff.py when the accepted text cannot be sent (not valid UTF-8).
---@param id integer
---@param message string
---@return boolean still_open
function M._accept_failed(id, message)
  local view = view_module().by_id[id]
  notify(message, vim.log.levels.ERROR)
  if not view or view.state == "closed" or not api.nvim_buf_is_valid(view.proposal) then
    if view then
      view_module().teardown(view, "rejected")
    end
    return false
  end
  view.state = "open"
  view.kept = nil -- the next accept sends the buffer's text
  vim.bo[view.proposal].modified = true
  return true
end

return M
