--- What the prompt attaches: `@path` (a workspace file or an open buffer,
--- `@path#L3-9` for lines) and `#buffer`, `#selection`, `#diagnostics` (the
--- buffer you came from), turned into the references sent with the prompt
--- (`M.references`), which the Python side checks and reads (agent/attach.py:
--- links resolved, regular files only, the workspace policy, a path outside it
--- only once the user confirms it) and sends as ACP resource links or embedded
--- resources, or as A2A text parts. Buffers are found by exact name (files.lua);
--- nothing here reads a file. Completion is complete.lua's.
local M = {}

local api = vim.api

--- The context words `#name` and what each attaches.
---@type table<string, string>
M.WORDS = {
  buffer = "the buffer you came from (its unsaved text too)",
  selection = "the lines last selected in that buffer",
  diagnostics = "that buffer's diagnostics",
}

--- The context words in the order completion lists them.
M.ORDER = { "buffer", "selection", "diagnostics" }

---@param buf integer
---@return boolean
function M.is_file_buffer(buf)
  return api.nvim_buf_is_valid(buf)
    and vim.bo[buf].buftype == ""
    and api.nvim_buf_get_name(buf) ~= ""
    and not api.nvim_buf_get_name(buf):match("^%a[%w+.-]*://")
end

---@type integer? the last file buffer whose window the user left
local source_buf = nil
local tracking = false

--- Remember the file buffer of the windows the user leaves (the one `#buffer` and
--- friends mean when the cursor is in the panel).
function M.track()
  if tracking then
    return
  end
  tracking = true
  local group = api.nvim_create_augroup("gemini_companion_agent_context", { clear = true })
  api.nvim_create_autocmd({ "WinLeave", "BufLeave" }, {
    group = group,
    callback = function(ev)
      if M.is_file_buffer(ev.buf) then
        source_buf = ev.buf
      end
    end,
  })
end

--- The buffer `#buffer`, `#selection` and `#diagnostics` mean: the current one when
--- it is a file's, else the last file buffer the user left, else the alternate one.
---@return integer?
function M.source()
  local cur = api.nvim_get_current_buf()
  if M.is_file_buffer(cur) then
    return cur
  end
  if source_buf and M.is_file_buffer(source_buf) then
    return source_buf
  end
  local alt = vim.fn.bufnr("#")
  if alt > 0 and M.is_file_buffer(alt) then
    return alt
  end
  return nil
end

---@param path string
---@return string
local function relative(path)
  return vim.fn.fnamemodify(path, ":.")
end

---@class gemini_companion.AgentReference
---@field path string absolute
---@field start_line? integer 1-based
---@field end_line? integer
---@field text? string the text sent with the prompt (unsaved text, lines, diagnostics)
---@field kind? "file"|"diagnostics"

--- The loaded buffer of `path`, if any: by exact full name (or the same real file),
--- never `vim.fn.bufnr()`'s pattern match (`a.py` is not `a.py.orig`).
---@param path string absolute
---@return integer?
local function buffer_of(path)
  return require("gemini_companion.agent.files").buffer(path)
end

--- A reference to lines `first`..`last` of `path`: a loaded buffer's lines go with
--- it; a file's are read by the Python side (agent/attach.py: the one reader, which
--- resolves links, reads regular files only, off the loop, within the workspace).
---@param path string
---@param first integer
---@param last integer
---@return gemini_companion.AgentReference? ref, string? err
local function lines_reference(path, first, last)
  local buf = buffer_of(path)
  if not buf then
    return { path = path, start_line = first, end_line = last }
  end
  local lines = api.nvim_buf_get_lines(buf, first - 1, last, false)
  if #lines == 0 then
    return nil, ("%s has no line %d"):format(relative(path), first)
  end
  return { path = path, start_line = first, end_line = last, text = table.concat(lines, "\n") }
end

