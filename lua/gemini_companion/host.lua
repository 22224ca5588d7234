--- The only Lua module that talks to the Python side (rplugin/python3/gemini_companion):
--- every message between the two, in both directions, is sent or handled here, and
--- declared in rpc.lua (name, direction, kind; tests/test_rpc_surface.py holds this
--- file to it). Lua -> Python: one-way `rpcnotify`s, handled in `__init__.py`.
--- Nothing waits for the Python side: it is a pynvim remote plugin run by pynvim's
--- own plugin host, in a process of its own that Neovim starts as an RPC job
--- (`ensure()`). Neovim's python3 provider would start the host synchronously
--- (waiting for the interpreter to start and import: 75-110 ms of frozen editor);
--- a job does not wait, and messages sent before the host is up wait in the pipe
--- and run in order once it is.
---
--- Python -> Lua (`nvim_editor.py`, through `M._receive`): see `handlers` below,
--- each marked one-way or answered.
local M = {}

---@type integer?
M.channel = nil

--- What the host says about itself (channel, python, venv, state): its hello when
--- the companion starts, or the last answer to `query_info`.
---@type table?
M.info = nil

--- The last lines the host wrote to stderr, for the message when it dies.
---@type string[]
local stderr_tail = {}

--- True once Neovim exits: the host's end is expected then.
local expected_exit = false
---@type table<integer, true> hosts ended by M.retire(), whose exit says nothing
local retired = {}

--- Runs pynvim's plugin host with only this plugin. The interpreter's current
--- directory is not put on sys.path (a stray module there must not shadow ours),
--- as Neovim's own provider does.
--- Once pynvim's loop ends (Neovim quits), `host_exited()` ends the companion and
--- the process at once: the interpreter's own teardown takes over a second with the
--- server's packages loaded, and `:qa` waits for this process to exit.
---
--- Started to run the companion, it first listens, writes the discovery file and
--- tells Neovim the port (early.py: the `state` message below, written on the pipe
--- by hand before pynvim owns it), before pynvim and the package's `__init__` load:
--- the package's module is made bare (no `importlib.util` yet), `early` is imported
--- from it, then `__init__` runs into it, and pynvim's host finds the package
--- already imported. The interpreter runs with `-S`: `site` (site-packages, the
--- venv, `.pth` files, sitecustomize; 2-4 ms) is set up after that first step.
local HOST_MAIN = table.concat({
  "import sys",
  "sys.path[:] = [p for p in sys.path if p]",
  "early = None",
  "if len(sys.argv) > 2:",
  "    d = sys.argv[1]",
  "    pkg = sys.modules['gemini_companion'] = type(sys)('gemini_companion')",
  "    pkg.__path__ = [d]",
  "    early = __import__('gemini_companion.early').early",
  "    early.listen(sys.argv[2:])",
  "    early.announce()",
  "    del sys.argv[2:]",
  "import site",
  "site.main()",
  "if early is not None:",
  "    try:",
  "        early.load_package(pkg, d)",
  "    except BaseException:",
  "        early.discard()",
  "        raise",
  "import pynvim",
  "try:",
  "    pynvim.start_host()",
  "finally:",
  "    m = sys.modules.get('gemini_companion')",
  "    if m is not None: m.host_exited(sys.exc_info()[1])",
}, "\n")

---@return string? package directory of the Python side
local function package_dir()
  local found = vim.api.nvim_get_runtime_file("rplugin/python3/gemini_companion/__init__.py", false)[1]
  return found and vim.fs.dirname(found) or nil
end

