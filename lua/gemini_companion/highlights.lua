--- Highlight groups, linked to standard groups with `default` so they follow the
--- colorscheme and a user's own definitions win. Re-linked on ColorScheme (a
--- colorscheme's `:hi clear` removes them).
local M = {}

M.groups = {
  GeminiCompanionConnected = "DiagnosticOk", -- statusline: a CLI is connected
  GeminiCompanionIdle = "Comment", -- statusline: server running, no CLI connected
  GeminiCompanionStopped = "DiagnosticError", -- statusline: server not running
  GeminiCompanionPending = "DiagnosticWarn", -- statusline: a diff waits for an answer
  GeminiCompanionTerminal = "Normal", -- the CLI's terminal window
  GeminiCompanionFloatBorder = "FloatBorder", -- its border when floating
  GeminiDiffTitle = "Title", -- diff tab: the winbar's title
  GeminiDiffHint = "WinBar", -- diff tab: the winbar's hint
  GeminiDiffWarning = "WarningMsg", -- diff tab: a warning in the winbar
  GeminiAgentRole = "Statement", -- agent transcript: the "▍ You" and "▍ Gemini" lines
  GeminiAgentThought = "Comment", -- agent transcript: a thought
  GeminiAgentTool = "Function", -- agent transcript: a tool call's first line
  GeminiAgentWaiting = "WarningMsg", -- agent transcript: a confirmation waiting for you
  GeminiAgentError = "ErrorMsg", -- agent transcript: an error
  GeminiAgentNote = "Special", -- agent transcript: a note or warning
}

function M.define()
  for name, target in pairs(M.groups) do
    vim.api.nvim_set_hl(0, name, { link = target, default = true })
  end
end

local done = false

function M.setup()
  M.define()
  if done then
    return
  end
  done = true
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("gemini_companion_highlights", { clear = true }),
    callback = M.define,
  })
end

return M
