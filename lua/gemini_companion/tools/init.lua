--- Neovim's knowledge as MCP tools, served on `/tools`: the registry.
---
--- One file per tool in this folder (`get_diagnostics.lua`, `read_buffer.lua`, ...),
--- each a `gemini_companion.Tool`: its name, description and JSON schema beside the
--- function that answers. The Python side (rplugin/python3/gemini_companion/tools/neovim.py)
--- knows no tool by name: it lists what `describe()` gives (sent with the start
--- options), checks each call's arguments against the schema, and forwards it here.
---
--- Each call arrives as a one-way message (`host.lua` `tool_run`) and is answered by
--- another (`host.tool_result`), so Neovim never waits for Python and Python never
--- blocks Neovim. Every answer is computed in short steps on the main loop, bounded
--- by the caps in `limits`; language-server requests and file reads are asynchronous.
---
--- Nothing here changes the editor: no buffer is added or loaded, no autocommand
--- runs, no option is set, and no file but a regular one is opened.
local M = {}

--- The tools, in the order they are listed: each name is the module
--- `gemini_companion.tools.<name>`, which returns a `gemini_companion.Tool`.
M.modules = {
  "get_diagnostics",
  "read_buffer",
  "list_open_buffers",
  "get_selection",
  "find_definition",
  "find_references",
  "document_symbols",
}

---@class gemini_companion.ToolCall
---@field reply fun(ok: boolean, value: any) the answer, once (later, for an `async` tool)
---@field allowed boolean the path policy's word on `args.filePath` (paths.py): under a root
---@field roots string[] the policy's roots (real paths), for paths only Neovim sees

---@class gemini_companion.Tool
---@field name string as the agent calls it
---@field description string what the model reads
---@field input_schema table JSON schema of the arguments (checked by the Python side)
---@field async? boolean answers through `call.reply` rather than by returning
---@field run fun(args: table, call: gemini_companion.ToolCall): table?

---@type table<string, gemini_companion.Tool>?
local by_name

local uv = vim.uv or vim.loop

--- Most main-loop time one step of a tool call takes before it gives the loop back.
M.step_ms = 10

---@type integer? when the running step of a tool call began (uv.hrtime)
local step_started

---@return table<string, gemini_companion.Tool>
local function tools()
  if not by_name then
    by_name = {}
    for _, module in ipairs(M.modules) do
      local tool = require("gemini_companion.tools." .. module)
      by_name[tool.name] = tool
    end
  end
  return by_name
end

--- Every tool as the Python side lists it: `{ name, description, input_schema }`.
---@return table[]
function M.describe()
  local list = {}
  for _, module in ipairs(M.modules) do
    local tool = tools()[require("gemini_companion.tools." .. module).name]
    list[#list + 1] = { name = tool.name, description = tool.description, input_schema = tool.input_schema }
  end
  return list
end

--- Run tool `name` for call `id`; the answer goes back through host.tool_result,
--- exactly once: `ok` true with the result, or false with the message for the agent.
--- `args._scope` (added by tools/neovim.py after the arguments were checked, so an
--- agent cannot set it): the path policy's verdict on `filePath` and its roots.
---@param id integer
---@param name string
---@param args? table
function M.run(id, name, args)
  local host = require("gemini_companion.host")
  local answered = false
  local function reply(ok, value)
    if not answered then
      answered = true
      host.tool_result(id, ok, value)
    end
  end
  local tool = tools()[name]
  if not tool then
    reply(false, "Neovim has no tool named " .. tostring(name))
    return
  end
  args = args or {}
  local scope = args._scope or {}
  args._scope = nil
  ---@type gemini_companion.ToolCall
  local call = { reply = reply, allowed = scope.allowed == true, roots = scope.roots or {} }
  M.in_steps(tool.run, function(ok, value)
    if not ok then
      reply(false, type(value) == "table" and value.tool_error or ("failed in Neovim: " .. tostring(value)))
    elseif not tool.async then
      reply(true, value)
    end
  end, args, call)
end

--- Run `fn(...)` as a coroutine, in steps: long work (a walk along a 50 MB line,
--- 20 000 locations) calls `M.pause()`, which gives the main loop back once a step
--- has run `step_ms`, and goes on in a later iteration. `done(ok, value)` at the end.
---@param fn function
---@param done fun(ok: boolean, value: any)
function M.in_steps(fn, done, ...)
  local co = coroutine.create(fn)
  local function step(...)
    local outer = step_started
    step_started = uv.hrtime()
    local ok, value = coroutine.resume(co, ...)
    step_started = outer
    if not ok then
      done(false, value)
    elseif coroutine.status(co) == "suspended" then
      vim.schedule(step)
    else
      done(true, value)
    end
  end
  step(...)
end

--- Give the main loop back if this step has run `M.step_ms`: the work goes on in
--- a later iteration. Long loops call it; a no-op outside `in_steps`.
function M.pause()
  if step_started and (uv.hrtime() - step_started) / 1e6 >= M.step_ms then
    coroutine.yield()
  end
end

--- A tool by name (benches and tests).
---@param name string
---@return gemini_companion.Tool?
function M.get(name)
  return tools()[name]
end

return M
