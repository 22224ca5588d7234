--- Defaults, merging and validation of the options given to `setup()`.
local M = {}

---@type gemini_companion.Config
M.defaults = {
  auto_start = true,
  log_level = "info",
  log_file = nil,
  keep_alive_seconds = 15,
  max_request_bytes = 64 * 1024 * 1024,
  context = { debounce_ms = 50 },
  tools = { enabled = true, lsp_timeout_ms = 3000 },
  diff = {
    keymaps = { accept = "<LocalLeader>a", reject = "<LocalLeader>r" },
    allowed_dirs = {},
  },
  agent = {
    -- ACP: the `gemini` CLI users already have, with its own login and settings
    -- (README "Choosing a protocol" says why it is the default).
    protocol = "acp",
    a2a = {
      url = nil,
      cmd = { "gemini-cli-a2a-server" },
      env = {},
    },
    acp = {
      cmd = { "gemini", "--acp" },
      env = {},
      auth_method = nil,
      startup_timeout = 60,
      cancel_timeout = 5,
    },
    panel = { position = "right", size = 0.4, prompt_height = 6 },
    keymaps = {
      send = "<CR>",
      send_insert = "<C-s>",
      cancel = "<C-c>",
      accept = "<LocalLeader>a",
      reject = "<LocalLeader>r",
      close = "q",
      history_prev = "<C-p>",
      history_next = "<C-n>",
    },
  },
  terminal = {
    cmd = "gemini",
    args = {},
    env = {},
    position = "right",
    size = 0.4,
    float = { width = 0.8, height = 0.8, border = "rounded" },
    auto_insert = true,
  },
}

---@type gemini_companion.Config
local current = vim.deepcopy(M.defaults)

local log_levels = { debug = true, info = true, warning = true, error = true }

---@param path string
---@param value any
---@param expected string|string[]
---@param optional? boolean
local function check_type(path, value, expected, optional)
  if value == nil and optional then
    return
  end
  local types = type(expected) == "table" and expected or { expected }
  for _, t in ipairs(types) do
    if type(value) == t then
      return
    end
  end
  error(
    string.format(
      "gemini_companion.setup: option '%s' must be %s, got %s",
      path,
      table.concat(types, " or "),
      vim.inspect(value)
    ),
    0
  )
end

---@param path string
---@param cond boolean
---@param message string
local function check(path, cond, message)
  if not cond then
    error(string.format("gemini_companion.setup: option '%s' %s", path, message), 0)
  end
end

---@param path string
---@param tbl table
---@param defaults table
local function check_known(path, tbl, defaults)
  for key in pairs(tbl) do
    check(path .. "." .. tostring(key), defaults[key] ~= nil, "is not a known option")
  end
end

local positions = { right = true, left = true, bottom = true, float = true, tab = true }

---@param t gemini_companion.TerminalConfig
local function validate_terminal(t)
  check_type("terminal", t, "table")
  check_known("terminal", t, M.defaults.terminal)
  check_type("terminal.cmd", t.cmd, "string")
  check("terminal.cmd", t.cmd ~= "", "must not be empty")
  check_type("terminal.args", t.args, "table")
  for i, arg in ipairs(t.args) do
    check_type("terminal.args[" .. i .. "]", arg, "string")
  end
  check_type("terminal.env", t.env, "table")
  for name, value in pairs(t.env) do
    check_type("terminal.env." .. tostring(name), value, "string")
  end
  check_type("terminal.position", t.position, "string")
  check("terminal.position", positions[t.position] ~= nil, "must be one of right, left, bottom, float, tab")
  check_type("terminal.size", t.size, "number")
  check("terminal.size", t.size > 0, "must be positive (a fraction of the screen below 1, else columns or lines)")
  check_type("terminal.float", t.float, "table")
  check_known("terminal.float", t.float, M.defaults.terminal.float)
  for _, dim in ipairs({ "width", "height" }) do
    check_type("terminal.float." .. dim, t.float[dim], "number")
    check("terminal.float." .. dim, t.float[dim] > 0 and t.float[dim] <= 1, "must be a fraction in (0, 1]")
  end
  check_type("terminal.float.border", t.float.border, { "string", "table" })
  check_type("terminal.auto_insert", t.auto_insert, "boolean")
end

---@param c gemini_companion.ContextConfig
local function validate_context(c)
  check_type("context", c, "table")
  check_known("context", c, { debounce_ms = true, trusted = true })
  check_type("context.debounce_ms", c.debounce_ms, "number")
  check("context.debounce_ms", c.debounce_ms >= 0 and c.debounce_ms <= 10000, "must be between 0 and 10000")
  check_type("context.trusted", c.trusted, "boolean", true)
end

---@param t gemini_companion.ToolsConfig
local function validate_tools(t)
  check_type("tools", t, "table")
  check_known("tools", t, M.defaults.tools)
  check_type("tools.enabled", t.enabled, "boolean")
  check_type("tools.lsp_timeout_ms", t.lsp_timeout_ms, "number")
  check("tools.lsp_timeout_ms", t.lsp_timeout_ms >= 1 and t.lsp_timeout_ms <= 60000, "must be between 1 and 60000")
end

