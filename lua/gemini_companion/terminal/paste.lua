--- Typing into the Gemini CLI's terminal (terminal.lua's `send`): a bracketed
--- paste, then Enter once the CLI shows the text; for a CLI that just started,
--- once it has connected to this Neovim.
local M = {}

--- Type `text` into the CLI's job as a bracketed paste (newlines included, not
--- taken as Enter), then Enter if `submit`.
---@param job integer
---@param buf integer the terminal's buffer, where the pasted text shows
---@param text string
---@param submit boolean
function M.type(job, buf, text, submit)
  if vim.fn.jobwait({ job }, 0)[1] ~= -1 then
    return
  end
  vim.fn.chansend(job, "\27[200~" .. text .. "\27[201~")
  if not submit then
    return
  end
  -- The CLI takes an Enter that comes within 40 ms of a paste (by its own timer,
  -- which runs late while the CLI is busy starting) as a newline in the prompt.
  -- So: once the pasted text shows in the terminal, 300 ms later.
  local tail = vim.trim(text):sub(-12):gsub("%s", "")
  local timer = assert(vim.uv.new_timer())
  local waited = 0
  timer:start(
    50,
    50,
    vim.schedule_wrap(function()
      waited = waited + 50
      local lines = buf and vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_lines(buf, 0, -1, false) or {}
      local shown = table.concat(lines, ""):gsub("%s", ""):find(tail, 1, true)
      if not shown and waited < 5000 then
        return
      end
      timer:stop()
      timer:close()
      vim.defer_fn(function()
        if vim.fn.jobwait({ job }, 0)[1] == -1 then
          vim.fn.chansend(job, "\r")
        end
      end, 300)
    end)
  )
end

--- A CLI that just started reads its input only once its prompt is up, which is
--- when it has connected to us (a state update with one more session): type then,
--- or after 10 s without that.
---@param job integer
---@param buf integer
---@param text string
---@param sessions_before integer
---@param submit boolean
function M.when_connected(job, buf, text, sessions_before, submit)
  local state = require("gemini_companion.state")
  local typed = false
  local function type_once()
    if not typed then
      typed = true
      M.type(job, buf, text, submit)
    end
  end
  local autocmd = vim.api.nvim_create_autocmd("User", {
    pattern = "GeminiCompanionStatus",
    callback = function()
      if #(state.current.sessions or {}) > sessions_before then
        type_once()
        return true -- delete this autocommand
      end
    end,
  })
  vim.defer_fn(function()
    if not typed then
      pcall(vim.api.nvim_del_autocmd, autocmd)
      type_once()
    end
  end, 10000)
end

return M