---@param data string[]
local function keep_stderr(_, data)
  for _, line in ipairs(data) do
    if line ~= "" then
      stderr_tail[#stderr_tail + 1] = line
      if #stderr_tail > 20 then
        table.remove(stderr_tail, 1)
      end
    end
  end
end

---@param job integer
---@param code integer
local function on_exit(job, code)
  if retired[job] then
    retired[job] = nil -- ended on purpose by M.retire(); a newer host may run
    return
  end
  M.channel = nil
  M.info = nil
  if expected_exit then
    return
  end
  local last = stderr_tail[#stderr_tail]
  local problem = string.format("the Python host exited (code %d)%s", code, last and (": " .. last) or "")
  local state = require("gemini_companion.state")
  -- The host could not clean up (killed, crashed): what it left pointing at a dead
  -- server goes now, so no CLI finds it: the discovery file, the exported variables
  -- (state._update below), the forwarding of events, and open diffs are marked as
  -- no longer answerable. The next start runs a fresh host.
  if state.current.discovery_file then
    os.remove(state.current.discovery_file)
  end
  if package.loaded["gemini_companion"] then
    require("gemini_companion")._stopped()
  end
  if package.loaded["gemini_companion.diff"] then
    require("gemini_companion.diff")._orphan_all()
  end
  state._update({ running = false, sessions = {}, env = {}, error = problem })
  state._notify("Gemini companion: " .. problem .. " (:checkhealth gemini_companion tells more)", vim.log.levels.ERROR)
end

--- Start the Python host if it is not running. Never waits for it.
---@param early? { nvim_pid: integer, workspace_dirs: string[] } given when the host
---  starts to run the companion: it listens and publishes before loading the rest
---@return integer? channel
---@return string? error
function M.ensure(early)
  if M.channel then
    return M.channel
  end
  local python = require("gemini_companion.python")
  -- The Python the build step chose, and the venv it must find.
  python.apply()
  local prog, err = python.host_prog()
  if not prog then
    return nil, err
  end
  local dir = package_dir()
  if not dir then
    return nil, "rplugin/python3/gemini_companion is not on 'runtimepath'"
  end
  stderr_tail = {}
  expected_exit = false
  -- Neovim ends the job as it exits: no error for that.
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = vim.api.nvim_create_augroup("gemini_companion_host", { clear = true }),
    callback = function()
      expected_exit = true
    end,
  })
  local cmd = { prog, "-S", "-c", HOST_MAIN, dir }
  if early then
    -- Neovim's PID, then the workspace folders; taken off the command line before
    -- pynvim's host reads it for plugins.
    cmd[#cmd + 1] = tostring(early.nvim_pid)
    vim.list_extend(cmd, early.workspace_dirs)
  end
  local ok, channel = pcall(vim.fn.jobstart, cmd, {
    rpc = true,
    on_stderr = keep_stderr,
    on_exit = on_exit,
  })
  if not ok or type(channel) ~= "number" or channel <= 0 then
    return nil, string.format("could not run the Python host %s: %s", prog, tostring(channel))
  end
  M.channel = channel
  return channel
end

--- End the running host, quietly, so that the next start runs a fresh one: it said
--- it lacks packages, and a build or an install since may have added them (a
--- running Python does not see them).
function M.retire()
  local channel = M.channel
  if channel then
    retired[channel] = true
    M.channel, M.info = nil, nil
    vim.fn.jobstop(channel)
  end
end

--- The last lines the host wrote to stderr (why it died, when it did).
---@return string
function M.stderr()
  return table.concat(stderr_tail, "\n")
end

---@param method string
---@param ... any
local function notify(method, ...)
  if M.channel then
    vim.rpcnotify(M.channel, method, ...)
  end
end

-- Lua -> Python ---------------------------------------------------------------------

--- Start the companion server with these options (companion.py `StartOptions`).
---@param options table
function M.start(options)
  notify("gemini_companion_start", options)
end

--- Stop the companion server and remove its discovery file.
function M.stop()
  notify("gemini_companion_stop")
end

--- The directories Neovim works in changed.
---@param dirs string[]
function M.workspace(dirs)
  notify("gemini_companion_workspace", dirs)
end

--- Forward an editor event to the context tracker (context.py).
---@param kind string
---@param ... any
function M.context(kind, ...)
  notify("gemini_companion_context", kind, ...)
end

--- The user accepted diff `id`: its proposal's lines joined by "\n" (a big text: a
--- file holding them, which the Python side reads and removes; `unchanged`: the
--- proposal as it was shown, which the Python side keeps), 'eol', 'fileformat'.
---@param id integer
---@param body string|{ file: string }|{ unchanged: true }
---@param eol boolean
---@param fileformat string
---@param option? string the agent's option the user named (an agent panel's edit)
function M.diff_accept(id, body, eol, fileformat, option)
  notify("gemini_companion_diff_accept", id, body, eol, fileformat, option)
end

--- The user rejected diff `id` (or closed its view).
---@param id integer
---@param option? string the agent's option the user named (an agent panel's edit)
function M.diff_reject(id, option)
  notify("gemini_companion_diff_reject", id, option)
end

