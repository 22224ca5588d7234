--- :checkhealth gemini_companion. Checks in the order a user fixes things:
--- Neovim, the build (venv and host choice), the Python host and its packages,
--- the server, the discovery file, the terminal environment, the Gemini CLI,
--- connected sessions.
local M = {}

-- Neovim before 0.10 has the older names (and before 0.9 only the "health" module):
-- enough to say that it is too old.
local health = vim.health or require("health")
health = {
  start = health.start or health.report_start,
  ok = health.ok or health.report_ok,
  info = health.info or health.report_info,
  warn = health.warn or health.report_warn,
  error = health.error or health.report_error,
}
-- The agent panel's checks (agent/checks.lua) report through the same names.
M.report = health

---@return table<string, string> pinned version from pyproject.toml, by distribution name
local function pins()
  local ok, deps = pcall(function()
    return require("gemini_companion.build").dependencies(require("gemini_companion.build").root())
  end)
  local result = {}
  for _, dep in ipairs(ok and deps or {}) do
    local name, version = dep:match("^([%w%-_%.]+)%s*==%s*(.+)$")
    if name then
      result[name:lower()] = version
    end
  end
  return result
end

local rebuild = "run :GeminiCompanionBuild (lazy.nvim: :Lazy build gemini-companion.nvim)"

---@return boolean supported
local function check_neovim()
  local compat = require("gemini_companion.compat")
  local v = vim.version()
  local text = string.format("Neovim %d.%d.%d", v.major, v.minor, v.patch)
  if compat.supported() then
    health.ok(text)
    return true
  end
  health.error(
    text .. " is too old: Neovim " .. compat.minimum .. " or newer is required",
    { "Upgrade Neovim; the plugin does nothing on this one" }
  )
  return false
end

local function check_build()
  local python = require("gemini_companion.python")
  local info = python.build_info(true)
  if not info then
    -- Fine when the host already has the packages (a development setup); the
    -- package checks below say whether it does.
    health.info(
      "the build step has not run (no "
        .. python.build_file()
        .. "): the Python host's own packages must serve; to build: "
        .. rebuild
    )
    return
  end
  if not info.ok then
    health.error("the last build failed: " .. tostring(info.error), { "Fix what the message names, then " .. rebuild })
    return
  end
  health.ok(
    string.format(
      "%s (Python %s, built %s)",
      info.venv and ("venv " .. info.venv) or "no venv needed",
      info.python_version,
      os.date("%F %T", info.built_at)
    )
  )
  if info.mode == "own" then
    health.ok("Python host: the plugin's venv (" .. tostring(info.host_python) .. "). Why: " .. info.reason)
  else
    health.ok("Python host: kept yours (" .. tostring(info.host_python) .. "). Why: " .. info.reason)
  end
end

local function check_host()
  local host = require("gemini_companion.host")
  local channel, err = host.ensure()
  if not channel then
    health.error("the Python host did not start: " .. tostring(err), {
      rebuild,
    })
    return false
  end
  local python = require("gemini_companion.python")
  -- Asked and answered by notifications, so a busy host cannot hold Neovim here; a
  -- host that is still starting answers once it is up.
  local info, query_err = host.query_info({ packages = python.pinned_packages }, 5000)
  if not info then
    local said = host.stderr()
    health.error(
      "the Python host does not answer: " .. tostring(query_err) .. (said ~= "" and ("; it said:\n" .. said) or ""),
      {
        "The log file may say why: " .. require("gemini_companion.config").log_file(),
        rebuild,
      }
    )
    return false
  end
  local version = info.python_version or "?"
  local major, minor = version:match("^(%d+)%.(%d+)")
  local text = string.format("Python host: %s (Python %s)", tostring(info.python), version)
  if major and (tonumber(major) > 3 or tonumber(minor) >= 10) then
    health.ok(text)
  else
    health.error(
      text,
      { "gemini-companion needs Python 3.10+: point g:python3_host_prog at one, or unset it; " .. rebuild }
    )
  end
  local venv_text = {
    host = "the host runs the plugin's venv",
    appended = "the plugin's venv is on the host's sys.path, behind its own packages",
    unset = "no plugin venv in use (the host's own packages serve)",
  }
  if venv_text[info.venv] then
    health.ok(venv_text[info.venv])
  elseif info.venv == "missing" then
    health.warn("the plugin's venv is missing: " .. tostring(vim.env.GEMINI_COMPANION_VENV), { rebuild })
  else
    health.warn("the plugin's venv is not usable by this host: " .. tostring(info.venv), {
      "The venv was built for another Python than the host's: " .. rebuild,
    })
  end
  local pinned = pins()
  local packages = info.packages or {}
  local missing = false
  for _, name in ipairs(python.pinned_packages) do
    local have, want = packages[name], pinned[name]
    if not have then
      missing = true
      health.error(name .. " is not installed for the host", { rebuild })
    elseif want and have ~= want then
      health.warn(
        string.format("%s %s (tested with %s)", name, have, want),
        { rebuild .. " to get the tested version" }
      )
    else
      health.ok(name .. " " .. have)
    end
  end
  return not missing
