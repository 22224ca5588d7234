--- Lines of files that are not open, read from disk without stalling or changing Neovim.
---
--- A language server names files anywhere. Loading them as buffers (what
--- `vim.lsp.util.locations_to_items` does) adds a buffer for each, runs `BufReadCmd`
--- autocommands for other URI schemes, and blocks Neovim for ever on a FIFO. Here
--- a file is opened in libuv's thread pool with O_NONBLOCK, read only if `fstat`
--- says it is a regular file, and only its first `max_bytes`; the whole call reads
--- at most `max_total` bytes. Neovim's main loop only splits the lines asked for.
local M = {}

local uv = vim.uv or vim.loop

M.max_bytes = 2 * 1024 * 1024
M.max_total = 16 * 1024 * 1024

local O_NONBLOCK = uv.constants and uv.constants.O_NONBLOCK
local O_RDONLY = uv.constants and uv.constants.O_RDONLY or 0
local OPEN_FLAGS = O_NONBLOCK and bit.bor(O_RDONLY, O_NONBLOCK) or "r"

--- The lines `rows` (0-based) of `data`, as far as it holds them.
---@param data string
---@param rows integer[] sorted
---@return table<integer, string>
local function pick(data, rows)
  local out, row, pos = {}, 0, 1
  for _, wanted in ipairs(rows) do
    while row < wanted do
      local nl = data:find("\n", pos, true)
      if not nl then
        return out
      end
      pos, row = nl + 1, row + 1
    end
    local nl = data:find("\n", pos, true)
    if not nl and pos > #data then
      return out
    end
    out[wanted] = data:sub(pos, (nl or #data + 1) - 1):gsub("\r$", "")
  end
  return out
end

--- Read the lines `rows` (0-based, sorted) of each path; `done(lines)` on the main
--- loop once all are read or refused: `lines[path][row]`, absent for what could not
--- be read (not a regular file, too big a read, gone).
---@param wanted table<string, integer[]>
---@param done fun(lines: table<string, table<integer, string>>)
function M.read_lines(wanted, done)
  local lines, pending, budget = {}, 1, M.max_total
  local function one_done()
    pending = pending - 1
    if pending == 0 then
      vim.schedule(function()
        done(lines)
      end)
    end
  end
  for path, rows in pairs(wanted) do
    pending = pending + 1
    uv.fs_open(path, OPEN_FLAGS, 0, function(open_err, fd)
      if open_err or not fd then
        return one_done()
      end
      uv.fs_fstat(fd, function(stat_err, stat)
        local size = stat and math.min(stat.size, M.max_bytes, budget) or 0
        if stat_err or not stat or stat.type ~= "file" or size <= 0 then
          uv.fs_close(fd, one_done)
          return
        end
        budget = budget - size
        uv.fs_read(fd, size, 0, function(read_err, data)
          if not read_err and data then
            lines[path] = pick(data, rows)
          end
          uv.fs_close(fd, one_done)
        end)
      end)
    end)
  end
  one_done()
end

return M
