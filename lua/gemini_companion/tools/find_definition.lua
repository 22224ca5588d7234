--- findDefinition: where the symbol at a position is defined, asked of the language server.
local schema = require("gemini_companion.tools.lsp").position_schema

---@type gemini_companion.Tool
return {
  name = "findDefinition",
  description = "Where the symbol at a position is defined, asked of the language server"
    .. " attached in Neovim. The file must be open in Neovim.",
  input_schema = schema(),
  async = true,
  run = function(args, call)
    require("gemini_companion.tools.lsp").position_request(args, call, "textDocument/definition", "definition")
  end,
}
