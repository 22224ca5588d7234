--- Text in and out of the diff view: a file on disk read into a buffer, a proposal
--- split into lines, and a buffer's text for the Python side.
---
--- No path ever reaches an Ex command line here. (`:read ++edit <path>` did it before,
--- and a file name holding a newline ended that command line: the rest of the name
--- ran as a command, fnameescape() or not.) A file is read by Neovim's own reader
--- through functions that take the name as a value (`bufadd()`, `bufload()`), with
--- no autocommand, modeline, swap or undo file, and the buffer is renamed through the
--- API (`load_native`); where a buffer for the file exists already, it is read
--- through libuv and decoded here as `:edit` would (`load_file`): 'fileformat' by
--- 'fileformats', 'eol', a UTF-8 byte order mark as 'bomb', and text that is not
--- UTF-8 converted from latin1, the last of the default 'fileencodings'.
local M = {}

local api = vim.api

--- Lines of `text`, split at `sep`. The text crosses the RPC channel as one string
--- and is split here: much faster than a list of lines for big files.
---@param text string
---@param sep? string "\n" unless given
---@return string[]
function M.split_lines(text, sep)
  sep = sep or "\n"
  local lines, n, pos, step = {}, 0, 1, #sep
  local find, sub = string.find, string.sub
  while true do
    local at = find(text, sep, pos, true)
    n = n + 1
    if not at then
      lines[n] = sub(text, pos)
      return lines
    end
    lines[n] = sub(text, pos, at - 1)
    pos = at + step
  end
end

