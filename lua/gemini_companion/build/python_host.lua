--- The build's choice of the Python host, and the plugin's venv (run inside the
--- build's steps, build.lua, whose exec/progress/fail/tail they use).
---
--- The host: Neovim has one python3 host for all remote plugins. When the
--- Python Neovim would use for it already has pynvim (the user's
--- g:python3_host_prog, or what the provider finds on PATH), other remote plugins
--- may rely on it, so it is kept ("shared") and the venv is built from that same
--- interpreter, to be appended behind its packages (no venv when that Python
--- already has every pinned package). Otherwise no Python remote plugin can be
--- working, and the venv's own Python runs the plugin's host ("own"). Either way
--- Neovim's python3 provider (g:python3_host_prog) is left as the user set it: the
--- plugin's host is a job of its own, started on the interpreter recorded here.
local build = require("gemini_companion.build")
local python = require("gemini_companion.python")

local M = {}

local min_version = { 3, 10 }
-- The names Neovim's python3 provider tries, in its order.
local candidates = { "python3", "python3.13", "python3.12", "python3.11", "python3.10", "python" }

---@class gemini_companion.Probe
---@field path string
---@field version string
---@field major integer
---@field minor integer
---@field pynvim boolean
---@field packages table<string, string> installed version by lower-case distribution name

local probe_script = [[
import sys, importlib.util as u
print('%d.%d.%d' % sys.version_info[:3])
print(u.find_spec('pynvim') is not None)
try:
    from importlib.metadata import version
except ImportError:
    sys.exit(0)
for name in sys.argv[1:]:
    try:
        print(name + '==' + version(name))
    except Exception:
        pass
]]

--- Version, pynvim and the pinned packages of an interpreter.
---@param prog string
---@param deps? string[]
---@return gemini_companion.Probe?
local function probe(prog, deps)
  local path = vim.fn.exepath(vim.fn.expand(prog))
  if path == "" then
    return nil
  end
  local cmd = { path, "-c", probe_script }
  for _, dep in ipairs(deps or {}) do
    cmd[#cmd + 1] = dep:match("^([%w%-_%.]+)")
  end
  local out = build.exec(cmd, { timeout = 20000 })
  if out.code ~= 0 then
    return nil
  end
  local lines = vim.split(out.stdout or "", "\n", { trimempty = true })
  local version = (lines[1] or ""):match("^(%d+%.%d+%.%d+)$")
  if not version then
    return nil
  end
  local packages = {}
  for i = 3, #lines do
    local name, v = lines[i]:match("^(.-)==(.+)$")
    if name then
      packages[name:lower()] = v
    end
  end
  local major, minor = version:match("^(%d+)%.(%d+)")
  return {
    path = path,
    version = version,
    major = tonumber(major) --[[@as integer]],
    minor = tonumber(minor) --[[@as integer]],
    pynvim = lines[2] == "True",
    packages = packages,
  }
end

local function new_enough(p)
  return p.major > min_version[1] or (p.major == min_version[1] and p.minor >= min_version[2])
end

--- Whether every pinned dependency is installed at its pinned version.
---@param p gemini_companion.Probe
---@param deps string[]
function M.has_all(p, deps)
  for _, dep in ipairs(deps) do
    local name, version = dep:match("^([%w%-_%.]+)%s*==%s*(.+)$")
    if not name or p.packages[name:lower()] ~= version then
      return false
    end
  end
  return true
end

local fix_python = "install Python 3.10 or newer (Debian/Ubuntu: apt install python3 python3-venv), "
  .. "put it on PATH or set vim.g.python3_host_prog to it, then rebuild (:GeminiCompanionBuild, or :Lazy build)"

--- The host decision (see the top of this file). Runs in the build's coroutine.
---@param deps string[]
---@return { mode: "own"|"shared", reason: string, base: gemini_companion.Probe }
function M.choose(deps)
  local user = python.user_host_prog()
  local detected, detected_by
  if user then
    detected = probe(user, deps)
    detected_by = "g:python3_host_prog"
    if not detected then
      build.fail(string.format("g:python3_host_prog (%s) cannot be run: fix or unset it, then rebuild", user))
    end
  else
    -- What Neovim's python3 provider would find without us (the first candidate
    -- that has pynvim); a rebuild must not see our own venv.
    detected_by = "Neovim's python3 provider"
    for _, name in ipairs(candidates) do
      local p = probe(name, deps)
      if p and p.pynvim then
        detected = p
        break
      end
    end
  end
  if detected and detected.pynvim then
    if not new_enough(detected) then
      if user then
        build.fail(
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
    build.fail(
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
    base = base --[[@as gemini_companion.Probe]],
    reason = why .. ", so no other Python remote plugin can be working: the plugin's venv runs its host",
  }
end

---@param base gemini_companion.Probe the interpreter to build from
---@param deps string[]
---@return string venv
function M.make_venv(base, deps)
  local venv = python.venv_dir()
  local venv_python = python.venv_python(venv)
  local existing = vim.fn.executable(venv_python) == 1 and probe(venv_python)
  if existing and existing.version ~= base.version then
    build.progress("Python changed (" .. existing.version .. " -> " .. base.version .. "): new venv")
    vim.fn.delete(venv, "rf")
    existing = nil
  end
  if not existing then
    build.progress("creating the plugin's venv")
    vim.fn.mkdir(python.data_dir(), "p")
    local out = build.exec({ base.path, "-m", "venv", venv })
    if out.code ~= 0 then
      vim.fn.delete(venv, "rf")
      build.fail(
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
    build.progress("installing " .. table.concat(deps, " ") .. " (pip; this takes a while the first time)")
    local cmd = { venv_python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet" }
    vim.list_extend(cmd, deps)
    local out = build.exec(cmd)
    if out.code ~= 0 then
      build.fail(
        string.format(
          "pip could not install the dependencies into %s:\n%s\nFix: check the network (or a proxy "
            .. "in PIP_INDEX_URL), then rebuild",
          venv,
          build.tail(out)
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

return M
