--- The Gemini CLI extension that gives a CLI started inside Neovim the plugin's
--- tools (`gemini-extension/` at the plugin's root).
---
--- Gemini CLI 0.61.0 takes MCP servers only from its settings files and its
--- extensions. The files a launcher could point it to (GEMINI_CLI_SYSTEM_SETTINGS_PATH,
--- GEMINI_CLI_SYSTEM_DEFAULTS_PATH) are skipped unless root owns them, so the
--- plugin ships an extension instead, linked once into the user's Gemini home (the
--- build step does it). Its `mcpServers` entry names the server by the variables
--- every terminal of Neovim gets (GEMINI_CLI_IDE_SERVER_PORT,
--- GEMINI_CLI_IDE_AUTH_TOKEN), which the CLI expands when it loads the extension.
---
--- The link is written here, not by `gemini extensions link`: that command also
--- marks the folder it runs in trusted (`trustedFolders.json`, TRUST_FOLDER), and
--- leaves an enablement entry, an integrity key and record, a project registry and
--- history folders behind. What a link is to the CLI is one file,
--- `extensions/<name>/.gemini-extension-install.json` holding
--- `{"source": <folder>, "type": "link"}`: the CLI loads the extension from that
--- folder, enabled (no enablement entry means enabled everywhere), and never
--- updates a link (so it never asks for the integrity record). That file, and its
--- folder, is all the plugin writes into the Gemini home.
local M = {}

M.name = "gemini-companion-nvim"

-- The CLI's name for a linked or installed extension's record (0.61.0).
local install_file = ".gemini-extension-install.json"

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

--- The folder of this plugin's entry in the Gemini home of `env`.
---@param env? table<string, string>
---@return string
function M.entry_dir(env)
  return M.gemini_dir(env) .. "/extensions/" .. M.name
end

--- The install record at `dir`, if it is one.
---@param dir string
---@return table?
local function read_record(dir)
  local file = io.open(dir .. "/" .. install_file, "r")
  if not file then
    return nil
  end
  local ok, meta = pcall(vim.json.decode, file:read("*a"))
  file:close()
  return ok and type(meta) == "table" and meta or nil
end

--- Whether this plugin's extension is linked into the Gemini home of `env`.
---@param env? table<string, string>
---@return boolean
function M.linked(env)
  local meta = read_record(M.entry_dir(env))
  return meta ~= nil and meta.type == "link" and meta.source == M.dir()
end

--- Link the extension into the Gemini home of `env`: write the one record the CLI
--- reads for a linked extension (see the top of this file), nothing else. An entry
--- of the same name that is not a link to this plugin is left alone (and said),
--- unless it is a link whose folder is gone (the plugin moved).
---@param env? table<string, string>
---@return boolean ok
---@return string message
function M.link(env)
  if M.linked(env) then
    return true, "already linked"
  end
  local dir = M.entry_dir(env)
  if vim.uv.fs_lstat(dir) then
    local meta = read_record(dir)
    local stale = meta
      and meta.type == "link"
      and type(meta.source) == "string"
      and not vim.uv.fs_stat(meta.source .. "/gemini-extension.json")
    if not stale then
      local what = meta and meta.type == "link" and ("a link to " .. tostring(meta.source))
        or "not a link of this plugin"
      return false,
        string.format(
          "%s exists and is %s: left as it is (remove it with `gemini extensions uninstall %s`, then rebuild)",
          dir,
          what,
          M.name
        )
    end
  end
  local ok, err = pcall(vim.fn.mkdir, dir, "p")
  if not ok or vim.fn.isdirectory(dir) == 0 then
    return false, "cannot create " .. dir .. ": " .. tostring(err)
  end
  -- As the CLI writes it (JSON.stringify(metadata, null, 2)).
  local text = string.format('{\n  "source": %s,\n  "type": "link"\n}', vim.json.encode(M.dir()))
  local tmp = dir .. "/" .. install_file .. ".tmp"
  local file, open_err = io.open(tmp, "w")
  if not file then
    return false, "cannot write " .. tmp .. ": " .. tostring(open_err)
  end
  file:write(text)
  file:close()
  local renamed, rename_err = os.rename(tmp, dir .. "/" .. install_file)
  if not renamed then
    os.remove(tmp)
    return false, "cannot write " .. dir .. "/" .. install_file .. ": " .. tostring(rename_err)
  end
  return true, "linked into " .. M.gemini_dir(env) .. "/extensions"
end

--- The version of the Gemini CLI at `path`, without running it (a `gemini
--- --version` leaves project-registry files in the user's Gemini home): from the
--- package.json of the npm package its real path lies in; else from `--version`
--- run with a throwaway home, removed afterwards.
---@param path string the executable
---@return string?
function M.cli_version(path)
  local real = vim.uv.fs_realpath(path)
  local dir = real and vim.fs.dirname(real)
  for _ = 1, 4 do
    if not dir then
      break
    end
    local file = io.open(dir .. "/package.json", "r")
    if file then
      local ok, meta = pcall(vim.json.decode, file:read("*a"))
      file:close()
      if ok and type(meta) == "table" and meta.name == "@google/gemini-cli" and type(meta.version) == "string" then
        return meta.version
      end
    end
    dir = vim.fs.dirname(dir)
  end
  local home = vim.fn.tempname()
  vim.fn.mkdir(home, "p", tonumber("700", 8))
  local ok, out = pcall(function()
    return vim
      .system({ path, "--version" }, {
        text = true,
        cwd = home,
        env = { HOME = home, GEMINI_CLI_HOME = home },
      })
      :wait(15000)
  end)
  vim.fn.delete(home, "rf")
  local version = ok and out.code == 0 and vim.trim(out.stdout or "") or ""
  return version ~= "" and version or nil
end

--- :checkhealth: whether a CLI started by :Gemini gets Neovim's tools.
function M.check_health()
  local health = vim.health
  local config = require("gemini_companion.config").get()
  if not config.tools.enabled then
    health.info("Neovim's tools for the agent are off (tools.enabled = false)")
    return
  end
  local extension = M
  if M.linked(config.terminal.env) then
    health.ok("Neovim's tools reach a CLI started in Neovim: the extension " .. extension.name .. " is linked")
  else
    health.warn(
      "the Gemini CLI extension " .. extension.name .. " is not linked: the CLI does not see Neovim's tools",
      {
        "Run :GeminiCompanionBuild with the Gemini CLI installed: it writes the link into " .. extension.entry_dir(
          config.terminal.env
        ) .. " (not `gemini extensions link`, which also marks the folder it runs in trusted)",
      }
    )
  end
end

return M
