--- listOpenBuffers: the files open in Neovim, most recently used first.
local api, fn = vim.api, vim.fn
local paths = require("gemini_companion.tools.paths")

--- Most buffers one answer lists.
local MAX_BUFFERS = 500

--- The workspace folders, resolved (for `inWorkspace`: where the file is, not
--- whether it may be read: an open file always may).
---@return string[]
local function workspace_roots()
  local roots = {}
  for _, dir in ipairs(require("gemini_companion").workspace_dirs()) do
    roots[#roots + 1] = paths.real(dir)
  end
  return roots
end

local function run()
  local current = api.nvim_get_current_buf()
  local roots = workspace_roots()
  -- Language servers by buffer, from one pass over the clients.
  local attached = {}
  for _, client in ipairs(vim.lsp.get_clients()) do
    for buf in pairs(client.attached_buffers or {}) do
      attached[buf] = attached[buf] or {}
      table.insert(attached[buf], client.name)
    end
  end
  local out = {}
  for _, info in ipairs(fn.getbufinfo({ buflisted = 1 })) do
    local path = info.loaded == 1 and paths.buffer_path(info.bufnr)
    if path then
      out[#out + 1] = {
        filePath = path,
        modified = info.changed == 1,
        filetype = vim.bo[info.bufnr].filetype,
        lineCount = info.linecount,
        languageServers = attached[info.bufnr] or {},
        current = info.bufnr == current or nil,
        inWorkspace = paths.under_roots(paths.real(path), roots),
        lastUsed = info.lastused,
        bufnr = info.bufnr,
      }
    end
  end
  -- 'lastused' counts seconds: the current and the alternate buffer break ties.
  local alternate = fn.bufnr("#")
  local function rank(entry)
    return entry.bufnr == current and 2 or entry.bufnr == alternate and 1 or 0
  end
  table.sort(out, function(a, b)
    if a.lastUsed ~= b.lastUsed then
      return a.lastUsed > b.lastUsed
    end
    if rank(a) ~= rank(b) then
      return rank(a) > rank(b)
    end
    return a.bufnr > b.bufnr
  end)
  local shown = {}
  for i = 1, math.min(#out, MAX_BUFFERS) do
    local entry = out[i]
    entry.lastUsed, entry.bufnr = nil, nil
    shown[i] = entry
  end
  local result = { buffers = shown }
  if #out > #shown then
    result.total = #out
    result.truncated = true
    result.note = string.format(
      "showing the %d most recently used of %d open files; readBuffer and getDiagnostics take any of them by path",
      #shown,
      #out
    )
  end
  return result
end

---@type gemini_companion.Tool
return {
  name = "listOpenBuffers",
  description = "The files open in Neovim, most recently used first: path, whether it has"
    .. " unsaved changes, filetype, line count and attached language servers.",
  input_schema = { type = "object", properties = vim.empty_dict(), additionalProperties = false },
  run = run,
}
