--- The oldest Neovim the plugin supports, and what an older one is told. Loaded
--- on any Neovim, so written for Neovim 0.5+ (no vim.system, vim.uv, vim.health).
local M = {}

--- Neovim 0.10: vim.system() (the build and every program the plugin runs) and
--- vim.uv are 0.10 APIs.
M.minimum = "0.10"

---@return boolean
function M.supported()
  return vim.fn.has("nvim-" .. M.minimum) == 1
end

---@return string e.g. "Neovim 0.10 or newer is required (this is 0.7.2)"
function M.message()
  local v = vim.version()
  return string.format(
    "gemini-companion: Neovim %s or newer is required (this is %d.%d.%d); the plugin does nothing",
    M.minimum,
    v.major,
    v.minor,
    v.patch
  )
end

--- Say it once per session.
function M.too_old()
  if vim.g.gemini_companion_too_old_said then
    return
  end
  vim.g.gemini_companion_too_old_said = true
  vim.api.nvim_echo({ { M.message(), "WarningMsg" } }, true, {})
end

return M
