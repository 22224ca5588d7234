--- The Gemini CLI in a Neovim terminal: opened in the workspace with the IDE
--- environment (GEMINI_CLI_IDE_*), so it connects to this Neovim by itself; shown
--- and hidden by :Gemini; text and file references sent to it.
local M = {}

---@class gemini_companion.TerminalInstance
---@field buf integer
---@field job integer

---@type gemini_companion.TerminalInstance?
local current

---@return boolean
local function alive()
  if not current or not vim.api.nvim_buf_is_valid(current.buf) then
    return false
  end
  return vim.fn.jobwait({ current.job }, 0)[1] == -1
end

---@return integer? win showing the terminal in the current tab
local function visible_win()
  if not current then
    return nil
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == current.buf then
      return win
    end
  end
end

--- Start the companion if needed; `on_ready(nil)` once it runs, so the terminal
--- inherits the IDE variables, or `on_ready(error)`. Never waits: the state event
--- the start publishes says when (at once when the server already runs).
---@param on_ready fun(err: string?)
local function with_server(on_ready)
  local state = require("gemini_companion.state")
  if state.current.running then
    on_ready(nil)
    return
  end
  local _, err = require("gemini_companion.host").ensure()
  if err then
    on_ready(err)
    return
  end
  -- The state this start publishes (an error of an earlier start does not count).
  local before = state.current
  local done, autocmd = false, nil
  local timer = assert(vim.uv.new_timer())
  local function finish(problem)
    if done then
      return
    end
    done = true
    timer:close()
    pcall(vim.api.nvim_del_autocmd, autocmd)
    on_ready(problem)
  end
  autocmd = vim.api.nvim_create_autocmd("User", {
    pattern = "GeminiCompanionStatus",
    callback = function()
      local now = state.current
      if now ~= before and (now.running or now.error ~= nil) then
        finish(not now.running and now.error or nil)
      end
    end,
  })
  timer:start(
    10000,
    0,
    vim.schedule_wrap(function()
      finish("the companion server did not start within 10 s")
    end)
  )
  require("gemini_companion").start({ quiet = true })
end

---@param cfg gemini_companion.TerminalConfig
---@param buf integer
---@return integer win
local function open_window(cfg, buf)
  local position = cfg.position
  if position == "float" then
    local width = math.floor(vim.o.columns * cfg.float.width)
    local height = math.floor((vim.o.lines - vim.o.cmdheight) * cfg.float.height)
    return vim.api.nvim_open_win(buf, true, {
      relative = "editor",
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2) - 1,
      col = math.floor((vim.o.columns - width) / 2),
      border = cfg.float.border,
      title = " Gemini ",
      title_pos = "center",
      style = "minimal",
    })
  end
  if position == "tab" then
    vim.cmd("tab sbuffer " .. buf)
    return vim.api.nvim_get_current_win()
  end
  local vertical = position == "right" or position == "left"
  local total = vertical and vim.o.columns or vim.o.lines
  local size = cfg.size < 1 and math.floor(total * cfg.size) or math.floor(cfg.size)
  local modifier = ({ right = "botright vertical", left = "topleft vertical", bottom = "botright" })[position]
  vim.cmd(string.format("%s %dsplit", modifier, size))
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  return win
end

---@param win integer
local function style_window(win)
  vim.wo[win].winhighlight = "Normal:GeminiCompanionTerminal,NormalFloat:GeminiCompanionTerminal,"
    .. "FloatBorder:GeminiCompanionFloatBorder"
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].signcolumn = "no"
end

--- A variable that makes the Gemini CLI think it runs in CI (`CI`,
--- `CONTINUOUS_INTEGRATION`, `CI_*`): it then refuses its interactive UI and exits
--- (code 42, "No input provided via stdin"). The terminal is interactive by
--- definition, so its job does not get them (terminal.env can set them again).
---@param name string
---@return boolean
function M.ci_marker(name)
  return name == "CI" or name == "CONTINUOUS_INTEGRATION" or vim.startswith(name, "CI_")
end

