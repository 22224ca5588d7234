--- documentSymbols: the outline of a file, from the language server.
local lsp = require("gemini_companion.tools.lsp")
local paths = require("gemini_companion.tools.paths")

---@param args { filePath: string }
---@param call gemini_companion.ToolCall
local function run(args, call)
  local buf = paths.open_buffer(args.filePath, call)
  local clients = lsp.clients_for(buf, "textDocument/documentSymbol", "document symbols")
  local symbol_kinds = vim.lsp.protocol.SymbolKind
  lsp.request_all(
    buf,
    clients,
    "textDocument/documentSymbol",
    function()
      return { textDocument = { uri = vim.uri_from_bufnr(buf) } }
    end,
    call.reply,
    function(results, finish)
      local out, total = {}, 0
      ---@param list table[]
      ---@param into table[]
      local function walk(list, into)
        for _, s in ipairs(list) do
          total = total + 1
          if total <= lsp.max_locations then
            local range = s.range or (s.location and s.location.range)
            local entry = {
              name = s.name,
              kind = symbol_kinds[s.kind] or tostring(s.kind),
              detail = s.detail ~= "" and s.detail or nil,
              containerName = s.containerName,
              line = range and range.start.line + 1,
              endLine = range and range["end"].line + 1,
            }
            into[#into + 1] = entry
            if s.children and #s.children > 0 then
              entry.children = {}
              walk(s.children, entry.children)
            end
          end
        end
      end
      if results[1] then
        walk(results[1].result, out)
      end
      local result = { filePath = paths.buffer_path(buf), symbols = out, total = total }
      if total > lsp.max_locations then
        result.truncated = true
        result.note = string.format("showing the first %d of %d symbols, in file order", lsp.max_locations, total)
      end
      finish(true, result)
    end
  )
end

---@type gemini_companion.Tool
return {
  name = "documentSymbols",
  description = "The outline of a file (classes, functions, variables with their lines),"
    .. " from the language server attached in Neovim. The file must be open.",
  input_schema = {
    type = "object",
    properties = {
      filePath = { type = "string", description = "Path of the file: absolute, or relative to the workspace root" },
    },
    required = { "filePath" },
    additionalProperties = false,
  },
  async = true,
  run = run,
}