---@param buf integer
---@return string the lines joined by "\n"
function M.buffer_body(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

--- The buffer as it would be written: its 'fileformat' and 'eol'.
---@param buf integer
---@return string
function M.buffer_text(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local sep = vim.bo[buf].fileformat == "dos" and "\r\n" or vim.bo[buf].fileformat == "mac" and "\r" or "\n"
  return table.concat(lines, sep) .. (vim.bo[buf].eol and sep or "")
end

-- From this size on, a proposal's text goes to the Python side through a private file
-- (diff.py reads and removes it): an RPC message that big would leave the host's
-- message buffer at its size for good.
local FILE_HANDOFF_BYTES = 256 * 1024

--- The proposal's text for the Python side: `{text, eol, fileformat}`, or for a big
--- one `text_file` naming a file (0600, in Neovim's private temp folder) that holds it.
---@param buf integer
---@return { text: string, text_file?: string, eol: boolean, fileformat: string }
function M.proposal_content(buf)
  local bo = vim.bo[buf]
  local content = { text = M.buffer_body(buf), eol = bo.eol, fileformat = bo.fileformat }
  if #content.text >= FILE_HANDOFF_BYTES then
    local path = vim.fn.tempname()
    local fd = vim.uv.fs_open(path, "wx", tonumber("600", 8))
    if fd then
      local written = vim.uv.fs_write(fd, content.text, 0)
      vim.uv.fs_close(fd)
      if written == #content.text then
        content.text, content.text_file = "", path
      else -- a full disk: the text goes inline, as a small one does
        vim.uv.fs_unlink(path)
      end
    end
  end
  return content
end

--- The whole of an open file of `size` bytes.
---@param fd integer
---@param size integer
---@return string
local function read_all(fd, size)
  local data = assert(vim.uv.fs_read(fd, size, 0))
  if #data == size then
    return data -- the usual case: one string, no copy
  end
  local parts = { data }
  local read = #data
  while read < size do
    local part = assert(vim.uv.fs_read(fd, size - read, read))
    if part == "" then
      break
    end
    parts[#parts + 1] = part
    read = read + #part
  end
  return table.concat(parts)
end

local O_NONBLOCK = vim.uv.constants and vim.uv.constants.O_NONBLOCK or 0

--- The bytes of the regular file `path`, whole. Opened without blocking and checked
--- on the open descriptor: a FIFO put in the file's place is refused, never waited on.
---@param path string
---@return string
function M.read_file(path)
  local flags = bit.bor(vim.uv.constants and vim.uv.constants.O_RDONLY or 0, O_NONBLOCK)
  local fd, err = vim.uv.fs_open(path, flags, 0)
  if not fd then
    error(err, 0)
  end
  local ok, data = pcall(function()
    local stat = assert(vim.uv.fs_fstat(fd))
    if stat.type ~= "file" then
      error(("%s is not a regular file"):format(path), 0)
    end
    return read_all(fd, stat.size)
  end)
  vim.uv.fs_close(fd)
  if not ok then
    error(data, 0)
  end
  return data
end

---@param option string a comma-separated option value
---@param item string
---@return boolean
local function has_item(option, item)
  return ("," .. option .. ","):find("," .. item .. ",", 1, true) ~= nil
end

--- The 'fileformat' `:edit` would give `data`, by the global 'fileformats'.
---@param data string
---@return "unix"|"dos"|"mac"
local function detect_fileformat(data)
  local formats = vim.o.fileformats
  local first = vim.split(formats, ",", { plain = true })[1]
  if first ~= "unix" and first ~= "dos" and first ~= "mac" then
    first = "unix"
  end
  if not data:find("\n", 1, true) then
    if has_item(formats, "mac") and data:find("\r", 1, true) then
      return "mac"
    end
    return first
  end
  -- Every line ending in CR LF: dos; any lone LF: unix.
  if has_item(formats, "dos") and data:sub(1, 1) ~= "\n" and not data:find("[^\r]\n") then
    return "dos"
  end
  return has_item(formats, "unix") and "unix" or first
end

--- Whether Neovim reads `data` as UTF-8 (what 'fileencodings' tries before latin1):
--- as its own check does, a lead byte says how many continuation bytes follow
--- (up to five: the old 31-bit form), and nothing else is asked of them. Text with
--- no byte over 127 costs one scan in C; the rest a byte loop (LuaJIT compiles it:
--- about 10 ms for 10 MB).
---@param data string
---@return boolean
function M.is_utf8(data)
  local byte = string.byte
  local i = string.find(data, "[\128-\255]")
  if not i then
    return true
  end
  local len = #data
  while i <= len do
    local c = byte(data, i)
    if c < 0x80 then
      i = i + 1
    else
      local n = c >= 0xC0 and c <= 0xDF and 1
        or c >= 0xE0 and c <= 0xEF and 2
        or c >= 0xF0 and c <= 0xF7 and 3
        or c >= 0xF8 and c <= 0xFB and 4
        or c >= 0xFC and c <= 0xFD and 5
        or nil
      if not n then
        return false
      end
      for k = 1, n do
        local cc = byte(data, i + k)
        if not cc or cc < 0x80 or cc > 0xBF then
          return false
        end
      end
      i = i + n + 1
    end
  end
  return true
end

---@class gemini_companion.diff.FileText
---@field lines string[]
---@field fileformat "unix"|"dos"|"mac"
---@field eol boolean
---@field bomb boolean
---@field fileencoding "utf-8"|"latin1"

--- `data` (a file's bytes) as `:edit` would show it.
---@param data string
---@return gemini_companion.diff.FileText
function M.decode(data)
  local bomb = data:sub(1, 3) == "\239\187\191"
  if bomb then
    data = data:sub(4)
  end
  local fileencoding = "utf-8"
  if not bomb and not M.is_utf8(data) then
    data = vim.iconv(data, "latin1", "utf-8") or data
    fileencoding = "latin1"
  end
  local fileformat = detect_fileformat(data)
  local sep = fileformat == "dos" and "\r\n" or fileformat == "mac" and "\r" or "\n"
  local lines = M.split_lines(data, sep)
  local eol = #lines > 1 and lines[#lines] == ""
  if eol then
    lines[#lines] = nil
  end
  return {
    lines = lines,
    fileformat = fileformat,
    eol = eol or data == "",
    bomb = bomb,
    fileencoding = fileencoding,
  }
end

--- Fill the scratch buffer `buf` with the file at `path` as `:edit` would show it,
--- through the API only. Returns false when there is no such file (a new one).
---@param buf integer
---@param path string
---@return boolean exists
function M.load_file(buf, path)
  local stat = vim.uv.fs_stat(path)
  if stat == nil then
    return false
  end
  if stat.type ~= "file" then
    -- diff.py refused it already; checked again right before the read, which would
    -- block the main loop for ever on a FIFO or a pipe.
    error(("%s is not a regular file"):format(path), 0)
  end
  local text = M.decode(M.read_file(path))
  api.nvim_buf_set_lines(buf, 0, -1, false, text.lines)
  local bo = vim.bo[buf]
  bo.fileformat = text.fileformat
  bo.eol = text.eol
  bo.bomb = text.bomb
  bo.fileencoding = text.fileencoding
  return true
end

--- Run `fn` with every autocommand ignored and the file messages of reading off,
--- restoring both whatever happens.
---@generic T
---@param fn fun(): T
---@return T
local function quietly(fn)
  local eventignore, shortmess = vim.o.eventignore, vim.o.shortmess
  vim.o.eventignore = "all"
  if not shortmess:find("F", 1, true) then
    vim.o.shortmess = shortmess .. "F"
  end
  local ok, result = pcall(fn)
  vim.o.shortmess = shortmess
  vim.o.eventignore = eventignore
  if not ok then
    error(result, 0)
  end
  return result
end

--- A new buffer holding the file at `path` as `:edit` shows it, read by Neovim's own
--- reader (as fast as `:read`), named `name`: no autocommand runs, no modeline is
--- applied, no swap or undo file is touched, and the buffer the old name leaves
--- behind is wiped. Nil when a buffer for that file exists already (the user's, if
--- unloaded, or one of a link to it): it is not loaded or renamed here.
---@param path string a regular file
---@param name string
---@param created integer[] the buffer is added here at once, so a failure removes it
---@return integer?
function M.load_native(path, name, created)
  local before = {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    before[buf] = true
  end
  return quietly(function()
    local buf = vim.fn.bufadd(path)
    if buf <= 0 or before[buf] then
      return nil
    end
    created[#created + 1] = buf
    local bo = vim.bo[buf]
    bo.swapfile = false
    bo.modeline = false
    bo.undofile = false
    bo.undolevels = -1
    vim.fn.bufload(buf)
    api.nvim_buf_set_name(buf, name)
    -- Renaming leaves a buffer of the old name behind (the alternate file's).
    for _, other in ipairs(api.nvim_list_bufs()) do
      if not before[other] and other ~= buf and not api.nvim_buf_is_loaded(other) then
        pcall(api.nvim_buf_delete, other, { force = true })
      end
    end
    bo.buftype = "nofile"
    bo.buflisted = false
    return buf
  end)
end

return M
