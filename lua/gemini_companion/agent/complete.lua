--- Completion in the prompt buffer, through 'omnifunc' and 'completefunc' (so
--- <C-x><C-o> and the omni sources of nvim-cmp and blink.cmp list it): `@` the open
--- buffers and the workspace's files, `#` the context words of context.lua.
local M = {}

local api = vim.api

-- How many workspace files are listed at most; how long completion waits for a
-- listing (then the last one is used); how recent a listing started must be to be
-- used (one started by completion's first call, or on entering the prompt, just
-- before): no listing is kept for later, so a file is listed the moment it exists.
local MAX_FILES = 20000
local BUDGET_MS = 500
local FRESH_MS = 300

---@type { cwd: string, files: string[] }? the last listing, for a listing too slow
local last = nil
---@type { cwd: string, job: vim.SystemObj, started: integer }?
local listing = nil

---@param cwd string
---@return string[]
local function walk(cwd)
  local out = {}
  local deadline = vim.uv.now() + BUDGET_MS
  for name, kind in
    vim.fs.dir(cwd, {
      depth = 12,
      skip = function(dir)
        local base = vim.fs.basename(dir)
        return base:sub(1, 1) ~= "." and base ~= "node_modules"
      end,
    })
  do
    if kind == "file" and not vim.fs.basename(name):match("^%.") then
      out[#out + 1] = name
      if #out >= MAX_FILES or (#out % 256 == 0 and vim.uv.now() > deadline) then
        break
      end
    end
  end
  return out
end

--- Start listing the workspace's files in the background, unless a listing of it
--- started just now (completion's first call and the prompt's InsertEnter call it).
function M.prefetch()
  local cwd = vim.fn.getcwd()
  vim.uv.update_time()
  if listing and listing.cwd == cwd and vim.uv.now() - listing.started < FRESH_MS then
    return
  end
  if listing then
    pcall(listing.job.kill, listing.job, "sigterm")
  end
  local ok, job = pcall(
    vim.system,
    { "git", "ls-files", "--cached", "--others", "--exclude-standard" },
    { cwd = cwd, text = true }
  )
  listing = ok and { cwd = cwd, job = job, started = vim.uv.now() } or nil
end

--- The workspace's files relative to the current directory, as they are now: `git
--- ls-files` (what git ignores is left out), else a walk of the folder; at most
--- MAX_FILES. Waits at most BUDGET_MS for the listing, then takes the last one.
---@return string[]
function M.files()
  local cwd = vim.fn.getcwd()
  M.prefetch()
  local files
  if listing then
    local ok, result = pcall(listing.job.wait, listing.job, BUDGET_MS)
    listing = nil
    if ok and result.code == 0 then
      files = vim.split(result.stdout or "", "\n", { trimempty = true })
    elseif ok and result.code == 124 and last and last.cwd == cwd then
      files = last.files -- too slow this time: the last listing
    end
  end
  files = files or walk(cwd)
  if #files > MAX_FILES then
    files = vim.list_slice(files, 1, MAX_FILES)
  end
  last = { cwd = cwd, files = files }
  return files
end

---@param path string
---@return string
local function relative(path)
  return vim.fn.fnamemodify(path, ":.")
end

--- How well `candidate` matches what was typed: 1 prefix, 2 file name prefix,
--- 3 substring, nil none.
---@param candidate string
---@param typed string lower case
---@return integer?
local function rank(candidate, typed)
  if typed == "" then
    return 1
  end
  local lower = candidate:lower()
  if vim.startswith(lower, typed) then
    return 1
  end
  if vim.startswith(vim.fs.basename(lower), typed) then
    return 2
  end
  if lower:find(typed, 1, true) then
    return 3
  end
  return nil
end

---@param base string what is typed, "@" included
---@return table[]
local function file_items(base)
  local typed = base:sub(2):lower()
  local seen, ranked = {}, {}
  local function add(path, menu, order)
    if seen[path] then
      return
    end
    seen[path] = true
    local r = rank(path, typed)
    if r then
      ranked[#ranked + 1] = { r = r, order = order, item = { word = "@" .. path, abbr = path, menu = menu } }
    end
  end
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if vim.bo[buf].buflisted and require("gemini_companion.agent.context").is_file_buffer(buf) then
      add(relative(api.nvim_buf_get_name(buf)), vim.bo[buf].modified and "[buffer, unsaved]" or "[buffer]", 0)
    end
  end
  for i, path in ipairs(M.files()) do
    add(path, "[file]", i)
  end
  table.sort(ranked, function(a, b)
    if a.r ~= b.r then
      return a.r < b.r
    end
    return a.order < b.order
  end)
  local out = {}
  for i = 1, math.min(#ranked, 200) do
    out[i] = ranked[i].item
  end
  return out
end

---@param base string
---@return table[]
local function context_items(base)
  local out = {}
  local context = require("gemini_companion.agent.context")
  for _, name in ipairs(context.ORDER) do
    if vim.startswith("#" .. name, base) then
      out[#out + 1] = { word = "#" .. name, menu = "[context]", info = context.WORDS[name] }
    end
  end
  return out
end

--- 'omnifunc' and 'completefunc' of the prompt buffer (`:h complete-functions`):
--- `@` completes open buffers and workspace files, `#` the context words.
---@param findstart integer
---@param base string
---@return integer|table
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local col = api.nvim_win_get_cursor(0)[2]
    local before = api.nvim_get_current_line():sub(1, col)
    local start = before:find("[@#][^%s@#]*$")
    if not start or (start > 1 and not before:sub(start - 1, start - 1):match("%s")) then
      return -3
    end
    if before:sub(start, start) == "@" then
      M.prefetch() -- listed while Neovim asks for the words
    end
    return start - 1
  end
  if base:sub(1, 1) == "#" then
    return context_items(base)
  end
  if base:sub(1, 1) == "@" then
    return { words = file_items(base), refresh = "always" }
  end
  return {}
end

return M
