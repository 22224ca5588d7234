--- Which Python runs the plugin, as the build step decided (build.lua) and
--- recorded in stdpath("data")/gemini-companion/build.json. Read once, before the
--- Python host starts; cheap enough for setup().
local M = {}

M.pinned_packages = { "pynvim", "mcp", "starlette", "uvicorn", "anyio", "a2a-sdk", "agent-client-protocol" }

---@class gemini_companion.BuildInfo
---@field ok boolean
---@field error? string
---@field mode? "own"|"shared" own: the venv's Python runs the plugin's host; shared: the user's Python, venv behind it
---@field reason? string
---@field host_python? string the interpreter the python3 host runs
---@field base_python? string the interpreter the venv was created from
---@field python_version? string
---@field user_host_prog? string g:python3_host_prog when the build ran
---@field venv? string
---@field packages? string[]
---@field built_at? number

---@return string
function M.data_dir()
  return vim.fn.stdpath("data") .. "/gemini-companion"
end

---@return string
function M.venv_dir()
  return M.data_dir() .. "/venv"
end

---@param venv? string
---@return string
function M.venv_python(venv)
  venv = venv or M.venv_dir()
  if vim.fn.has("win32") == 1 then
    return venv .. "/Scripts/python.exe"
  end
  return venv .. "/bin/python"
end

---@return string
function M.build_file()
  return M.data_dir() .. "/build.json"
end

---@type gemini_companion.BuildInfo|false|nil false: read, absent
local cached

---@param reload? boolean
---@return gemini_companion.BuildInfo?
function M.build_info(reload)
  if cached == nil or reload then
    cached = false
    local file = io.open(M.build_file(), "r")
    if file then
      local ok, decoded = pcall(vim.json.decode, file:read("*a"))
      file:close()
      if ok and type(decoded) == "table" then
        cached = decoded
      end
    end
  end
  return cached or nil
end

--- The host prog the user set (nil when unset).
---@return string?
function M.user_host_prog()
  local prog = vim.g.python3_host_prog
  if prog == nil or prog == "" then
    return nil
  end
  return prog
end

--- Make the build's choice effective; call before the plugin's host starts: the
--- host finds the venv through $GEMINI_COMPANION_VENV (rplugin/python3/.../pythonpath.py).
--- Neovim's own python3 provider (g:python3_host_prog) is left as the user has it:
--- the plugin's host is a job of its own (host.lua) on the build's interpreter.
---@param reload? boolean
function M.apply(reload)
  local info = M.build_info(reload)
  if not info or not info.ok then
    return
  end
  vim.env.GEMINI_COMPANION_VENV = info.venv
end

--- The interpreter that runs the plugin's host (host.lua): the one the build chose,
--- none after a failed build; without a build, g:python3_host_prog or python3 on PATH, as Neovim's provider
--- would (without its checks, which run Python and would block).
---@return string? path
---@return string? error
function M.host_prog()
  if package.loaded["gemini_companion.build"] and require("gemini_companion.build").running() then
    return nil, "the build is still running: the companion starts when it is done"
  end
  local info = M.build_info()
  if info and not info.ok then
    return nil, "the last build failed: " .. tostring(info.error) .. " (run :GeminiCompanionBuild again)"
  end
  local prog = info and info.host_python or nil
  if not prog then
    local set = vim.g.python3_host_prog
    prog = (set ~= nil and set ~= "") and vim.fn.expand(set) or "python3"
  end
  local path = vim.fn.exepath(prog)
  if path == "" then
    return nil, "no Python interpreter at " .. prog .. ": run :GeminiCompanionBuild (the plugin's build step)"
  end
  return path
end

return M
