--- Whether Gemini CLI's IDE mode is on for a CLI started by :Gemini, and the first
--- :Gemini's offer to turn it on.
---
--- Gemini CLI 0.61.0 connects to its editor only with `ide.enabled` true in its
--- settings, and nothing else turns it on (no flag, no variable; the system
--- settings files it would take from a launcher are skipped unless root owns
--- them). With IDE mode never chosen, its first interactive start asks "Do you
--- want to connect Neovim to Gemini CLI?", and its "Yes" runs `/ide install`,
--- which has no installer for Neovim ("No installer is available for Neovim"):
--- IDE mode stays off, and the question is not asked again. `/ide enable` is what
--- connects (it sets `ide.enabled: true` in the user's settings).
---
--- So the plugin reads the settings (never writes them) and, when `ide.enabled`
--- was never set, asks the user in Neovim, once a session, before the CLI starts:
--- "Yes" starts the CLI with `-i "/ide enable"`, so the CLI's own command turns it
--- on, at the user's word, and the CLI's question never shows; "No" starts it as
--- it is, and says how to connect later without meeting the dead end.
local M = {}

---@class gemini_companion.IdeModeSetting
---@field enabled? boolean `ide.enabled` where it is set (nil: never chosen)
---@field file? string the settings file that sets it, or the user's settings file
---@field error? string a settings file that cannot be read

--- A settings file's text as JSON: the CLI allows comments in them.
---@param text string
---@return table?
local function decode(text)
  local ok, value = pcall(vim.json.decode, text)
  if not ok then
    -- Whole-line // comments and /* */ blocks (what the CLI's own files hold).
    local stripped = ("\n" .. text):gsub("/%*.-%*/", ""):gsub("\n%s*//[^\n]*", "\n")
    ok, value = pcall(vim.json.decode, stripped)
  end
  return ok and type(value) == "table" and value or nil
end

---@param env table<string, string>
---@param name string
---@return string?
local function var(env, name)
  local value = env[name] or vim.env[name]
  return value ~= "" and value or nil
end

--- The settings files that can set `ide.enabled`, strongest first (0.61.0's merge:
--- system over workspace over user over system defaults). The workspace's is left
--- out: the CLI reads it only in a folder the user trusts.
---@param env? table<string, string> the CLI's environment over Neovim's
---@return string[]
function M.settings_files(env)
  env = env or {}
  local system_dir = vim.fn.has("mac") == 1 and "/Library/Application Support/GeminiCli" or "/etc/gemini-cli"
  return {
    var(env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH") or system_dir .. "/settings.json",
    require("gemini_companion.extension").gemini_dir(env) .. "/settings.json",
    var(env, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or system_dir .. "/system-defaults.json",
  }
end

--- `ide.enabled` as the CLI started by :Gemini will see it.
---@param env? table<string, string>
---@return gemini_companion.IdeModeSetting
function M.read(env)
  local files = M.settings_files(env)
  for _, path in ipairs(files) do
    local file = io.open(path, "r")
    if file then
      local text = file:read("*a") or ""
      file:close()
      local settings = decode(text)
      if not settings then
        return { file = path, error = path .. " is not valid JSON" }
      end
      local ide = settings.ide
      if type(ide) == "table" and type(ide.enabled) == "boolean" then
        return { enabled = ide.enabled, file = path }
      end
    end
  end
  return { file = files[2] }
end

-- Asked once a session.
local asked = false

---@param args string[]
---@return boolean
local function has_prompt(args)
  for _, arg in ipairs(args) do
    if arg == "-i" or arg == "-p" or vim.startswith(arg, "--prompt") then
      return true
    end
  end
  return false
end

M.yes = "Yes: run /ide enable in the CLI (it sets ide.enabled: true in your Gemini settings)"
M.no = "No: start the CLI as it is"

--- What to tell a user who chose not to turn it on now.
---@param file string
---@return string
function M.advice(file)
  return "Gemini companion: to connect the CLI to Neovim later, type /ide enable in it (it sets ide.enabled in "
    .. file
    .. '). If the CLI asks "Do you want to connect Neovim to Gemini CLI?", answer No: its Yes looks for '
    .. 'an installer Neovim does not need and ends in "No installer is available for Neovim".'
end

--- Before the first CLI of a session starts: when IDE mode was never chosen, ask
--- (vim.ui.select, so the user's picker shows it) and call `start(extra)` with
--- `-i "/ide enable"` added on "Yes", as they are otherwise. At once when there is
--- nothing to ask: asked already, a prompt among the arguments, a `terminal.cmd`
--- that is not the Gemini CLI (its name does not start with "gemini") or is not
--- installed, IDE mode set either way, or settings that cannot be read.
---@param cfg gemini_companion.TerminalConfig
---@param extra string[] arguments after terminal.args
---@param start fun(extra: string[])
function M.before_start(cfg, extra, start)
  local env = cfg.env or {}
  local name = vim.fs.basename(cfg.cmd)
  if
    asked
    or not vim.startswith(name, "gemini")
    or vim.fn.executable(cfg.cmd) == 0
    or has_prompt(cfg.args)
    or has_prompt(extra)
  then
    start(extra)
    return
  end
  local setting = M.read(env)
  if setting.enabled ~= nil or setting.error then
    start(extra)
    return
  end
  asked = true
  local prompt = string.format(
    "Gemini CLI's IDE mode is not on (no ide.enabled in %s): without it the CLI does not connect to "
      .. "Neovim (no diffs here, no open files). Turn it on now?",
    setting.file
  )
  vim.ui.select({ M.yes, M.no }, { prompt = prompt, kind = "gemini_companion.ide_enable" }, function(_, idx)
    vim.schedule(function()
      if idx == 1 then
        local with = vim.list_extend({}, extra)
        vim.list_extend(with, { "-i", "/ide enable" })
        start(with)
      else
        vim.notify(M.advice(setting.file --[[@as string]]), vim.log.levels.INFO)
        start(extra)
      end
    end)
  end)
end

--- :checkhealth: whether a CLI started by :Gemini connects.
function M.check_health()
  local health = vim.health
  local cfg = require("gemini_companion.config").get().terminal
  local setting = M.read(cfg.env)
  local dead_end = 'If the CLI asks "Do you want to connect Neovim to Gemini CLI?", answer No: its Yes '
    .. 'looks for an installer and ends in "No installer is available for Neovim" (there is nothing to '
    .. "install: this plugin is the companion)"
  if setting.error then
    health.warn("cannot tell whether Gemini CLI's IDE mode is on: " .. setting.error, {
      "Fix the file; the CLI refuses to start with it too",
    })
  elseif setting.enabled then
    health.ok("Gemini CLI's IDE mode is on (ide.enabled in " .. setting.file .. "): a CLI started by :Gemini connects")
  elseif setting.enabled == false then
    health.warn(
      "Gemini CLI's IDE mode is off (ide.enabled: false in "
        .. setting.file
        .. "): a CLI started by :Gemini "
        .. "does not connect to Neovim",
      { "Type /ide enable in the CLI (it sets ide.enabled: true there)" }
    )
  else
    health.warn(
      "Gemini CLI's IDE mode was never turned on (no ide.enabled in "
        .. setting.file
        .. "): a CLI started "
        .. "by :Gemini does not connect to Neovim until it is",
      {
        "The first :Gemini of a session asks whether to run the CLI's /ide enable (which sets "
          .. "ide.enabled: true in that file); or type /ide enable in the CLI yourself",
        dead_end,
      }
    )
  end
end

--- Forget that the question was asked (tests).
function M._reset()
  asked = false
end

return M
