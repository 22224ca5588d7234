--- Language-server locations as the agent reads them:
--- `{filePath, line, character, endLine, endCharacter, text}`, without loading a
--- single buffer (vim.lsp.util.locations_to_items adds one per file, runs `BufReadCmd`
--- for other URI schemes and blocks on a FIFO): lines come from open buffers, or
--- from regular files read off the main loop (files.lua).
local M = {}

local lsp = require("gemini_companion.tools.lsp")
local paths = require("gemini_companion.tools.paths")
local text = require("gemini_companion.tools.text")

--- A location's `text` (its line, trimmed) is cut to this many bytes.
local MAX_TEXT = 500

---@param a lsp.Position
---@param b lsp.Position
local function before(a, b)
  if a.line ~= b.line then
    return a.line < b.line
  end
  return a.character < b.character
end

--- The first `max_locations` distinct locations of the answers, sorted by URI then
--- position, and how many there were in all.
---@param results { client: vim.lsp.Client, result: any }[]
---@return { uri: string, range: lsp.Range, encoding: string }[] kept
---@return integer total
local function first_locations(results)
  local pause = require("gemini_companion.tools").pause
  local by_uri, seen, total = {}, {}, 0
  for _, r in ipairs(results) do
    local list = r.result
    if type(list) ~= "table" then
      list = {}
    elseif list.uri or list.targetUri then
      list = { list }
    end
    for _, d in ipairs(list) do
      local uri = type(d) == "table" and (d.uri or d.targetUri)
      local range = type(d) == "table" and (d.range or d.targetSelectionRange)
      if type(uri) == "string" and type(range) == "table" and range.start and range["end"] then
        local key = uri .. ":" .. tostring(range.start.line) .. ":" .. tostring(range.start.character)
        if not seen[key] then
          seen[key] = true
          total = total + 1
          by_uri[uri] = by_uri[uri] or {}
          table.insert(by_uri[uri], { uri = uri, range = range, encoding = r.client.offset_encoding })
          if total % 512 == 0 then
            pause()
          end
        end
      end
    end
  end
  local uris = vim.tbl_keys(by_uri)
  table.sort(uris)
  local kept = {}
  for i, uri in ipairs(uris) do
    if i % 64 == 0 then
      pause()
    end
    local rows = by_uri[uri]
    table.sort(rows, function(a, b)
      return before(a.range.start, b.range.start)
    end)
    for _, row in ipairs(rows) do
      if #kept == lsp.max_locations then
        return kept, total
      end
      kept[#kept + 1] = row
    end
  end
  return kept, total
end

--- `line` trimmed and cut to `max_text` bytes.
---@param line string
---@return string
local function excerpt(line)
  line = vim.trim(#line > 4 * MAX_TEXT and line:sub(1, 4 * MAX_TEXT) or line)
  if #line > MAX_TEXT then
    line = text.whole_chars(line:sub(1, MAX_TEXT)) .. "..."
  end
  return line
end

--- LSP locations as `{filePath, line, character, endLine, endCharacter, text}`, given
--- to `finish` once the lines of files that are not open have been read.
---
--- A line's text (and with it the exact character) comes from the buffer if the
--- file is open, else from the file if the path policy allows it and it is a
--- regular file; otherwise the location says where, not what, and its character
--- is the server's column plus one.
---@param results { client: vim.lsp.Client, result: any }[]
---@param call gemini_companion.ToolCall
---@param finish fun(found: table[], total: integer)
---@param fail fun(message: string)
function M.convert(results, call, finish, fail)
  local kept, total = first_locations(results)
  local open = paths.open_buffers()
  local positions = {} ---@type table<integer, gemini_companion.LinePositions>
  local wanted = {} ---@type table<string, integer[]>
  for _, loc in ipairs(kept) do
    local path = vim.startswith(loc.uri, "file:") and vim.uri_to_fname(loc.uri) or nil
    loc.path = path or loc.uri
    if path then
      local real = paths.real(path)
      loc.buf = open[real]
      if not loc.buf and paths.under_roots(real, call.roots) then
        wanted[path] = wanted[path] or {}
        table.insert(wanted[path], loc.range.start.line)
      end
    end
  end
  for path, rows in pairs(wanted) do
    table.sort(rows)
    wanted[path] = rows
  end
  local function convert(lines)
    local out = {}
    for i, loc in ipairs(kept) do
      require("gemini_companion.tools").pause()
      local start, stop = loc.range.start, loc.range["end"]
      local entry = { filePath = loc.path, line = start.line + 1, endLine = stop.line + 1 }
      local line ---@type string?
      if loc.buf then
        positions[loc.buf] = positions[loc.buf] or text.positions(loc.buf)
        local p, row = positions[loc.buf], start.line
        -- Of a long line only what precedes the columns and an excerpt are read.
        local length = text.line_length(loc.buf, row)
        local function byte_at(index)
          return lsp.lsp_byte(text.slice(loc.buf, row, 0, math.min(length, 4 * index + 4)), loc.encoding, index)
        end
        local byte = byte_at(start.character)
        entry.character = p:char(row, byte)
        if stop.line == row then
          entry.endCharacter = p:char(row, byte_at(stop.character))
        end
        line = text.whole_chars(
          text.slice(loc.buf, row, length <= text.piece and 0 or byte, math.min(length, byte + text.piece))
        )
      else
        line = lines[loc.path] and lines[loc.path][start.line]
        if line then
          entry.character = text.char_of(line, lsp.lsp_byte(line, loc.encoding, start.character))
          if stop.line == start.line then
            entry.endCharacter = text.char_of(line, lsp.lsp_byte(line, loc.encoding, stop.character))
          end
        else
          entry.character = start.character + 1
        end
      end
      if line and text.is_text(line) then
        entry.text = excerpt(line)
      end
      out[i] = entry
    end
    finish(out, total)
  end
  if next(wanted) then
    require("gemini_companion.tools.files").read_lines(wanted, function(lines)
      require("gemini_companion.tools").in_steps(convert, function(ok, err)
        if not ok then
          fail(lsp.message_of(err))
        end
      end, lines)
    end)
  else
    convert({})
  end
end

return M
