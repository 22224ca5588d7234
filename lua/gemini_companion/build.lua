--- The build step: the plugin's own Python virtual environment with the
--- dependencies pinned in pyproject.toml, the choice of the Python host, and the
--- remote plugin's registration (:UpdateRemotePlugins). Run by lazy.nvim through
--- build.lua at the plugin's root, by packer/vim-plug through
--- :GeminiCompanionBuild. Blocking: it runs once per install or update.
---
--- The host: Neovim has one python3 host for all remote plugins. When the
--- Python Neovim would use for it already has pynvim (the user's
--- g:python3_host_prog, or what the provider finds on PATH), other remote plugins
--- may rely on it, so it is kept ("shared") and the venv is built from that same
--- interpreter, to be appended behind its packages. Otherwise no Python remote
--- plugin can be working, and the venv's own Python becomes the host ("own").
local python = require("gemini_companion.python")

local M = {}

local min_version = { 3, 10 }
local candidates = { "python3", "python3.13", "python3.12", "python3.11", "python3.10", "python" }

---@param msg string
local function progress(msg)
  -- In lazy.nvim's build coroutine a yielded string is shown as progress. The
  -- yield crosses run()'s pcall, which LuaJIT allows and PUC Lua 5.1 does not.
  if coroutine.isyieldable() and jit then
    coroutine.yield(msg)
  else
    vim.api.nvim_echo({ { "gemini-companion: " .. msg } }, false, {})
  end
end

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

---@param cmd string[]
---@param timeout? integer ms
---@return vim.SystemCompleted
local function run(cmd, timeout)
  local ok, proc = pcall(vim.system, cmd, { text = true })
  if not ok then
    return { code = 127, signal = 0, stdout = "", stderr = tostring(proc) }
  end
  return proc:wait(timeout or 600000)
end

--- Version and pynvim availability of an interpreter.
---@param prog string
---@return { path: string, version: string, major: integer, minor: integer, pynvim: boolean }?
local function probe(prog)
  local path = vim.fn.exepath(vim.fn.expand(prog))
  if path == "" then
    return nil
  end
  local out = run({
    path,
    "-c",
    "import sys, importlib.util as u; print('%d.%d.%d' % sys.version_info[:3]);"
      .. " print(u.find_spec('pynvim') is not None)",
  }, 20000)
  if out.code ~= 0 then
    return nil
  end
  local version, has = (out.stdout or ""):match("^(%d+%.%d+%.%d+)\n(%a+)")
  if not version then
    return nil
  end
  local major, minor = version:match("^(%d+)%.(%d+)")
  return { path = path, version = version, major = tonumber(major), minor = tonumber(minor), pynvim = has == "True" }
end

local function new_enough(p)
  return p.major > min_version[1] or (p.major == min_version[1] and p.minor >= min_version[2])
end

local function fail(message)
  error(message, 0)
end

local fix_python = "install Python 3.10 or newer (Debian/Ubuntu: apt install python3 python3-venv), "
  .. "put it on PATH or set vim.g.python3_host_prog to it, then rebuild (:GeminiCompanionBuild, or :Lazy build)"

