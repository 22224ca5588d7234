--- The conversation history file (`stdpath("state")/gemini-companion/acp-sessions.json`,
--- shared with the Python side: agent/history/): read for :GeminiAgentConversations
--- and :GeminiAgentResume, and changed for what the user does (rename, delete) and
--- for A2A tasks. The Python side records what the agent does (an ACP session
--- created, prompted, loaded, failing to load). Each change reads the file again
--- and replaces it atomically (a temporary file, then a rename).
---
--- A file that is not a JSON list is moved aside (`<file>.corrupt-<UTC time>`, the
--- same name the Python side gives it) with one message saying where, and the
--- history starts empty; a missing file is an empty history.
local M = {}

---@class gemini_companion.AgentHistoryRecord
---@field id string ACP: the session; A2A: the task
---@field cwd string The workspace
---@field protocol "acp"|"a2a"
---@field title string The first prompt's first line, or the user's name for it
---@field created_at number
---@field loaded_at number ACP: when the agent last loaded it
---@field updated_at number When it was last used
---@field error string Why its last load failed ("" when it did not)

---@type table<string, true> files already reported damaged
local reported = {}

--- The history file.
---@return string
function M.file()
  return require("gemini_companion.agent.connection").sessions_file()
end

---@param message string
---@param level? integer
local function notify(message, level)
  require("gemini_companion.agent.connection").notify(message, level)
end

---@param path string
---@return string? aside where it went
local function move_aside(path)
  local stamp = os.date("!%Y%m%dT%H%M%SZ")
  local aside, n = ("%s.corrupt-%s"):format(path, stamp), 1
  while vim.uv.fs_stat(aside) do
    n = n + 1
    aside = ("%s.corrupt-%s-%d"):format(path, stamp, n)
  end
  if vim.uv.fs_rename(path, aside) then
    return aside
  end
end

---@param item any
---@return gemini_companion.AgentHistoryRecord?
local function record(item)
  if type(item) ~= "table" or type(item.id) ~= "string" then
    return nil
  end
  local function number(v)
    return tonumber(v) or 0
  end
  return {
    id = item.id,
    cwd = type(item.cwd) == "string" and item.cwd or "",
    protocol = item.protocol == "a2a" and "a2a" or "acp",
    title = type(item.title) == "string" and item.title or "",
    created_at = number(item.created_at),
    loaded_at = number(item.loaded_at),
    updated_at = number(item.updated_at),
    error = type(item.error) == "string" and item.error or "",
  }
end

--- Every record, least recently changed first; nil and why when the file exists
--- but cannot be read (it must not be written over then).
---@return gemini_companion.AgentHistoryRecord[]? records, string? err
function M.read()
  local path = M.file()
  local file, err, code = io.open(path, "r")
  if not file then
    if code == 2 then -- ENOENT
      return {}
    end
    return nil, err
  end
  local text = file:read("*a")
  file:close()
  local ok, raw = pcall(vim.json.decode, text, { luanil = { object = true, array = true } })
  if not ok or type(raw) ~= "table" or (next(raw) ~= nil and not vim.islist(raw)) then
    local aside = move_aside(path)
    if aside and not reported[path] then
      reported[path] = true
      notify(
        ("the conversation history %s was damaged: it was moved to %s, and the history starts empty"):format(
          path,
          aside
        ),
        vim.log.levels.WARN
      )
    end
    return {}
  end
  local out = {}
  for _, item in ipairs(raw) do
    out[#out + 1] = record(item)
  end
  return out
end

local checked = false

--- Read the file once before the Python side first touches it: a damaged file is
--- moved aside and reported here, where the user sees it.
function M.check()
  if not checked then
    checked = true
    M.read()
  end
end

--- The records of workspace `cwd` (default: the current directory), most recently
--- used first.
---@param cwd? string
---@return gemini_companion.AgentHistoryRecord[]
function M.workspace(cwd)
  cwd = cwd or vim.fn.getcwd()
  local found = vim.tbl_filter(function(r)
    return r.cwd == cwd
  end, M.read() or {})
  table.sort(found, function(a, b)
    return a.updated_at > b.updated_at
  end)
  return found
end

--- The record `id`, or nil.
---@param id string
---@return gemini_companion.AgentHistoryRecord?
function M.get(id)
  for _, r in ipairs(M.read() or {}) do
    if r.id == id then
      return r
    end
  end
end

---@param records gemini_companion.AgentHistoryRecord[]
---@return boolean ok, string? err
local function write(records)
  local path = M.file()
  local dir = vim.fs.dirname(path)
  vim.fn.mkdir(dir, "p")
  local tmp = ("%s/.history-%d-%d"):format(dir, vim.uv.os_getpid(), vim.uv.hrtime())
  local file, err = io.open(tmp, "w")
  if not file then
    return false, err
  end
  -- An empty Lua table encodes as an object: the file is a list.
  local ok, werr = file:write(#records == 0 and "[]" or vim.json.encode(records))
  file:close()
  if ok then
    ok, werr = vim.uv.fs_rename(tmp, path)
  end
  if not ok then
    os.remove(tmp)
    return false, werr
  end
  return true
end

--- Replace the record `id` by `apply(it or nil)` (nil: remove it); the changed one
--- goes last (the most recently changed). A message says why when it cannot.
---@param id string
---@param apply fun(r: gemini_companion.AgentHistoryRecord?): gemini_companion.AgentHistoryRecord?
---@return boolean ok
function M.change(id, apply)
  local records, err = M.read()
  if not records then
    notify(("cannot read the conversation history: %s"):format(err), vim.log.levels.ERROR)
    return false
  end
  local found
  for i, r in ipairs(records) do
    if r.id == id then
      found = table.remove(records, i)
      break
    end
  end
  local changed = apply(found)
  if changed == nil and found == nil then
    return true
  end
  records[#records + 1] = changed
  local ok, werr = write(records)
  if not ok then
    notify(("cannot write the conversation history: %s"):format(werr), vim.log.levels.ERROR)
  end
  return ok
end

--- Name conversation `id` `title` (its record made if there is none yet).
---@param id string
---@param title string
---@param fields? { protocol?: "acp"|"a2a", cwd?: string }
---@return boolean ok
function M.rename(id, title, fields)
  return M.change(id, function(r)
    r = r or record({ id = id, cwd = fields and fields.cwd or vim.fn.getcwd(), protocol = fields and fields.protocol })
    ---@cast r -nil
    r.title = title
    return r
  end)
end

--- Forget conversation `id`.
---@param id string
---@return boolean ok
function M.delete(id)
  return M.change(id, function()
    return nil
  end)
end

--- An A2A task was used now: recorded, with `title` when it has none yet.
---@param id string
---@param title string
---@return boolean ok
function M.used_task(id, title)
  return M.change(id, function(r)
    local now = os.time()
    r = r or record({ id = id, cwd = vim.fn.getcwd(), protocol = "a2a", created_at = now })
    ---@cast r -nil
    r.updated_at = now
    if r.title == "" then
      r.title = title
    end
    return r
  end)
end

return M
