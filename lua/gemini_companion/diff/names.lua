--- The names of a diff view's buffers: the file's path, relative to the working
--- directory when under it, and what the buffer holds: `src/calc.py (proposal)`,
--- `src/calc.py (on disk)`, `src/calc.py (new file)`. Tab labels read them: the
--- default tabline shortens folders to their first letter (`2 s/calc.py
--- (proposal)`), where a URL-like name was mangled to `g//d/t/.../calc.py`, and
--- tabline plugins show the last part. The buftype (acwrite, nofile) keeps them
--- apart from files: no LSP client, file context or completion takes them for the
--- file. Names are set through the API only (diff/text.lua says why).
local M = {}

local api = vim.api

--- The buffer named exactly `name`, if any (compared as strings: no file pattern).
---@param name string
---@return integer?
local function buffer_named(name)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_get_name(buf) == name then
      return buf
    end
  end
  return nil
end

--- A free name for a view's buffer holding `what` of `path`. A buffer of an earlier
--- view left with that name is deleted; one of the user's (a file really named so)
--- is never touched: the name gets a number instead. The caller marks its buffer
--- with `vim.b.gemini_diff_view`.
---@param path string
---@param what string "proposal", "on disk" or "new file"
---@return string
function M.free(path, what)
  local base = vim.fn.fnamemodify(path, ":.")
  for n = 1, 100 do
    local name = ("%s (%s%s)"):format(base, what, n > 1 and (" " .. n) or "")
    local holder = buffer_named(vim.fn.fnamemodify(name, ":p"))
    if holder and vim.b[holder].gemini_diff_view then
      pcall(api.nvim_buf_delete, holder, { force = true })
      holder = buffer_named(vim.fn.fnamemodify(name, ":p"))
    end
    if not holder then
      return name
    end
  end
  return ("%s (%s %d)"):format(base, what, vim.uv.hrtime())
end

return M
