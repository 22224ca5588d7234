--- The Gemini CLI extension that gives a CLI started inside Neovim the plugin's
--- tools (`gemini-extension/` at the plugin's root).
---
--- Gemini CLI 0.61.0 takes MCP servers only from its settings files and its
--- extensions. The files a launcher could point it to (GEMINI_CLI_SYSTEM_SETTINGS_PATH,
--- GEMINI_CLI_SYSTEM_DEFAULTS_PATH) are skipped unless root owns them, so the
--- plugin ships an extension instead, linked once into the user's Gemini home with
--- `gemini extensions link` (the build step does it). Its `mcpServers` entry
--- names the server by the variables every terminal of Neovim gets
--- (GEMINI_CLI_IDE_SERVER_PORT, GEMINI_CLI_IDE_AUTH_TOKEN), which the CLI expands
--- when it loads the extension.
local M = {}

M.name = "gemini-companion-nvim"

---@return string the extension's folder in the plugin
function M.dir()
  return require("gemini_companion.build").root() .. "/gemini-extension"
end

--- The Gemini home a CLI with environment `env` uses (`$GEMINI_CLI_HOME/.gemini`,
--- else `$HOME/.gemini`).
---@param env? table<string, string> the CLI's environment over Neovim's
---@return string
function M.gemini_dir(env)
  env = env or {}
  local base = env.GEMINI_CLI_HOME or vim.env.GEMINI_CLI_HOME
  if base and base ~= "" then
    return base .. "/.gemini"
  end
  return (env.HOME or vim.env.HOME or vim.uv.os_homedir()) .. "/.gemini"
end

--- Whether this plugin's extension is linked into the Gemini home of `env`.
---@param env? table<string, string>
---@return boolean
function M.linked(env)
  local path = M.gemini_dir(env) .. "/extensions/" .. M.name .. "/.gemini-extension-install.json"
  local file = io.open(path, "r")
  if not file then
    return false
  end
  local ok, meta = pcall(vim.json.decode, file:read("*a"))
  file:close()
  return ok and type(meta) == "table" and meta.source == M.dir()
end

--- Link the extension with the CLI's own command (blocking: for the build step).
---@param cmd string the gemini executable
---@param env? table<string, string>
---@param timeout_ms? integer
---@return boolean ok
---@return string message
function M.link(cmd, env, timeout_ms)
  if M.linked(env) then
    return true, "already linked"
  end
  if vim.fn.executable(cmd) == 0 then
    return false, cmd .. " is not executable"
  end
  local argv = { cmd, "extensions", "link", M.dir(), "--consent" }
  local ok, proc = pcall(vim.system, argv, { text = true, env = env })
  if not ok then
    return false, tostring(proc)
  end
  local done = proc:wait(timeout_ms or 60000)
  if done.code ~= 0 or not M.linked(env) then
    local output = vim.trim((done.stderr or "") .. "\n" .. (done.stdout or ""))
    return false, string.format("`%s` failed (exit %d): %s", table.concat(argv, " "), done.code, output)
  end
  return true, "linked into " .. M.gemini_dir(env) .. "/extensions"
end

return M
