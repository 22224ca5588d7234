--- getDiagnostics: what Neovim's diagnostics say about the open files, most severe first.
local api = vim.api
local paths = require("gemini_companion.tools.paths")
local text = require("gemini_companion.tools.text")

local DEFAULT_LIMIT, MAX_LIMIT = 100, 1000
local severities = { "error", "warning", "info", "hint" }
local severity_rank = { error = 1, warning = 2, info = 3, hint = 4 }

---@param args { filePath?: string, severity?: string, limit?: integer }
---@param call gemini_companion.ToolCall
local function run(args, call)
  local limit = args.limit or DEFAULT_LIMIT
  local bufs
  if args.filePath then
    paths.check_allowed(args.filePath, call)
    local buf = paths.find_buffer(args.filePath)
    if not buf then
      return {
        filePath = args.filePath,
        diagnostics = {},
        total = 0,
        note = "this file is not open in Neovim; Neovim has diagnostics only for open buffers",
      }
    end
    bufs = { buf }
  else
    bufs = {}
    for _, buf in ipairs(api.nvim_list_bufs()) do
      if api.nvim_buf_is_loaded(buf) and paths.buffer_path(buf) then
        bufs[#bufs + 1] = buf
      end
    end
  end
  local min_rank = severity_rank[args.severity or "hint"]
  local found = {}
  local counts = { error = 0, warning = 0, info = 0, hint = 0 }
  for _, buf in ipairs(bufs) do
    local path = paths.buffer_path(buf)
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      local severity = severities[d.severity] or "hint"
      if severity_rank[severity] <= min_rank then
        counts[severity] = counts[severity] + 1
        found[#found + 1] = { buf = buf, path = path, d = d, severity = severity }
      end
    end
  end
  table.sort(found, function(a, b)
    if a.d.severity ~= b.d.severity then
      return a.d.severity < b.d.severity
    end
    if a.path ~= b.path then
      return a.path < b.path
    end
    if a.d.lnum ~= b.d.lnum then
      return a.d.lnum < b.d.lnum
    end
    return a.d.col < b.d.col
  end)
  local out, positions = {}, {}
  for i = 1, math.min(#found, limit) do
    local f = found[i]
    local d = f.d
    positions[f.buf] = positions[f.buf] or text.positions(f.buf)
    local p = positions[f.buf]
    out[i] = {
      filePath = f.path,
      severity = f.severity,
      line = d.lnum + 1,
      character = p:char(d.lnum, d.col),
      endLine = (d.end_lnum or d.lnum) + 1,
      endCharacter = p:char(d.end_lnum or d.lnum, d.end_col or d.col),
      message = d.message,
      source = d.source,
      code = d.code ~= nil and tostring(d.code) or nil,
    }
  end
  local result = { diagnostics = out, total = #found, counts = counts, filePath = args.filePath }
  if #found > #out then
    result.truncated = true
    result.note = string.format(
      "showing the %d most severe of %d; ask for one filePath or a higher severity to see the rest",
      #out,
      #found
    )
  end
  return result
end

---@type gemini_companion.Tool
return {
  name = "getDiagnostics",
  description = "The diagnostics (errors, warnings, hints) Neovim has for the open files,"
    .. " from language servers and linters, most severe first: file, range,"
    .. " severity, message, source. Cheaper and fresher than running a compiler.",
  input_schema = {
    type = "object",
    properties = {
      filePath = {
        type = "string",
        description = "Only this file (absolute, or relative to the workspace root); omit for every open file",
      },
      severity = {
        type = "string",
        enum = { "error", "warning", "info", "hint" },
        description = "The least severe level to include (default: hint, i.e. all)",
      },
      limit = {
        type = "integer",
        minimum = 1,
        maximum = MAX_LIMIT,
        description = "At most this many, most severe first (default " .. DEFAULT_LIMIT .. ")",
      },
    },
    additionalProperties = false,
  },
  run = run,
}
