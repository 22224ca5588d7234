--- The panel's windows: the transcript above, the prompt buffer under it, at the
--- side of the current tab. Both buffers outlive their windows (`:only`, `:q`), so
--- reopening shows the same transcript and the unsent prompt.
local M = {}

local api = vim.api

---@type integer?
local prompt_buf = nil

---@return gemini_companion.AgentConfig
local function config()
  return require("gemini_companion.config").get().agent
end

---@param buf integer
---@return string
local function buffer_text(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

--- Send what the prompt buffer holds; it is kept (and a warning shown) when the
--- agent cannot take it now.
function M.submit()
  local buf = M.prompt_buffer()
  local text = vim.trim(buffer_text(buf))
  if text == "" then
    return
  end
  require("gemini_companion.agent.prompt_history").add(text)
  if require("gemini_companion.agent").submit(text) then
    api.nvim_buf_set_lines(buf, 0, -1, false, {})
  end
end

---@param step integer -1 older, 1 newer
function M.history(step)
  require("gemini_companion.agent.prompt_history").step(M.prompt_buffer(), step)
end

--- The shown conversation's prompt history, oldest first.
---@return string[]
function M.history_entries()
  return require("gemini_companion.agent.prompt_history").entries()
end

--- The prompt's text, taken out (another conversation is shown: it is that
--- conversation's draft).
---@return string[]
function M.take_draft()
  local buf = M.prompt_buffer()
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  api.nvim_buf_set_lines(buf, 0, -1, false, {})
  return lines
end

--- The panel's keys as `?` lists them: { lhs, mode, description }.
---@type table<integer, { [1]: string, [2]: string, [3]: string }[]>
local key_help = {}

--- Show the keys of the panel's buffer `buf` in a floating window (`q`, `<Esc>`
--- or `?` closes it).
---@param buf integer
function M.show_keys(buf)
  local rows = key_help[buf] or {}
  local lines = { " Keys of the agent panel", "" }
  for _, row in ipairs(rows) do
    lines[#lines + 1] = (" %-16s %-7s %s"):format(row[1], row[2], row[3])
  end
  if buf == prompt_buf then
    vim.list_extend(lines, {
      "",
      " In insert mode, @ completes files and open buffers, # the context words",
      " (#buffer, #selection, #diagnostics): <C-x><C-o>, or your completion plugin's",
      " omni source. :help gemini-companion-agent-context",
    })
  end
  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line) + 1)
  end
  width = math.min(width, vim.o.columns - 4)
  local float = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(float, 0, -1, false, lines)
  vim.bo[float].modifiable = false
  vim.bo[float].bufhidden = "wipe"
  local win = api.nvim_open_win(float, true, {
    relative = "editor",
    width = width,
    height = math.min(#lines, vim.o.lines - 4),
    row = math.max(math.floor((vim.o.lines - #lines) / 2) - 1, 0),
    col = math.max(math.floor((vim.o.columns - width) / 2), 0),
    style = "minimal",
    border = "rounded",
    title = " ? ",
  })
  vim.wo[win].wrap = true
  for _, lhs in ipairs({ "q", "<Esc>", "?" }) do
    vim.keymap.set("n", lhs, function()
      pcall(api.nvim_win_close, win, true)
    end, { buffer = float, nowait = true })
  end
end

---@param buf integer
---@param prompt boolean
local function map_keys(buf, prompt)
  local keys = config().keymaps
  key_help[buf] = {}
  local function map(modes, lhs, rhs, desc)
    if lhs and lhs ~= "" then
      vim.keymap.set(modes, lhs, rhs, { buffer = buf, nowait = true, desc = desc })
      local help = key_help[buf]
      help[#help + 1] = { lhs, type(modes) == "table" and table.concat(modes, ",") or modes, desc }
    end
  end
  local agent = function()
    return require("gemini_companion.agent")
  end
  if prompt then
    map("n", keys.send, M.submit, "Send the prompt to the agent")
    map("i", keys.send_insert, M.submit, "Send the prompt, staying in insert mode")
  end
  map("n", keys.cancel, function()
    agent().cancel()
  end, "Cancel the agent's work")
  map("n", keys.accept, function()
    agent().accept()
  end, "Accept the oldest confirmation the agent waits for")
  map("n", keys.reject, function()
    agent().reject()
  end, "Reject the oldest confirmation the agent waits for")
  map("n", keys.close, function()
    M.close()
  end, "Close the agent panel")
  if prompt then
    ---@param lhs string
    ---@param step integer
    local function history_key(lhs, step)
      return function()
        if vim.fn.pumvisible() == 1 then
          -- The completion menu is open: the key moves in it, as it always does.
          api.nvim_feedkeys(vim.keycode(lhs), "n", false)
          return
        end
        M.history(step)
      end
    end
    map({ "n", "i" }, keys.history_prev, history_key(keys.history_prev or "", -1), "Previous prompt")
    map({ "n", "i" }, keys.history_next, history_key(keys.history_next or "", 1), "Next prompt")
  end
  map("n", keys.help, function()
    M.show_keys(buf)
  end, "List these keys")
end

--- The prompt buffer, created on first use.
---@return integer
function M.prompt_buffer()
  if prompt_buf and api.nvim_buf_is_valid(prompt_buf) then
    return prompt_buf
  end
  prompt_buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(prompt_buf, "gemini-agent://prompt")
  local bo = vim.bo[prompt_buf]
  bo.buftype = "nofile"
  bo.bufhidden = "hide"
  bo.swapfile = false
  bo.filetype = "gemini_agent_prompt"
  local omni = "v:lua.require'gemini_companion.agent.complete'.omnifunc"
  bo.omnifunc = omni
  bo.completefunc = omni
  map_keys(prompt_buf, true)
  require("gemini_companion.agent.context").track()
  api.nvim_create_autocmd("InsertEnter", {
    buffer = prompt_buf,
    callback = function()
      require("gemini_companion.agent.complete").prefetch()
    end,
  })
  return prompt_buf
end

---@return integer
local function transcript_buffer()
  local transcript = require("gemini_companion.agent.transcript")
  local buf = transcript.buffer()
  if not vim.b[buf].gemini_agent_keys then
    vim.b[buf].gemini_agent_keys = true
    map_keys(buf, false)
    require("gemini_companion.agent.renderers").watch(buf)
  end
  return buf
end

---@param tab? integer
---@return integer? transcript_win, integer? prompt_win
function M.windows(tab)
  local t, p
  local transcript = require("gemini_companion.agent.transcript")
  transcript_buffer()
  local pbuf = M.prompt_buffer()
  for _, win in ipairs(api.nvim_tabpage_list_wins(tab or api.nvim_get_current_tabpage())) do
    local b = api.nvim_win_get_buf(win)
    if transcript.is_transcript(b) then
      t = t or win
    elseif b == pbuf then
      p = p or win
    end
  end
  return t, p
end

---@param size number
---@param total integer
---@return integer
local function resolve_size(size, total)
  if size < 1 then
    return math.max(20, math.floor(total * size))
  end
  return math.floor(size)
end

---@param win integer
local function transcript_window_options(win)
  local wo = vim.wo[win][0]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = "no"
  -- Thoughts are folded by transcript.lua (manual folds: a fold expression costs
  -- a call for every line of a streaming answer).
  wo.foldmethod = "manual"
  wo.foldlevel = 0
  wo.foldenable = true
  wo.winfixwidth = true
  -- A wrapped line (a confirmation's options) goes on under its own indent, two
  -- columns in. min:10: the default (min:20) drops the indent in a panel under 26
  -- columns wide, and the options wrapped to the first column.
  wo.breakindent = true
  wo.breakindentopt = "shift:2,min:10"
  require("gemini_companion.agent.state").show_in(win)
  require("gemini_companion.agent.transcript").fold_window(win)
end

---@param win integer
local function prompt_window_options(win)
  local wo = vim.wo[win][0]
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = "no"
  wo.winfixheight = true
  wo.winfixwidth = true
  wo.wrap = true
  -- Fitted to the window (status_lines.lua); %< cuts it at its end if it still
  -- does not fit.
  wo.statusline = " %{v:lua.require'gemini_companion.agent.status_lines'.prompt()}%<"
end

local resize_group = nil

--- Keep the panel's share of the screen when Neovim's window is resized: with
--- 'winfixwidth' it would otherwise keep its columns whatever the new width.
local function follow_resizes()
  if resize_group then
    return
  end
  resize_group = api.nvim_create_augroup("gemini_companion_agent_panel", { clear = true })
  api.nvim_create_autocmd("VimResized", {
    group = resize_group,
    callback = function()
      local cfg = config().panel
      for _, tab in ipairs(api.nvim_list_tabpages()) do
        local twin, pwin = M.windows(tab)
        local win = twin or pwin
        if win and #api.nvim_tabpage_list_wins(tab) > (twin and pwin and 2 or 1) then
          pcall(api.nvim_win_set_width, win, resolve_size(cfg.size, vim.o.columns))
        end
      end
    end,
  })
end

--- In the prompt window (the current one), Insert mode at the end of the prompt:
--- the keys typed next are the prompt's text (`agent.panel.insert`).
function M.start_insert()
  local buf = M.prompt_buffer()
  local last = api.nvim_buf_line_count(buf)
  local line = api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ""
  api.nvim_win_set_cursor(0, { last, #line })
  -- Like `A`: the cursor after the line's last character.
  vim.cmd.startinsert({ bang = true })
end

--- Open the panel in the current tab (or complete it when one of its windows was
--- closed). `enter`: put the cursor in the prompt (in Insert mode unless
--- `agent.panel.insert` is false).
---@param opts? { enter?: boolean }
function M.open(opts)
  local enter = not opts or opts.enter ~= false
  local from = api.nvim_get_current_win()
  local cfg = config().panel
  local tbuf, pbuf = transcript_buffer(), M.prompt_buffer()
  local twin, pwin = M.windows()
  if not twin then
    if pwin then
      api.nvim_set_current_win(pwin)
      vim.cmd("aboveleft split")
    else
      local width = resolve_size(cfg.size, vim.o.columns)
      vim.cmd((cfg.position == "left" and "topleft" or "botright") .. " " .. width .. "vsplit")
    end
    twin = api.nvim_get_current_win()
    api.nvim_win_set_buf(twin, tbuf)
    transcript_window_options(twin)
    pcall(api.nvim_win_set_cursor, twin, { api.nvim_buf_line_count(tbuf), 0 })
    require("gemini_companion.agent.renderers").refresh(tbuf)
  end
  if not pwin then
    api.nvim_set_current_win(twin)
    vim.cmd("belowright " .. cfg.prompt_height .. "split")
    pwin = api.nvim_get_current_win()
    api.nvim_win_set_buf(pwin, pbuf)
  end
  prompt_window_options(pwin)
  follow_resizes()
  if enter then
    api.nvim_set_current_win(pwin)
    if cfg.insert then
      M.start_insert()
    end
  elseif api.nvim_win_is_valid(from) then
    api.nvim_set_current_win(from)
  end
end

--- Close the panel's windows in the current tab; the buffers stay.
function M.close()
  local twin, pwin = M.windows()
  for _, win in ipairs({ pwin, twin }) do
    if win and api.nvim_win_is_valid(win) then
      if #api.nvim_tabpage_list_wins(0) == 1 then
        -- The last window of the tab cannot close: show an empty buffer instead.
        api.nvim_win_call(win, function()
          vim.cmd.enew()
        end)
      else
        api.nvim_win_close(win, false)
      end
    end
  end
end

---@return boolean
function M.visible()
  local twin, pwin = M.windows()
  return twin ~= nil or pwin ~= nil
end

function M.toggle()
  if M.visible() then
    M.close()
  else
    M.open()
  end
end

--- Show the conversation now current (conversations.lua): its transcript in the
--- panel's transcript windows of every tab (each where it was in it last,
--- transcript_windows.lua), `draft` in the prompt.
---@param draft? string[]
function M.show_conversation(draft)
  require("gemini_companion.agent.prompt_history").stop_browsing()
  local tbuf = transcript_buffer()
  for _, tab in ipairs(api.nvim_list_tabpages()) do
    local twin = M.windows(tab)
    if twin and api.nvim_win_get_buf(twin) ~= tbuf then
      local windows = require("gemini_companion.agent.transcript_windows")
      windows.leave(twin) -- its place in the transcript it showed is kept
      api.nvim_win_set_buf(twin, tbuf)
      transcript_window_options(twin)
      windows.enter(twin)
      require("gemini_companion.agent.renderers").refresh(tbuf)
    end
  end
  if draft and #draft > 0 then
    api.nvim_buf_set_lines(M.prompt_buffer(), 0, -1, false, draft)
  end
end

return M
