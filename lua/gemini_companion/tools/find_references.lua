--- findReferences: every place the symbol at a position is used, asked of the language server.
local schema = require("gemini_companion.tools.lsp").position_schema

---@type gemini_companion.Tool
return {
  name = "findReferences",
  description = "Every place the symbol at a position is used, asked of the language"
    .. " server attached in Neovim. The file must be open in Neovim.",
  input_schema = schema({
    includeDeclaration = { type = "boolean", description = "Include the declaration itself (default false)" },
  }),
  async = true,
  run = function(args, call)
    require("gemini_companion.tools.lsp").position_request(args, call, "textDocument/references", "references")
  end,
}
