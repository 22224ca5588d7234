--- The build step: the plugin's own Python virtual environment with the
--- dependencies pinned in pyproject.toml, the choice of the Python host and the
--- help tags. Run by lazy.nvim through
--- build.lua at the plugin's root, by packer/vim-plug through
--- :GeminiCompanionBuild.
---
--- It never blocks Neovim: every program it runs (Python probes, venv, pip,
--- compileall) runs with vim.system() and a callback, the steps chained in a
--- coroutine of their own. Once done, the companion starts in the same session
--- (its Python side is a job of its own, host.lua: nothing to register).
---
--- The Python host's choice and the venv are in build/python_host.lua; this file
--- runs the steps (a coroutine, each program through M.exec) and the rest of them.
local python = require("gemini_companion.python")

local M = {}

---@class gemini_companion.BuildOptions
---@field progress? fun(msg: string) each step's message (default: echoed)
---@field on_done? fun(ok: boolean, message: string) the outcome (default: notified)
---@field start? boolean start the companion when done, if auto_start (default: true)

---@class gemini_companion.BuildState
---@field co thread the steps
---@field done boolean
---@field ok? boolean
---@field message? string
---@field callbacks fun(ok: boolean, message: string)[]
---@field progress fun(msg: string)
---@field proc? vim.SystemObj the program running now

---@type gemini_companion.BuildState?
local current

---@return string root of the plugin (the folder holding lua/, plugin/, rplugin/)
function M.root()
  local source = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(source, ":p:h:h:h")
end