--- The answer to the Python side's `tool_run` number `id` (tools/init.lua): `ok` with
--- the result, or false with the message the agent reads.
---@param id integer
---@param ok boolean
---@param value any
function M.tool_result(id, ok, value)
  notify("gemini_companion_tool_result", id, ok, value)
end

local queries = 0
---@type table<integer, table>
local answers = {}

--- Ask the host what :checkhealth reports (its Python, venv, package versions)
--- and wait for the answer at most `timeout_ms`: the question is a notification
--- and the answer another, so a busy or hung host cannot freeze Neovim.
---@param request table e.g. { packages = { "mcp" } }
---@param timeout_ms integer
---@return table? info
---@return string? error
function M.query_info(request, timeout_ms)
  if not M.channel then
    return nil, "the Python host is not running"
  end
  queries = queries + 1
  local id = queries
  notify("gemini_companion_host_info", id, request)
  local ok = vim.wait(timeout_ms, function()
    return answers[id] ~= nil or M.channel == nil
  end, 5)
  local info = answers[id]
  answers[id] = nil
  if not M.channel then
    return nil, "the Python host exited"
  end
  if not ok or not info then
    return nil, string.format("no answer within %d ms", timeout_ms)
  end
  return info
end

-- Python -> Lua ---------------------------------------------------------------------

---@type table<string, fun(...): any>
local handlers = {
  -- one-way: the companion's state changed (the first one written by early.py as
  -- the host starts, before pynvim loads)
  state = function(state)
    require("gemini_companion.state")._update(state)
  end,
  -- one-way: a message for the user
  notify = function(message, level)
    require("gemini_companion.state")._notify(message, level)
  end,
  -- one-way: the server stopped by itself (it failed): stop forwarding events
  stopped = function()
    require("gemini_companion")._stopped()
  end,
  -- one-way: the answer to query_info(), or the host's hello
  host_info = function(id, info)
    M.info = info
    if id > 0 then -- 0: the hello sent when the companion starts
      answers[id] = info
    end
  end,
  -- answered: open a diff view; true, { refused = reason }, or an error
  diff_open = function(spec)
    return require("gemini_companion.diff")._open(spec)
  end,
  -- answered: close a view without an answer; its proposal, or nil
  diff_close = function(id, result)
    return require("gemini_companion.diff")._close(id, result)
  end,
  -- one-way: the answer to the CLI went out: close the view
  diff_finish = function(id, result)
    require("gemini_companion.diff")._finish(id, result)
  end,
  -- one-way: the view's CLI is gone: keep it, marked
  diff_orphan = function(id)
    require("gemini_companion.diff")._orphan(id)
  end,
  -- one-way: run a Neovim tool for the agent; answered later by tool_result()
  tool_run = function(id, name, args)
    require("gemini_companion.tools").run(id, name, args)
  end,
  -- answered: the accepted text cannot be sent; whether the view is still open
  diff_accept_failed = function(id, message)
    return require("gemini_companion.diff")._accept_failed(id, message)
  end,
  -- answered: draw a batch of the agent panel (agent/view.py); done when drawn
  agent_draw = function(ops)
    return require("gemini_companion.agent.transcript")._apply(ops)
  end,
  -- answered: the agent reads a file: its loaded buffer's text, or nil (agent/files.lua)
  buffer_read = function(path)
    return require("gemini_companion.agent.files").read(path)
  end,
  -- answered: the agent writes a file: apply the edits to its buffer and write it
  buffer_apply = function(path, tick, edits, options)
    return require("gemini_companion.agent.files").apply(path, tick, edits, options)
  end,
  -- one-way: a prompt was not sent: it attaches files outside the workspace (ask,
  -- then send it again), or an attachment cannot be sent (agent/attach.py)
  agent_attach_refused = function(request, outside, reason)
    require("gemini_companion.agent.prompt")._attach_refused(request, outside, reason)
  end,
}

--- A request of the agent panel (lua/gemini_companion/agent) to the agent session
--- (agent/service.py); never waits: answers come back as state and transcript
--- updates.
---@param action string
---@param args table
function M.agent(action, args)
  notify("gemini_companion_agent", action, args)
end

--- The one entry point of the Python side into Lua (nvim_editor.py).
---@param name string
---@param ... any
---@return any
function M._receive(name, ...)
  local handler = handlers[name]
  if not handler then
    error("gemini_companion: unknown message from the Python side: " .. tostring(name), 0)
  end
  return handler(...)
end

return M
