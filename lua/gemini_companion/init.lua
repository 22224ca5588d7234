--- gemini-companion.nvim: Gemini CLI's IDE mode for Neovim. The public API.
local M = {}

local group_name = "gemini_companion"

--- Configure the plugin. Safe to call more than once; a bad option raises an
--- error naming it and changes nothing.
---@param opts? gemini_companion.Options
function M.setup(opts)
  local compat = require("gemini_companion.compat")
  if not compat.supported() then
    return compat.too_old()
  end
  require("gemini_companion.config").set(opts)
  -- The Python the build step chose, before anything starts the Python host.
  require("gemini_companion.python").apply()
  require("gemini_companion.highlights").setup()
  -- Set up past VimEnter (a lazy load): plugin/gemini_companion.lua's hook ran already.
  if vim.v.vim_did_enter == 1 and require("gemini_companion.config").get().agent.prestart then
    require("gemini_companion.agent.spare").arm()
  end
end

--- Open the Gemini CLI in a terminal (see terminal.position), or show it.
---@param args? string[] extra CLI arguments when a new CLI starts
function M.open(args)
  require("gemini_companion.terminal").open(args)
end

--- Hide the CLI's window if it is visible in this tab, else open or show it.
function M.toggle()
  require("gemini_companion.terminal").toggle()
end

--- Type `text` into the running CLI (starting one if needed).
---@param text string
---@param opts? { submit?: boolean } submit: press Enter after it
---@return boolean sent
function M.send(text, opts)
  return require("gemini_companion.terminal").send(text, opts)
end

--- A statusline component: "Gemini" while the server runs, "Gemini ●" with a
--- connected CLI (●N for several), and "diff" while a diff waits for an answer;
--- `max_width` drops its least important parts first.
---@param opts? gemini_companion.StatuslineOptions
---@return string
function M.statusline(opts)
  return require("gemini_companion.statusline").render(opts)
end

--- Every directory Neovim works in: the global cwd, then tab and window cwds.
---@return string[]
function M.workspace_dirs()
  local dirs, seen = {}, {}
  local function add(dir)
    if dir ~= "" and not seen[dir] then
      seen[dir] = true
      dirs[#dirs + 1] = dir
    end
  end
  add(vim.fn.getcwd(-1, -1))
  for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
    local tabnr = vim.api.nvim_tabpage_get_number(tab)
    add(vim.fn.getcwd(-1, tabnr))
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
      add(vim.fn.getcwd(vim.api.nvim_win_get_number(win), tabnr))
    end
  end
  return dirs
end

local function on_workspace_change()
  require("gemini_companion.host").workspace(M.workspace_dirs())
end

local function create_autocmds()
  local group = vim.api.nvim_create_augroup(group_name, { clear = true })
  vim.api.nvim_create_autocmd({ "DirChanged", "TabClosed", "WinClosed" }, {
    group = group,
    callback = function()
      vim.schedule(on_workspace_change)
    end,
  })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    callback = function()
      -- Remove the discovery file here: the host may be killed before it can.
      local file = require("gemini_companion.state").current.discovery_file
      if file then
        os.remove(file)
      end
      require("gemini_companion.host").stop()
    end,
  })
end

--- Start the companion server (no-op if it runs).
---@param opts? { quiet?: boolean } quiet: no "already running" message (starts by the plugin itself)
function M.start(opts)
  local compat = require("gemini_companion.compat")
  if not compat.supported() then
    return compat.too_old()
  end
  local config = require("gemini_companion.config").get()
  local host = require("gemini_companion.host")
  if require("gemini_companion.state").current.host_lacks then
    host.retire() -- it could not start for want of packages: a fresh host sees a build
  end
  local pid, dirs = vim.fn.getpid(), M.workspace_dirs()
  local channel, err = host.ensure({ nvim_pid = pid, workspace_dirs = dirs })
  if not channel then
    vim.notify("Gemini companion: " .. err, vim.log.levels.ERROR, { title = "Gemini companion" })
    return
  end
  create_autocmds()
  host.start({
    nvim_pid = pid,
    workspace_dirs = dirs,
    log_file = require("gemini_companion.config").log_file(),
    log_level = config.log_level,
    keep_alive_seconds = config.keep_alive_seconds,
    max_body_bytes = config.max_request_bytes,
    context = config.context,
    allowed_dirs = config.diff.allowed_dirs,
    -- Each tool's name, description and schema (lua/gemini_companion/tools/).
    tools = vim.tbl_extend("force", config.tools, {
      list = config.tools.enabled and require("gemini_companion.tools").describe() or nil,
    }),
    quiet = opts and opts.quiet or false,
  })
  require("gemini_companion.context").enable(config.context)
end

--- Stop forwarding editor events (the server stops, or has stopped).
local function stop_forwarding()
  pcall(vim.api.nvim_del_augroup_by_name, group_name)
  if package.loaded["gemini_companion.context"] then
    require("gemini_companion.context").disable()
  end
end

--- Stop the companion server and remove its discovery file.
function M.stop()
  stop_forwarding()
  require("gemini_companion.host").stop()
end

--- The server stopped by itself (host.lua's `stopped` message): the Python side
--- has cleaned up and published the state; only the forwarding stops here.
function M._stopped()
  stop_forwarding()
end

---@return gemini_companion.State
function M.status()
  return require("gemini_companion.state").current
end

--- Lines describing the companion's state, as :GeminiCompanionStatus shows them.
---@return string[]
function M.status_lines()
  local s = M.status()
  local lines = {}
  if not s.running then
    lines[1] = "Gemini companion: not running" .. (s.error and (" (" .. s.error .. ")") or "")
    return lines
  end
  lines[#lines + 1] = "Gemini companion: running on 127.0.0.1:" .. tostring(s.port)
  lines[#lines + 1] = "  workspace:      " .. (s.workspace_path ~= "" and s.workspace_path or "(none)")
  lines[#lines + 1] = "  discovery file: " .. tostring(s.discovery_file)
  lines[#lines + 1] = "  log file:       " .. require("gemini_companion.config").log_file()
  lines[#lines + 1] = string.format("  CLI sessions:   %d connected", #s.sessions)
  for _, session in ipairs(s.sessions) do
    lines[#lines + 1] =
      string.format("    %s since %s", session.id:sub(1, 8), os.date("%H:%M:%S", math.floor(session.connected_at)))
  end
  return lines
end

function M.show_status()
  vim.api.nvim_echo({ { table.concat(M.status_lines(), "\n") } }, true, {})
end

return M
