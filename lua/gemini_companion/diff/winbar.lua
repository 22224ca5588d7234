--- The bars above a diff view's two windows: what each side shows, and how to
--- answer (the configured keys as the user types them).
local M = {}

local api = vim.api

--- What the left side says of a buffer with unsaved changes, longest first: the
--- first that fits the window is shown whole (the last always: the name gives way).
local UNSAVED = {
  "your buffer, unsaved changes: accepting writes the proposal to disk and keeps them here",
  "unsaved changes: kept here on accept",
  "unsaved changes kept",
}

---@param s string
---@return string
local function statusline_escape(s)
  return (s:gsub("%%", "%%%%"))
end

---@param path string
---@return string
function M.display_path(path)
  return vim.fn.fnamemodify(path, ":~:.")
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
function M.set(view)
  local keymaps = require("gemini_companion.config").get().diff.keymaps
  local name = statusline_escape(M.display_path(view.file_path))
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
    local win = view.original_win
    local what, hl = "your buffer", "%#GeminiDiffHint#"
    if view.new_file then
      what = "new file"
    elseif view.original_owned then
      what = "on disk"
    elseif view.unsaved then
      hl = "%#GeminiDiffWarning#"
      -- The longest that fits whole: a cut mid-word ("<fer, unsaved ...") says nothing.
      local room = api.nvim_win_get_width(win)
        - vim.fn.strdisplaywidth(" Current:  ()" .. M.display_path(view.file_path))
      for _, candidate in ipairs(UNSAVED) do
        what = candidate
        if vim.fn.strdisplaywidth(candidate) <= room then
          break
        end
      end
    end
    -- %< cuts the name (from its start), never the words after it.
    vim.wo[win].winbar = "%#GeminiDiffTitle# Current: %<" .. name .. " " .. hl .. "(" .. what .. ")"
  end
end

return M