--- A reference to a whole file: its buffer's text when it has unsaved changes (the
--- agent would read the file on disk otherwise).
---@param path string
---@return gemini_companion.AgentReference
local function file_reference(path)
  local buf = buffer_of(path)
  if buf and vim.bo[buf].modified then
    return { path = path, text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n") }
  end
  return { path = path }
end

---@param buf integer
---@return string
local function diagnostics_text(buf)
  local severities = { "ERROR", "WARN", "INFO", "HINT" }
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local line = api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1] or ""
    out[#out + 1] = ("line %d, column %d: %s: %s%s\n  %s"):format(
      d.lnum + 1,
      d.col + 1,
      severities[d.severity] or "?",
      d.message,
      d.source and (" [" .. d.source .. "]") or "",
      vim.trim(line)
    )
  end
  if #out == 0 then
    return "(no diagnostics)"
  end
  return table.concat(out, "\n")
end

---@param name string
---@return gemini_companion.AgentReference? ref, string? err
local function context_reference(name)
  local buf = M.source()
  if not buf then
    return nil, ("#%s: no file buffer to take it from (open a file, then the panel)"):format(name)
  end
  local path = api.nvim_buf_get_name(buf)
  if name == "buffer" then
    return file_reference(path)
  elseif name == "selection" then
    local first, last = api.nvim_buf_get_mark(buf, "<")[1], api.nvim_buf_get_mark(buf, ">")[1]
    if first == 0 or last == 0 then
      return nil, "#selection: nothing was selected in " .. relative(path)
    end
    if last < first then
      first, last = last, first
    end
    local text = table.concat(api.nvim_buf_get_lines(buf, first - 1, last, false), "\n")
    return { path = path, start_line = first, end_line = last, text = text }
  end
  return { path = path, kind = "diagnostics", text = diagnostics_text(buf) }
end

--- A file `@token` names: absolute, relative to the current directory, or an open
--- buffer's name; nil when it names none (then it stays plain text).
---@param token string without the "@"
---@return string?
local function resolve(token)
  local path = vim.fs.normalize(vim.fn.fnamemodify(token, ":p"))
  local stat = vim.uv.fs_stat(path)
  if (stat and stat.type == "file") or buffer_of(path) then
    return path
  end
  return nil
end

---@param token string
---@return gemini_companion.AgentReference? ref, string? err
local function mention_reference(token)
  local name, first, last = token:match("^(.-)#L(%d+)%-L?(%d+)$")
  if not name then
    name, first = token:match("^(.-)#L(%d+)$")
    last = first
  end
  if not name then
    name = token
  end
  local path = resolve(name)
  if not path then
    local trimmed = name:gsub("[%.,;:!?%)%]'\"]+$", "")
    path = trimmed ~= name and first == nil and resolve(trimmed) or nil
  end
  if not path then
    return nil
  end
  if first then
    local a, b = tonumber(first), tonumber(last)
    ---@cast a integer
    ---@cast b integer
    if b < a then
      a, b = b, a
    end
    return lines_reference(path, a, b)
  end
  return file_reference(path)
end

--- The references the prompt's text names: `@path`, `@path#L3-9`, `#buffer`,
--- `#selection`, `#diagnostics` (each once). A `@word` that names no file stays
--- text. Returns nil and the reason when one cannot be attached (nothing is sent).
---@param text string
---@return gemini_companion.AgentReference[]? refs, string? err
function M.references(text)
  local refs, seen = {}, {}
  for token in (" " .. text):gmatch("%s([@#][^%s]+)") do
    local ref, err
    if token:sub(1, 1) == "#" then
      local name = token:sub(2):gsub("[%.,;:!?%)]+$", "")
      if M.WORDS[name] then
        local ok, result, why = pcall(context_reference, name)
        if ok then
          ref, err = result, why
        else
          -- A source that fails (a broken vim.diagnostic, ...): one line, no trace.
          local first = vim.split(tostring(result), "\n", { plain = true })[1]
          err = ("#%s cannot be attached: %s"):format(name, first)
        end
      end
    else
      ref, err = mention_reference(token:sub(2))
    end
    if err then
      return nil, err
    end
    if ref then
      local key = table.concat({ ref.path, ref.kind or "", ref.start_line or "", ref.end_line or "" }, "\0")
      if not seen[key] then
        seen[key] = true
        refs[#refs + 1] = ref
      end
    end
  end
  return refs
end

return M