--- The host decision (see the top of this file).
---@return { mode: "own"|"shared", reason: string, base: table }
function M.choose()
  local user = python.user_host_prog()
  local detected, detected_by
  if user then
    detected = probe(user)
    detected_by = "g:python3_host_prog"
    if not detected then
      fail(string.format("g:python3_host_prog (%s) cannot be run: fix or unset it, then rebuild", user))
    end
  else
    local ok, provider = pcall(require, "vim.provider.python")
    if ok and provider.detect_by_module then
      -- What the provider finds without us: a rebuild must not see our own venv.
      local ours = vim.g.python3_host_prog
      vim.g.python3_host_prog = nil
      local found, prog = pcall(provider.detect_by_module, "neovim")
      vim.g.python3_host_prog = ours
      detected = found and prog and probe(prog) or nil
      detected_by = "Neovim's python3 provider"
    end
  end
  if detected and detected.pynvim then
    if not new_enough(detected) then
      if user then
        fail(
          string.format(
            "g:python3_host_prog is Python %s (%s); gemini-companion needs 3.10+: %s",
            detected.version,
            detected.path,
            fix_python
          )
        )
      end
    else
      return {
        mode = "shared",
        base = detected,
        reason = string.format(
          "%s (%s, Python %s) already has pynvim, so other remote plugins may use it: it stays the host "
            .. "and the plugin's venv, built from the same Python, is added behind its own packages",
          detected_by,
          detected.path,
          detected.version
        ),
      }
    end
  end
  local base = detected and new_enough(detected) and detected or nil
  local tried = {}
  if not base then
    for _, name in ipairs(candidates) do
      local p = probe(name)
      if p then
        tried[#tried + 1] = string.format("%s is %s", name, p.version)
        if new_enough(p) then
          base = p
          break
        end
      end
    end
  end
  if not base then
    fail(
      string.format(
        "no Python 3.10+ found (%s): %s",
        #tried > 0 and table.concat(tried, ", ") or "no python3 on PATH",
        fix_python
      )
    )
  end
  local why = detected and string.format("%s (%s) has no pynvim", detected_by, detected.path)
    or "no Python with pynvim was found"
  return {
    mode = "own",
    base = base,
    reason = why .. ", so no other Python remote plugin can be working: the plugin's venv is the python3 host",
  }
end

---@param base table probe() of the interpreter to build from
---@param deps string[]
---@return string venv
local function make_venv(base, deps)
  local venv = python.venv_dir()
  local venv_python = python.venv_python(venv)
  local existing = vim.fn.executable(venv_python) == 1 and probe(venv_python)
  if existing and existing.version ~= base.version then
    progress("Python changed (" .. existing.version .. " -> " .. base.version .. "): new venv")
    vim.fn.delete(venv, "rf")
    existing = nil
  end
  if not existing then
    progress("creating the venv " .. venv)
    vim.fn.mkdir(python.data_dir(), "p")
    local out = run({ base.path, "-m", "venv", venv })
    if out.code ~= 0 then
      vim.fn.delete(venv, "rf")
      fail(
        string.format(
          "could not create a venv with %s: %s\nFix: install the venv module (Debian/Ubuntu: apt install "
            .. "python3-venv), then rebuild",
          base.path,
          vim.trim(out.stderr or "")
        )
      )
    end
  end
  local stamp = venv .. "/.gemini-companion-" .. vim.fn.sha256(table.concat(deps, "\n")):sub(1, 16)
  if vim.fn.filereadable(stamp) == 0 then
    progress("installing " .. table.concat(deps, " "))
    local cmd = { venv_python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet" }
    vim.list_extend(cmd, deps)
    local out = run(cmd)
    if out.code ~= 0 then
      local lines = vim.split(vim.trim((out.stderr or "") .. "\n" .. (out.stdout or "")), "\n")
      fail(
        string.format(
          "pip could not install the dependencies into %s:\n%s\nFix: check the network (or a proxy "
            .. "in PIP_INDEX_URL), then rebuild",
          venv,
          table.concat(vim.list_slice(lines, math.max(1, #lines - 8)), "\n")
        )
      )
    end
    for _, old in ipairs(vim.fn.glob(venv .. "/.gemini-companion-*", false, true)) do
      os.remove(old)
    end
    local f = assert(io.open(stamp, "w"))
    f:close()
  end
  return venv
end

---@param info gemini_companion.BuildInfo
local function record(info)
  vim.fn.mkdir(python.data_dir(), "p")
  local f = assert(io.open(python.build_file(), "w"))
  f:write(vim.json.encode(info))
  f:close()
  python.build_info(true)
end

---@return string
function M.manifest_path()
  if vim.env.NVIM_RPLUGIN_MANIFEST and vim.env.NVIM_RPLUGIN_MANIFEST ~= "" then
    return vim.env.NVIM_RPLUGIN_MANIFEST
  end
  return vim.fn.stdpath("data") .. "/rplugin.vim"
end

---@return boolean
function M.registered()
  local f = io.open(M.manifest_path(), "r")
  if not f then
    return false
  end
  local text = f:read("*a")
  f:close()
  return text:find("GeminiCompanionHostInfo", 1, true) ~= nil
end

local function register(root)
  if not vim.tbl_contains(vim.api.nvim_list_runtime_paths(), root) then
    vim.opt.rtp:prepend(root)
  end
  progress("registering the remote plugin (:UpdateRemotePlugins)")
  if vim.fn.exists(":UpdateRemotePlugins") ~= 2 then
    -- During start-up (lazy.nvim installs from init.lua) the command is not defined yet.
    vim.cmd("silent! runtime plugin/rplugin.vim")
  end
  vim.cmd("silent UpdateRemotePlugins")
  if not M.registered() then
    fail(
      "the remote plugin did not register in "
        .. M.manifest_path()
        .. ": the Python host could not load it; see :checkhealth gemini_companion"
    )
  end
  if vim.fn.isdirectory(root .. "/doc") == 1 then
    pcall(vim.cmd.helptags, vim.fn.fnameescape(root .. "/doc"))
  end
end

--- Byte-compile the plugin's Python package for the host's interpreter, so the
--- first start does not compile it (nor every start where the environment sets
--- PYTHONDONTWRITEBYTECODE). Failure is harmless: Python compiles on import.
---@param root string
---@param host_python string
local function compile(root, host_python)
  progress("byte-compiling the Python package")
  local cmd = { host_python, "-m", "compileall", "-q", root .. "/rplugin/python3/gemini_companion" }
  local ok, proc = pcall(vim.system, cmd, { text = true, env = { PYTHONDONTWRITEBYTECODE = "" } })
  if ok then
    proc:wait(60000)
  end
end

--- Link the Gemini CLI extension that gives a CLI started in Neovim the plugin's
--- tools (extension.lua says why an extension). Skipped, with a message, when the
--- CLI is not installed or `tools.enabled` is off; a failure does not fail the
--- build (:checkhealth reports it).
local function link_extension()
  local config = require("gemini_companion.config").get()
  if not config.tools.enabled then
    return
  end
  local cmd = config.terminal.cmd
  if vim.fn.executable(cmd) == 0 then
    progress("Gemini CLI (" .. cmd .. ") not found: its extension for Neovim's tools is not linked")
    return
  end
  progress("linking the Gemini CLI extension for Neovim's tools")
  local extension = require("gemini_companion.extension")
  local ok, message = extension.link(cmd, config.terminal.env)
  progress((ok and "Gemini CLI extension: " or "Gemini CLI extension not linked: ") .. message)
end

--- Run the whole build. Raises one error whose message names the fix.
function M.run()
  local root = M.root()
  local ok, err = pcall(function()
    local deps = M.dependencies(root)
    local choice = M.choose()
    local venv = make_venv(choice.base, deps)
    local host_python = choice.mode == "own" and python.venv_python(venv) or choice.base.path
    compile(root, host_python)
    record({
      ok = true,
      mode = choice.mode,
      reason = choice.reason,
      base_python = choice.base.path,
      host_python = host_python,
      python_version = choice.base.version,
      user_host_prog = python.user_host_prog(),
      venv = venv,
      packages = deps,
      built_at = os.time(),
    })
    python.apply(true)
    register(root)
    link_extension()
    progress("done (" .. choice.mode .. " Python host)")
  end)
  if not ok then
    record({ ok = false, error = tostring(err), built_at = os.time() })
    error("gemini-companion build failed: " .. tostring(err), 0)
  end
end

return M