--- The runtime dependencies listed in pyproject.toml's [project] dependencies.
---@param root string
---@return string[]
function M.dependencies(root)
  local file = assert(io.open(root .. "/pyproject.toml", "r"))
  local text = file:read("*a")
  file:close()
  local block = text:match("\ndependencies%s*=%s*(%b[])")
  local deps = {}
  for dep in (block or ""):gmatch('"([^"]+)"') do
    deps[#deps + 1] = dep
  end
  assert(#deps > 0, "no dependencies found in pyproject.toml")
  return deps
end

--- End the build with `message` (from inside its steps).
---@param message string
function M.fail(message)
  error(message, 0)
end

--- Run a program from inside the build's coroutine: yields until it exits.
---@param cmd string[]
---@param opts? { timeout?: integer, env?: table<string, string> }
---@return vim.SystemCompleted
function M.exec(cmd, opts)
  local state = assert(current)
  local co = coroutine.running()
  assert(co == state.co, "exec() runs in the build's coroutine")
  local ok, proc = pcall(
    vim.system,
    cmd,
    { text = true, env = opts and opts.env, timeout = opts and opts.timeout },
    function(out)
      vim.schedule(function()
        state.proc = nil
        local resumed, err = coroutine.resume(co, out)
        if not resumed then
          M._finish(false, tostring(err))
        end
      end)
    end
  )
  if not ok then
    return { code = 127, signal = 0, stdout = "", stderr = tostring(proc) }
  end
  state.proc = proc
  return coroutine.yield()
end

--- Show `text` as one line of the message area, cut to the columns it has left of
--- 'showcmd' and 'ruler' (|v:echospace|): longer, or on two lines, Neovim would
--- ask to "Press ENTER" at each step of the build.
---@param text string
function M.echo_line(text)
  text = text:gsub("%s*\n%s*", " ")
  local room = math.max(vim.v.echospace - 1, 10)
  if vim.fn.strdisplaywidth(text) > room then
    text = vim.fn.strcharpart(text, 0, room - 1) .. "…"
  end
  vim.api.nvim_echo({ { text } }, false, {})
end

--- Say what the build does now (from inside its steps).
---@param msg string
function M.progress(msg)
  assert(current).progress(msg)
end

--- Where a failed step's whole output goes.
---@return string
function M.log_path()
  return vim.fn.stdpath("log") .. "/gemini-companion-build.log"
end

--- The last lines of a failed program's output, for the failure message; the
--- whole output goes to M.log_path(), which the message names.
---@param out vim.SystemCompleted
---@return string
function M.tail(out)
  -- The error is at the end of stderr; what led to it, in stdout, before it.
  local text = vim.trim((out.stdout or "") .. "\n" .. (out.stderr or ""))
  local path = M.log_path()
  vim.fn.mkdir(vim.fn.fnamemodify(path, ":h"), "p")
  local f = io.open(path, "w")
  if f then
    f:write(text, "\n")
    f:close()
  end
  local lines = vim.split(text, "\n")
  return table.concat(vim.list_slice(lines, math.max(1, #lines - 8)), "\n") .. "\n(whole output: " .. path .. ")"
end

---@param info gemini_companion.BuildInfo
local function record(info)
  vim.fn.mkdir(python.data_dir(), "p")
  local f = assert(io.open(python.build_file(), "w"))
  f:write(vim.json.encode(info))
  f:close()
  python.build_info(true)
end

--- Byte-compile the plugin's Python package for the host's interpreter, so the
--- first start does not compile it (nor every start where the environment sets
--- PYTHONDONTWRITEBYTECODE). Failure is harmless: Python compiles on import.
---@param root string
---@param host_python string
local function compile(root, host_python)
  M.progress("byte-compiling the Python package")
  M.exec(
    { host_python, "-m", "compileall", "-q", root .. "/rplugin/python3/gemini_companion" },
    { timeout = 60000, env = { PYTHONDONTWRITEBYTECODE = "" } }
  )
end

--- Link the Gemini CLI extension that gives a CLI started in Neovim the plugin's
--- tools (extension.lua says why an extension, and why the link is written by the
--- plugin rather than by `gemini extensions link`, which trusts the folder it runs
--- in). Skipped, with a message, when `tools.enabled` is off or the CLI is not
--- installed; a failure does not fail the build (:checkhealth reports it).
local function link_extension()
  local config = require("gemini_companion.config").get()
  if not config.tools.enabled then
    return
  end
  local extension = require("gemini_companion.extension")
  local env = config.terminal.env
  if extension.linked(env) then
    return
  end
  if vim.fn.executable(config.terminal.cmd) == 0 then
    M.progress("no Gemini CLI (" .. config.terminal.cmd .. "): its extension is not linked")
    return
  end
  local ok, message = extension.link(env)
  if ok then
    M.progress("Gemini CLI extension: " .. message)
  else
    M.progress("Gemini CLI extension not linked: " .. message)
  end
end

local function steps()
  local root = M.root()
  if not vim.tbl_contains(vim.api.nvim_list_runtime_paths(), root) then
    vim.opt.rtp:prepend(root)
  end
  local deps = M.dependencies(root)
  M.progress("choosing the Python host")
  local host = require("gemini_companion.build.python_host")
  local choice = host.choose(deps)
  local venv
  local reason = choice.reason
  if choice.mode == "shared" and host.has_all(choice.base, deps) then
    reason = reason:gsub(" and the plugin's venv.*$", "")
      .. ", and it has every pinned package already: no venv is needed"
  else
    venv = host.make_venv(choice.base, deps)
  end
  local host_python = choice.mode == "own" and python.venv_python(venv) or choice.base.path
  compile(root, host_python)
  record({
    ok = true,
    mode = choice.mode,
    reason = reason,
    base_python = choice.base.path,
    host_python = host_python,
    python_version = choice.base.version,
    user_host_prog = python.user_host_prog(),
    venv = venv,
    packages = deps,
    built_at = os.time(),
  })
  python.apply(true)
  if vim.fn.isdirectory(root .. "/doc") == 1 then
    pcall(vim.cmd.helptags, vim.fn.fnameescape(root .. "/doc"))
  end
  link_extension()
  -- One short line (no "Press ENTER" at 80 columns); :checkhealth tells the rest.
  return "build done, the companion is ready"
end

---@param ok boolean
---@param message string
function M._finish(ok, message)
  local state = current
  if not state or state.done then
    return
  end
  if not ok then
    message = "gemini-companion build failed: " .. message
    pcall(record, { ok = false, error = message, built_at = os.time() })
  else
    message = "gemini-companion: " .. message
  end
  state.done, state.ok, state.message = true, ok, message
  current = nil
  for _, callback in ipairs(state.callbacks) do
    pcall(callback, ok, message)
  end
end

--- Start the build in the background; returns at once. A build already running is
--- joined: `on_done` is called when it ends.
---@param opts? gemini_companion.BuildOptions
---@return gemini_companion.BuildState
function M.start(opts)
  opts = opts or {}
  local on_done = opts.on_done
    or function(ok, message)
      vim.notify(message, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
    end
  if current then
    table.insert(current.callbacks, on_done)
    return current
  end
  local state = {
    done = false,
    callbacks = { on_done },
    progress = opts.progress or function(msg)
      M.echo_line("gemini-companion: " .. msg)
    end,
  }
  current = state --[[@as gemini_companion.BuildState]]
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = vim.api.nvim_create_augroup("gemini_companion_build", { clear = true }),
    once = true,
    callback = M.wait_on_exit,
  })
  state.co = coroutine.create(function()
    local ok, result = pcall(steps)
    M._finish(ok, tostring(result))
    -- Once the build is over (the host refuses to start during it). During
    -- start-up (lazy.nvim installing from init.lua) the VimEnter hook starts it.
    local config = package.loaded["gemini_companion.config"]
    if ok and opts.start ~= false and vim.v.vim_did_enter == 1 and config and config.get().auto_start then
      -- Quiet: the build's message is the one message of this outcome (not
      -- followed by "already running" when the companion ran before it).
      require("gemini_companion").start({ quiet = true })
    end
  end)
  local ok, err = coroutine.resume(state.co)
  if not ok then
    M._finish(false, tostring(err))
  end
  return state --[[@as gemini_companion.BuildState]]
end

--- The build in progress, if any.
---@return gemini_companion.BuildState?
function M.running()
  return current
end

--- Run the build and wait for it (for scripts and headless installs: Neovim's
--- event loop keeps running, typed keys wait). Raises one error naming the fix.
---@param opts? gemini_companion.BuildOptions
function M.run(opts)
  local state = M.start(vim.tbl_extend("force", opts or {}, { on_done = function() end }))
  vim.wait(30 * 60 * 1000, function()
    return state.done
  end, 50)
  if not state.done then
    error("gemini-companion build failed: it did not finish within 30 minutes", 0)
  end
  if not state.ok then
    error(state.message, 0)
  end
end

--- Wait for a running build before Neovim exits (headless installs such as
--- `nvim --headless +PlugInstall +qa` quit right after starting it).
function M.wait_on_exit()
  local state = current
  if not state then
    return
  end
  vim.api.nvim_echo({ { "gemini-companion: finishing the build (CTRL-C abandons it)" } }, true, {})
  vim.wait(30 * 60 * 1000, function()
    return state.done
  end, 50)
  if state.proc then
    pcall(state.proc.kill, state.proc, "sigterm")
  end
end

return M
