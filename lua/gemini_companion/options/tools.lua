--- The options of `tools`: Neovim's tools for the agent. A part of the option
--- schema (options.lua, which says what an entry holds).

---@type gemini_companion.OptionSpec
return {
  name = "tools",
  type = "table",
  class = "Tools",
  summary = "Neovim's tools for the agent (diagnostics, buffers, LSP)",
  help = "Neovim's tools for the agent (|gemini-companion-tools|).",
  fields = {
    {
      name = "enabled",
      type = "boolean",
      default = true,
      summary = "Serve Neovim's tools to the agent on the server's /tools endpoint",
      help = "Serve the tools on the server's `/tools` endpoint, and link the Gemini CLI extension in the build step.",
    },
    {
      name = "lsp_timeout_ms",
      type = "integer",
      default = 3000,
      valid = function(n)
        return n >= 1 and n <= 60000
      end,
      invalid = "must be between 1 and 60000",
      summary = "How long a tool waits for the language server, in ms",
      help = "How long a tool waits for the language server before it answers an error (1 to 60000 ms).",
    },
  },
}
