--- The buffers of a file, and reloading them once the Gemini CLI has written it
--- (after an accept in the diff tab, the CLI writes the file itself).
local M = {}

--- Loaded, file-backed buffers showing `path` (by name, else by resolved path).
---@param path string
---@return integer[]
function M.buffers_of(path)
  local found = {}
  local real = vim.uv.fs_realpath(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= "" and (name == path or (real ~= nil and vim.uv.fs_realpath(name) == real)) then
        found[#found + 1] = buf
      end
    end
  end
  return found
end

--- After an accept the CLI writes the file itself: reload every unmodified buffer of
--- it once the write lands, without a prompt; a buffer with unsaved changes keeps
--- them (the user is told how to resolve it).
---@param path string
function M.when_written(path)
  local watcher = vim.uv.new_fs_event()
  local debounce = vim.uv.new_timer()
  local deadline = vim.uv.new_timer()
  if not watcher or not debounce or not deadline then
    return
  end
  local name = vim.fs.basename(path)
  local warned = false
  local function stop()
    for _, handle in ipairs({ watcher, debounce, deadline }) do
      if not handle:is_closing() then
        handle:close()
      end
    end
  end
  local function reload()
    if watcher:is_closing() then
      return
    end
    for _, buf in ipairs(M.buffers_of(path)) do
      if not vim.bo[buf].modified then
        local local_autoread = vim.bo[buf].autoread
        vim.api.nvim_buf_call(buf, function()
          vim.bo[buf].autoread = true -- reload without the W11 prompt
          vim.cmd("silent! checktime " .. buf)
          if local_autoread == nil then
            vim.cmd("set autoread<")
          else
            vim.bo[buf].autoread = local_autoread
          end
        end)
      elseif not warned then
        warned = true
        vim.notify(
          ("Gemini CLI wrote %s; your buffer %d has unsaved changes and was not reloaded."):format(
            vim.fn.fnamemodify(path, ":~:."),
            buf
          ) .. " :e! loads the new file (dropping your changes), :w writes yours over it.",
          vim.log.levels.WARN,
          { title = "Gemini companion" }
        )
      end
    end
    deadline:start(2000, 0, stop) -- a little longer, for a write in several steps
  end
  local ok = pcall(watcher.start, watcher, vim.fs.dirname(path), {}, function(err, file)
    if not err and (file == nil or file == name) then
      debounce:start(20, 0, vim.schedule_wrap(reload))
    end
  end)
  if not ok then
    stop()
    return
  end
  deadline:start(60000, 0, stop)
end

return M
