--- getSelection: the text the user has selected (or selected last), with its file and range.
---
--- A small selection is read with `getregion()`, which knows every Visual mode; a
--- big one (more than `max_bytes`) is read only up to the cap, from the buffer's
--- byte offsets, and its note says where readBuffer reads on.
local api, fn = vim.api, vim.fn
local paths = require("gemini_companion.tools.paths")
local text = require("gemini_companion.tools.text")

--- Most bytes of selected text one answer holds.
local MAX_BYTES = 200000

local region_types = { v = "v", V = "V", ["\22"] = "\22", s = "v", S = "V", ["\19"] = "\22" }
local mode_names = { v = "characterwise", V = "linewise", ["\22"] = "blockwise" }

--- The selection's text, cut to MAX_BYTES; `cut` is {row, byte} where a cut text stops.
---@param buf integer
---@param from integer[] {line, byte col 0-based}
---@param to integer[]
---@param kind string
---@return string text
---@return { line: integer, col: integer }? cut
local function region_text(buf, from, to, kind)
  local first_row, last_row = from[1] - 1, to[1] - 1
  local start_col = kind == "V" and 0 or from[2]
  -- Bytes selected (a blockwise selection counts its lines whole).
  local size = kind == "v" and text.offset(buf, last_row) + to[2] + 1 or text.offset(buf, last_row + 1)
  size = size - text.offset(buf, first_row) - start_col
  if size <= MAX_BYTES then
    local ok, lines = pcall(fn.getregion, { buf, from[1], from[2] + 1, 0 }, { buf, to[1], to[2] + 1, 0 }, {
      type = kind,
    })
    if not ok then
      paths.refuse("the selection could not be read: " .. tostring(lines))
    end
    return table.concat(lines, "\n"), nil
  end
  if kind == "\22" then
    paths.refuse(
      string.format(
        "the blockwise selection spans lines %d-%d, %d bytes: more than %d; read those lines with readBuffer",
        from[1],
        to[1],
        size,
        MAX_BYTES
      )
    )
  end
  local lines, row, cut_col = text.read(buf, first_row, start_col, last_row, MAX_BYTES)
  if not cut_col then -- cut at a line's end: the next line is where to read on
    return table.concat(lines, "\n"), { line = row + 2, col = 0 }
  end
  return table.concat(lines, "\n"), { line = row + 1, col = cut_col }
end

---@param buf integer
---@param from integer[] {line, byte col 0-based}
---@param to integer[]
---@param kind string
---@param current boolean
local function selection(buf, from, to, kind, current)
  if from[1] > to[1] or (from[1] == to[1] and from[2] > to[2]) then
    from, to = to, from
  end
  -- A linewise mark's column is v:maxcol: keep it on the line.
  local function clamp(pos)
    return { pos[1], math.max(0, math.min(pos[2], text.line_length(buf, pos[1] - 1) - 1)) }
  end
  from, to = clamp(from), clamp(to)
  local selected, cut = region_text(buf, from, to, kind)
  local positions = text.positions(buf)
  local last_length = text.line_length(buf, to[1] - 1)
  local last_char = kind == "V" and positions:char(to[1] - 1, last_length) - 1 or positions:char(to[1] - 1, to[2])
  local path = paths.buffer_path(buf)
  local result = {
    filePath = path,
    startLine = from[1],
    startCharacter = kind == "V" and 1 or positions:char(from[1] - 1, from[2]),
    endLine = to[1],
    endCharacter = math.max(1, last_char),
    mode = mode_names[kind],
    current = current,
    text = selected,
  }
  if cut then
    local at = cut.col > 0 and positions:char(cut.line - 1, cut.col) or 1
    result.truncated = true
    result.note = string.format(
      "the selection is longer than %d bytes: this is its start; read on with readBuffer"
        .. " filePath=%s, startLine=%d%s",
      MAX_BYTES,
      path,
      cut.line,
      at > 1 and string.format(", startCharacter=%d", at) or ""
    )
  end
  return result
end

local function run()
  local mode = api.nvim_get_mode().mode
  local kind = region_types[mode:sub(1, 1)]
  local buf = api.nvim_get_current_buf()
  if kind and paths.buffer_path(buf) then
    local v, cur = fn.getpos("v"), fn.getpos(".")
    return selection(buf, { v[2], v[3] - 1 }, { cur[2], cur[3] - 1 }, kind, true)
  end
  -- The last Visual selection: its marks in the file buffer used most recently.
  local best, best_used
  for _, info in ipairs(fn.getbufinfo({ bufloaded = 1 })) do
    if paths.buffer_path(info.bufnr) and api.nvim_buf_get_mark(info.bufnr, "<")[1] > 0 then
      if not best_used or info.lastused > best_used then
        best, best_used = info.bufnr, info.lastused
      end
    end
  end
  if not best then
    return { note = "nothing is selected in Neovim, and no file has a previous Visual selection" }
  end
  local from, to = api.nvim_buf_get_mark(best, "<"), api.nvim_buf_get_mark(best, ">")
  -- visualmode() is the mode last used in the current buffer: ask it in `best`.
  local last_kind = region_types[api.nvim_buf_call(best, fn.visualmode)] or "v"
  return selection(best, from, to, last_kind, false)
end

---@type gemini_companion.Tool
return {
  name = "getSelection",
  description = "The text the user has selected in Neovim (or selected last), with its file and range.",
  input_schema = { type = "object", properties = vim.empty_dict(), additionalProperties = false },
  run = run,
}
