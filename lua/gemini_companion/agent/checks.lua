--- The agent panel's part of :checkhealth gemini_companion (health.lua calls it
--- last): the protocol, the early-started agent, and the ACP or A2A agent.
local M = {}

local health = require("gemini_companion.health").report

local function report_agent(current, how)
  if how.stopped then
    health.info(how.stopped_text)
  elseif current.state == "error" then
    health.warn("the agent: " .. tostring(current.detail), { how.retry })
  else
    health.ok(
      string.format(
        "%s %s %s%s",
        how.verb,
        tostring(current.agent or "the agent"),
        tostring(current.agent_version or ""),
        how.where
      )
    )
  end
end

--- The agent panel's A2A server: command found, its version, credentials, and,
--- once connected, the agent it reached (dialect, extension).
---@param a2a { url?: string, cmd: string[], env: table<string, string> }
local function check_a2a(a2a)
  -- Problems are warnings only once the panel is in use: IDE-mode users need none of it.
  local state = package.loaded["gemini_companion.agent.state"]
  local current = state and state.current or { state = "stopped" }
  local problem = current.state == "stopped" and health.info or health.warn
  local tools = require("gemini_companion.config").get().tools.enabled
  if a2a.url then
    health.info("connects to the A2A agent at " .. a2a.url .. (tools and " (it does not get Neovim's tools)" or ""))
  else
    if tools then
      health.info("the A2A server started gets Neovim's tools (MCP server nvim) through a private Gemini home")
    end
    local path = vim.fn.exepath(a2a.cmd[1])
    if path == "" then
      problem(
        string.format(
          "the A2A server command %q is not on PATH (for the agent panel over A2A:"
            .. " npm install -g @google/gemini-cli-a2a-server, or set agent.a2a.cmd or agent.a2a.url)",
          a2a.cmd[1]
        )
      )
    else
      local real = vim.uv.fs_realpath(path) or path
      local version
      local package_json = vim.fs.dirname(vim.fs.dirname(real)) .. "/package.json"
      local ok, decoded = pcall(function()
        return vim.json.decode(table.concat(vim.fn.readfile(package_json), "\n"))
      end)
      if ok and type(decoded) == "table" then
        version = decoded.version
      end
      health.ok(string.format("A2A server %s (%s)", version or "(version unknown)", path))
    end
    local has_key = (a2a.env.GEMINI_API_KEY or vim.env.GEMINI_API_KEY or "") ~= ""
      or (a2a.env.USE_CCPA or vim.env.USE_CCPA or "") ~= ""
    if has_key then
      health.ok("credentials for the A2A server are set (GEMINI_API_KEY or USE_CCPA)")
    else
      problem(
        "the A2A server has no credentials: set GEMINI_API_KEY (or USE_CCPA=true with a Google login)"
          .. " before starting Neovim, or in agent.a2a.env"
      )
    end
  end
  report_agent(current, {
    stopped = current.state == "stopped",
    stopped_text = "the agent is not connected (:GeminiAgent connects)",
    retry = "The next prompt tries again; see the log file",
    verb = "reached",
    where = string.format(
      " at %s (%s dialect%s)",
      tostring(current.url or "?"),
      tostring(current.dialect or "?"),
      current.extension
          and string.format(
            ", development-tool extension version %s: %s",
            tostring(current.extension_version or "?"),
            current.extension
          )
        or ", no development-tool extension declared: the coderAgent dialect of gemini-cli-a2a-server"
    ),
  })
end

---@param acp { cmd: string[], env: table<string, string> }
local function check_acp(acp)
  -- As for A2A: a warning only once the panel is in use.
  local state = package.loaded["gemini_companion.agent.state"]
  local current = state and state.current or { state = "stopped" }
  local path = vim.fn.exepath(acp.cmd[1])
  if path == "" then
    local problem = current.state == "stopped" and health.info or health.warn
    problem(
      string.format(
        "the ACP agent command %q is not on PATH (for the agent panel: npm install -g @google/gemini-cli,"
          .. " or set agent.acp.cmd)",
        acp.cmd[1]
      )
    )
  else
    health.ok(string.format("ACP agent: %s (%s)", table.concat(acp.cmd, " "), path))
  end
  report_agent(current, {
    stopped = current.protocol ~= "acp" or current.state == "stopped",
    stopped_text = "the agent is not running (:GeminiAgent starts it)",
    retry = "The next prompt starts it again; see the log file",
    verb = "running",
    where = string.format(
      ", session %s (mode %s, model %s)",
      tostring(current.session_id or "?"),
      tostring(current.mode or "?"),
      tostring(current.model or "?")
    ),
  })
end

--- agent.prestart (agent/spare.lua): on or off, and what it costs, as measured
--- (bench/panel_cost.py, 2026-11-28: gemini --acp 0.61.0 in one process, 223 MiB;
--- host 26 -> 56 MiB).
---@param on boolean
local function check_prestart(on)
  local cost = "about 225 MiB for gemini --acp and 30 MiB in the Python host"
  if not on then
    health.info(
      "agent.prestart is off: the panel starts the agent when it opens (with it on: ready at once, for " .. cost .. ")"
    )
    return
  end
  local spare = package.loaded["gemini_companion.agent.spare"]
  local status = not spare and "waits for start-up"
    or spare.status == "started" and "started"
    or spare.status == "armed" and "waits for Neovim to be idle"
    or "not needed: the panel opened first"
  health.info("agent.prestart: the agent starts once Neovim is idle (" .. status .. "); it costs " .. cost)
end

function M.check()
  local agent = require("gemini_companion.config").get().agent
  health.info("protocol: " .. agent.protocol .. " (agent.protocol)")
  check_prestart(agent.prestart)
  if agent.protocol == "a2a" then
    check_a2a(agent.a2a)
  else
    check_acp(agent.acp)
  end
end

return M