--- Name the CLI's buffer `gemini` (`gemini-2`, ... while that name is taken, by a
--- buffer or a file of the working directory): the tab label and `:ls` show it,
--- not the job's `term://` name, which a tab label shortens to `t///t/n/...`.
---@param buf integer
local function name_buffer(buf)
  local old = vim.api.nvim_buf_get_name(buf)
  local taken = {}
  for _, other in ipairs(vim.api.nvim_list_bufs()) do
    if other ~= buf then
      taken[vim.api.nvim_buf_get_name(other)] = true
    end
  end
  for n = 1, 99 do
    local name = n == 1 and "gemini" or ("gemini-" .. n)
    local full = vim.fn.fnamemodify(name, ":p")
    if not taken[full] and not vim.uv.fs_stat(full) then
      if pcall(vim.api.nvim_buf_set_name, buf, name) then
        -- Renaming keeps the old name as an unlisted buffer (the alternate file).
        for _, other in ipairs(vim.api.nvim_list_bufs()) do
          if other ~= buf and vim.api.nvim_buf_get_name(other) == old and not vim.api.nvim_buf_is_loaded(other) then
            pcall(vim.api.nvim_buf_delete, other, { force = true })
          end
        end
      end
      return
    end
  end
end

--- Run the CLI in a new terminal now (the companion runs).
---@param extra_args? string[]
---@return integer? job
local function launch(extra_args)
  local cfg = require("gemini_companion.config").get().terminal
  if vim.fn.executable(cfg.cmd) == 0 then
    vim.notify(
      string.format(
        "Gemini companion: %q is not executable: install the Gemini CLI (npm install -g @google/gemini-cli) "
          .. "or set terminal.cmd in setup()",
        cfg.cmd
      ),
      vim.log.levels.ERROR
    )
    return nil
  end
  if current and vim.api.nvim_buf_is_valid(current.buf) then
    -- The previous CLI exited: its "[Process exited]" buffer is of no more use.
    pcall(vim.api.nvim_buf_delete, current.buf, { force = true })
  end
  local argv = { cfg.cmd }
  vim.list_extend(argv, cfg.args)
  vim.list_extend(argv, extra_args or {})
  local buf = vim.api.nvim_create_buf(false, true)
  local win = open_window(cfg, buf)
  style_window(win)
  -- Neovim's environment without the CI markers, the IDE variables (passed again:
  -- the terminal does not depend on their export), then terminal.env.
  local env = {}
  for name, value in pairs(vim.fn.environ()) do
    if not M.ci_marker(name) then
      env[name] = value
    end
  end
  env = vim.tbl_extend("force", env, require("gemini_companion.state").current.env or {}, cfg.env)
  local opts = {
    cwd = vim.fn.getcwd(),
    env = env,
    clear_env = true,
    on_exit = function(_, code)
      vim.schedule(function()
        vim.api.nvim_exec_autocmds("User", {
          pattern = "GeminiTerminalExit",
          modeline = false,
          data = { buf = buf, code = code },
        })
      end)
    end,
  }
  local job
  vim.api.nvim_buf_call(buf, function()
    if vim.fn.has("nvim-0.11") == 1 then
      opts.term = true
      job = vim.fn.jobstart(argv, opts)
    else
      job = vim.fn.termopen(argv, opts)
    end
  end)
  if job <= 0 then
    vim.notify("Gemini companion: could not start " .. table.concat(argv, " "), vim.log.levels.ERROR)
    return nil
  end
  vim.bo[buf].bufhidden = "hide"
  vim.b[buf].gemini_companion_terminal = true
  name_buffer(buf)
  current = { buf = buf, job = job }
  vim.api.nvim_exec_autocmds("User", {
    pattern = "GeminiTerminalOpen",
    modeline = false,
    data = { buf = buf, job = job },
  })
  if cfg.auto_insert then
    vim.cmd.startinsert()
  end
  return job
end