end

local function check_server()
  local state = require("gemini_companion.state").current
  if not state.running then
    health.error("the companion server is not running" .. (state.error and (": " .. state.error) or ""), {
      "Run :GeminiCompanionStart (it starts by itself on VimEnter unless auto_start = false)",
      "The log file may say more: " .. require("gemini_companion.config").log_file(),
    })
    return false
  end
  health.ok(string.format("server running on 127.0.0.1:%d", state.port))
  local file = state.discovery_file
  local stat = file and vim.uv.fs_stat(file)
  if not stat then
    health.error("discovery file missing: " .. tostring(file), {
      "Something removed it; restart the server (:GeminiCompanionStop, :GeminiCompanionStart)",
    })
  else
    local mode = bit.band(stat.mode, 511)
    if mode == 384 and stat.uid == vim.uv.getuid() then
      health.ok("discovery file " .. file .. " (mode 0600, yours)")
    else
      health.error(string.format("discovery file %s has mode %o, owner %d", file, mode, stat.uid), {
        "It must be readable by you only: restart the server to rewrite it",
      })
    end
  end
  local missing = {}
  for name, value in pairs(state.env or {}) do
    if vim.env[name] ~= value then
      missing[#missing + 1] = name
    end
  end
  if #missing == 0 and next(state.env or {}) then
    local names = vim.tbl_keys(state.env)
    table.sort(names)
    health.ok("exported to terminals: " .. table.concat(names, ", "))
  else
    health.error("not exported to terminals: " .. table.concat(missing, ", "), {
      "Another plugin or your config changed them; restart the server",
    })
  end
  return true
end

local function check_cli()
  local cmd = require("gemini_companion.config").get().terminal.cmd
  local path = vim.fn.exepath(cmd)
  if path == "" then
    health.warn(string.format("the Gemini CLI (%q) is not on PATH", cmd), {
      "npm install -g @google/gemini-cli, or set terminal.cmd in setup() to its path",
    })
    return
  end
  local version = require("gemini_companion.extension").cli_version(path)
  if version then
    health.ok(string.format("Gemini CLI %s (%s)", version, path))
  else
    health.warn("the Gemini CLI at " .. path .. " did not tell its version", {
      "Run `" .. path .. " --version` in a shell to see why",
    })
  end
end

local function check_sessions()
  local state = require("gemini_companion.state").current
  local n = #(state.sessions or {})
  if n > 0 then
    health.ok(string.format("%d Gemini CLI session(s) connected", n))
  else
    -- IDE mode as the CLI reads it (ide_mode.lua): the advice to turn it on only
    -- while it is not (the check above says how).
    local cfg = require("gemini_companion.config").get().terminal
    local on = require("gemini_companion.ide_mode").read(cfg.env).enabled == true
    health.info(
      "no Gemini CLI connected: run :Gemini (or `gemini` in a :terminal)" .. (on and "" or ", with IDE mode on (above)")
    )
  end
end

--- The panel's agent: not running, failed (and what to do), or reached.
---@param current table the agent's state (gemini_companion.agent.state)
---@param how { stopped: boolean, stopped_text: string, retry: string, verb: string, where: string }
function M.check()
  health.start("gemini-companion: Neovim")
  if not check_neovim() then
    return
  end
  health.start("gemini-companion: build and Python host")
  check_build()
  if check_host() then
    health.start("gemini-companion: server")
    check_server()
  end
  health.start("gemini-companion: Gemini CLI")
  check_cli()
  require("gemini_companion.extension").check_health()
  require("gemini_companion.ide_mode").check_health()
  check_sessions()
  health.start("gemini-companion: agent panel")
  require("gemini_companion.agent.checks").check()
end

return M
