--- The options of `diff`: the diff review tab. A part of the option schema
--- (options.lua, which says what an entry holds).

local checks = require("gemini_companion.options.checks")
local absolute = checks.absolute
local key = checks.key

---@type gemini_companion.OptionSpec
return {
  name = "diff",
  type = "table",
  class = "Diff",
  summary = "The diff review tab",
  fields = {
    {
      name = "keymaps",
      type = "table",
      class = "DiffKeymaps",
      summary = "Buffer-local keys in the diff tab's own buffers",
      help = "Normal-mode keys in a diff tab for |:GeminiAccept| and |:GeminiReject|; `false` for no key.",
      fields = {
        key("accept", "<LocalLeader>a", "Normal-mode key accepting the proposal"),
        key("reject", "<LocalLeader>r", "Normal-mode key rejecting it"),
      },
    },
    {
      name = "allowed_dirs",
      type = "strings",
      default = {},
      item_valid = absolute,
      item_invalid = "must be an absolute path",
      summary = "Folders outside the workspace whose files openDiff may show",
      help = "Absolute folders (`~` allowed) outside the workspace whose files the agent's diffs may show. Without them a diff of a file outside the workspace folders is refused unless the file is open in a Neovim buffer. `{ \"/\" }` allows any file. The ACP agent's file reads and writes, what a prompt attaches (|gemini-companion-agent-context|) and Neovim's tools (|gemini-companion-tools|) follow it too.",
    },
  },
}