--- Start the CLI in a new terminal, once the companion runs (see with_server).
---@param extra_args? string[] appended to the configured args (e.g. { "-i", prompt })
---@param on_started? fun(job: integer) called once the CLI's job runs
local function start(extra_args, on_started)
  with_server(function(err)
    if err then
      vim.notify("Gemini companion: cannot start the Gemini CLI: " .. err, vim.log.levels.ERROR)
      return
    end
    -- The first CLI of a session may ask to turn IDE mode on (ide_mode.lua).
    local cfg = require("gemini_companion.config").get().terminal
    require("gemini_companion.ide_mode").before_start(cfg, extra_args or {}, function(extra)
      local job = launch(extra)
      if job and on_started then
        on_started(job)
      end
    end)
  end)
end

--- Show the running CLI (in the configured layout), or start one.
---@param args? string[] extra CLI arguments when a new one starts
function M.open(args)
  if alive() then
    local win = visible_win()
    if win then
      vim.api.nvim_set_current_win(win)
    else
      style_window(open_window(require("gemini_companion.config").get().terminal, current.buf))
    end
    if require("gemini_companion.config").get().terminal.auto_insert then
      vim.cmd.startinsert()
    end
    return
  end
  start(args)
end

--- Hide the CLI's window (the CLI keeps running).
function M.hide()
  local win = visible_win()
  if not win then
    return
  end
  if #vim.api.nvim_tabpage_list_wins(0) == 1 then
    if #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd.tabclose()
    else
      vim.cmd.enew() -- the only window: show an empty buffer rather than quitting
    end
    return
  end
  vim.api.nvim_win_close(win, false)
end

--- Hide the CLI when it is visible in this tab, else show or start it.
function M.toggle()
  if alive() and visible_win() then
    M.hide()
  else
    M.open()
  end
end

--- Type text into the running CLI (as if pasted), optionally pressing Enter.
--- Starts the CLI when none is running and types once it has connected to us
--- (never waiting for it: failures are reported by vim.notify). Not as a prompt
--- at its start (--prompt-interactive): the CLI connects to its IDE in the
--- background while it starts, so that prompt could reach the model, and an edit
--- be confirmed in the terminal instead of a diff, before it has connected.
---@param text string
---@param opts? { submit?: boolean }
---@return boolean sent always true: handed to the CLI, now or once it runs
function M.send(text, opts)
  opts = opts or {}
  local submit = opts.submit or false
  if alive() then
    M.open()
    require("gemini_companion.terminal.paste").type(current.job, current.buf, text, submit)
    return true
  end
  local sessions_before = #(require("gemini_companion.state").current.sessions or {})
  start(nil, function(job)
    require("gemini_companion.terminal.paste").when_connected(job, current.buf, text, sessions_before, submit)
  end)
  return true
end

--- `@path#L10-20`: the reference form the CLI reads as "these lines of this file".
---@param buf integer
---@param line1 integer
---@param line2 integer
---@return string?
function M.reference(buf, line1, line2)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" or vim.bo[buf].buftype ~= "" then
    return nil
  end
  local path = vim.fn.fnamemodify(name, ":.")
  path = path:gsub(" ", "\\ ")
  if line1 == line2 then
    return string.format("@%s#L%d", path, line1)
  end
  return string.format("@%s#L%d-%d", path, line1, line2)
end

--- :Gemini[!] [text], with an optional range (see :help :Gemini).
---@param args { args: string, bang: boolean, range: integer, line1: integer, line2: integer }
function M.command(args)
  local parts = {}
  if args.range > 0 then
    local ref = M.reference(0, args.line1, args.line2)
    if not ref then
      vim.notify("Gemini companion: this buffer is not a file; nothing to reference", vim.log.levels.WARN)
      return
    end
    parts[#parts + 1] = ref
  end
  if args.args ~= "" then
    parts[#parts + 1] = args.args
  end
  if #parts == 0 then
    M.toggle()
    return
  end
  M.send(table.concat(parts, " ") .. (args.bang and "" or " "), { submit = args.bang })
end

---@return { buf: integer, job: integer, visible: boolean }?
function M.get()
  if not alive() then
    return nil
  end
  return { buf = current.buf, job = current.job, visible = visible_win() ~= nil }
end

return M