---@param d gemini_companion.DiffConfig
local function validate_diff(d)
  check_type("diff", d, "table")
  for key in pairs(d) do
    check("diff." .. tostring(key), M.defaults.diff[key] ~= nil, "is not a known option")
  end
  check_type("diff.allowed_dirs", d.allowed_dirs, "table")
  for i, dir in ipairs(d.allowed_dirs) do
    local path = "diff.allowed_dirs[" .. i .. "]"
    check_type(path, dir, "string")
    check(path, vim.startswith(dir, "/") or vim.startswith(dir, "~/") or dir == "~", "must be an absolute path")
  end
  check_type("diff.keymaps", d.keymaps, "table")
  for key, lhs in pairs(d.keymaps) do
    local path = "diff.keymaps." .. tostring(key)
    check(path, M.defaults.diff.keymaps[key] ~= nil, "is not a known option (accept, reject)")
    check_type(path, lhs, { "string", "boolean" })
    check(path, lhs ~= true and lhs ~= "", "must be a key sequence, or false for none")
  end
end

---@param path string
---@param list any
local function check_command(path, list)
  check_type(path, list, "table")
  check(path, #list > 0 and vim.islist(list), "must be a list: the command and its arguments")
  for i, arg in ipairs(list) do
    check_type(path .. "[" .. i .. "]", arg, "string")
  end
end

---@param path string
---@param env any
local function check_env(path, env)
  check_type(path, env, "table")
  for name, value in pairs(env) do
    check_type(path .. "." .. tostring(name), value, "string")
  end
end

---@param a gemini_companion.AgentConfig
local function validate_agent(a)
  check_type("agent", a, "table")
  check_known("agent", a, M.defaults.agent)
  check_type("agent.protocol", a.protocol, "string")
  check("agent.protocol", a.protocol == "a2a" or a.protocol == "acp", "must be one of a2a, acp")
  check_type("agent.a2a", a.a2a, "table")
  check_known("agent.a2a", a.a2a, { url = true, cmd = true, env = true })
  check_type("agent.a2a.url", a.a2a.url, "string", true)
  if a.a2a.url then
    check("agent.a2a.url", a.a2a.url:match("^https?://") ~= nil, "must be an http:// or https:// URL")
  end
  check_command("agent.a2a.cmd", a.a2a.cmd)
  check_env("agent.a2a.env", a.a2a.env)
  check_type("agent.acp", a.acp, "table")
  check_known(
    "agent.acp",
    a.acp,
    { cmd = true, env = true, auth_method = true, startup_timeout = true, cancel_timeout = true }
  )
  check_command("agent.acp.cmd", a.acp.cmd)
  check_env("agent.acp.env", a.acp.env)
  check_type("agent.acp.auth_method", a.acp.auth_method, "string", true)
  for _, name in ipairs({ "startup_timeout", "cancel_timeout" }) do
    local path = "agent.acp." .. name
    check_type(path, a.acp[name], "number")
    check(path, a.acp[name] > 0, "must be a positive number of seconds")
  end
  check_type("agent.panel", a.panel, "table")
  check_known("agent.panel", a.panel, M.defaults.agent.panel)
  check_type("agent.panel.position", a.panel.position, "string")
  check("agent.panel.position", a.panel.position == "right" or a.panel.position == "left", "must be right or left")
  check_type("agent.panel.size", a.panel.size, "number")
  check("agent.panel.size", a.panel.size > 0, "must be positive (a fraction of the width below 1, else columns)")
  check_type("agent.panel.prompt_height", a.panel.prompt_height, "number")
  check("agent.panel.prompt_height", a.panel.prompt_height >= 1, "must be at least 1")
  check_type("agent.keymaps", a.keymaps, "table")
  check_known("agent.keymaps", a.keymaps, M.defaults.agent.keymaps)
  for key, lhs in pairs(a.keymaps) do
    local path = "agent.keymaps." .. tostring(key)
    check_type(path, lhs, { "string", "boolean" })
    check(path, lhs ~= true and lhs ~= "", "must be a key sequence, or false for none")
  end
end

--- Validate a merged configuration; raises an error naming the first bad field.
---@param config gemini_companion.Config
function M.validate(config)
  local known = {}
  for key in pairs(M.defaults) do
    known[key] = true
  end
  known.log_file = true
  for key in pairs(config) do
    check(tostring(key), known[key] ~= nil, "is not a known option")
  end
  check_type("auto_start", config.auto_start, "boolean")
  check_type("log_level", config.log_level, "string")
  check("log_level", log_levels[config.log_level] ~= nil, "must be one of debug, info, warning, error")
  check_type("log_file", config.log_file, "string", true)
  check_type("keep_alive_seconds", config.keep_alive_seconds, "number")
  check("keep_alive_seconds", config.keep_alive_seconds > 0, "must be positive")
  check_type("max_request_bytes", config.max_request_bytes, "number")
  check("max_request_bytes", config.max_request_bytes >= 1024, "must be at least 1024")
  validate_context(config.context)
  validate_tools(config.tools)
  validate_diff(config.diff)
  validate_terminal(config.terminal)
  validate_agent(config.agent)
end

--- Merge `opts` over the defaults, validate, and make the result current.
--- Nothing changes when validation fails.
---@param opts? gemini_companion.Options
---@return gemini_companion.Config
function M.set(opts)
  check_type("opts", opts, "table", true)
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  -- Lists are values, not tables to merge index by index: a user's command replaces
  -- the default one whole.
  for _, path in ipairs({ { "agent", "a2a", "cmd" }, { "agent", "acp", "cmd" } }) do
    local given = vim.tbl_get(opts or {}, unpack(path))
    if given ~= nil then
      merged[path[1]][path[2]][path[3]] = vim.deepcopy(given)
    end
  end
  M.validate(merged)
  current = merged
  return current
end

---@return gemini_companion.Config
function M.get()
  return current
end

---@return string
function M.log_file()
  return current.log_file or (vim.fn.stdpath("log") .. "/gemini-companion.log")
end

return M
