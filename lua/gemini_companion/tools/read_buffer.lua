--- readBuffer: the text of an open file as the user sees it, unsaved changes included.
---
--- Bounded both ways: at most `max_lines` lines and about `max_bytes` bytes an
--- answer, read from the buffer no further than that (a 50 MB line is read in
--- pieces, never whole); a longer range is cut with a note naming the argument
--- that reads on, inside a line when a single line is longer than the cap.
local api = vim.api
local paths = require("gemini_companion.tools.paths")
local text = require("gemini_companion.tools.text")

local M = {}

--- Most lines, and most bytes of text, one answer holds.
M.max_lines = 2000
M.max_bytes = 200000
local MAX_LINE = 10000000

---@param args { filePath: string, startLine?: integer, endLine?: integer, startCharacter?: integer }
---@param call gemini_companion.ToolCall
function M.run(args, call)
  local first = args.startLine or 1
  if args.endLine and args.endLine < first then
    paths.refuse(string.format("endLine (%d) is before startLine (%d)", args.endLine, first))
  end
  local buf = paths.open_buffer(args.filePath, call)
  if vim.bo[buf].binary then
    paths.refuse(args.filePath .. " is a binary buffer ('binary' is set): it has no text to read")
  end
  local count = api.nvim_buf_line_count(buf)
  if first > count then
    paths.refuse(string.format("startLine %d is past the end: the buffer has %d lines", first, count))
  end
  local last
  if args.endLine then
    last = math.min(args.endLine, count)
    if last - first + 1 > M.max_lines then
      paths.refuse(
        string.format(
          "lines %d-%d are too many at once: ask for at most %d lines (the buffer has %d)",
          first,
          args.endLine,
          M.max_lines,
          count
        )
      )
    end
  else
    last = math.min(count, first + M.max_lines - 1)
  end
  local positions = text.positions(buf)
  local start_char = args.startCharacter or 1
  local start_byte = 0
  if start_char > 1 then
    local length = text.line_length(buf, first - 1)
    start_byte = positions:byte(first - 1, start_char)
    if start_byte >= length and positions:char(first - 1, length) < start_char then
      paths.refuse(
        string.format(
          "startCharacter %d is past the end of line %d (it has %d characters)",
          start_char,
          first,
          positions:char(first - 1, length) - 1
        )
      )
    end
  end
  local lines, last_row, cut = text.read(buf, first - 1, start_byte, last - 1, M.max_bytes)
  for i, line in ipairs(lines) do
    if not text.is_text(line) then
      paths.refuse(string.format("line %d of %s is not text (NUL or non-UTF-8 bytes)", first + i - 1, args.filePath))
    end
  end
  local result = {
    filePath = paths.buffer_path(buf),
    startLine = first,
    startCharacter = args.startCharacter,
    endLine = last_row + 1,
    lineCount = count,
    modified = vim.bo[buf].modified,
    text = table.concat(lines, "\n"),
  }
  if cut then
    local length = text.line_length(buf, first - 1)
    local end_char = positions:char(first - 1, cut) - 1
    result.endCharacter = end_char
    result.note = string.format(
      "line %d is %d bytes long: this is characters %d-%d of it; ask for startLine=%d, startCharacter=%d to read on",
      first,
      length,
      start_char,
      end_char,
      first,
      end_char + 1
    )
  elseif last_row + 1 < last or (not args.endLine and last < count) then
    result.note =
      string.format("lines %d-%d of %d; ask for startLine=%d to read on", first, last_row + 1, count, last_row + 2)
  end
  return result
end

---@type gemini_companion.Tool
return {
  name = "readBuffer",
  description = "The text of a file open in Neovim as the user sees it, unsaved changes"
    .. " included (the file on disk may be older), with an optional line range"
    .. string.format(" (at most %d lines or %d bytes at once; a longer answer", M.max_lines, M.max_bytes)
    .. " is cut and its note says how to read on).",
  input_schema = {
    type = "object",
    properties = {
      filePath = { type = "string", description = "Path of the file: absolute, or relative to the workspace root" },
      startLine = {
        type = "integer",
        minimum = 1,
        maximum = MAX_LINE,
        description = "First line to read (1-based, default 1)",
      },
      endLine = {
        type = "integer",
        minimum = 1,
        maximum = MAX_LINE,
        description = "Last line to read, inclusive (default: the end)",
      },
      startCharacter = {
        type = "integer",
        minimum = 1,
        maximum = 2 ^ 31 - 1,
        description = "Start at this character (1-based code point) of startLine (default 1):"
          .. " for reading on inside a very long line",
      },
    },
    required = { "filePath" },
    additionalProperties = false,
  },
  run = M.run,
  limits = M,
}
