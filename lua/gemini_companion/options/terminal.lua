--- The options of `terminal`: the Gemini CLI terminal of :Gemini. A part of the
--- option schema (options.lua, which says what an entry holds).

local checks = require("gemini_companion.options.checks")
local fraction = checks.fraction
local positive = checks.positive

---@type gemini_companion.OptionSpec
return {
  name = "terminal",
  type = "table",
  class = "Terminal",
  summary = "The Gemini CLI terminal of :Gemini",
  help = "The CLI that |:Gemini| runs.",
  fields = {
    {
      name = "cmd",
      type = "string",
      default = "gemini",
      valid = function(s)
        return s ~= ""
      end,
      invalid = "must not be empty",
      summary = "The Gemini CLI executable",
      help = "The Gemini CLI executable (a name on PATH or a path).",
    },
    {
      name = "args",
      type = "strings",
      default = {},
      summary = "Arguments given to it",
      help = 'Arguments given to it, e.g. `{ "--model", "..." }`.',
    },
    {
      name = "env",
      type = "env",
      default = {},
      summary = "Extra environment variables for it",
      help = 'Extra environment variables for it. The CLI gets Neovim\'s environment without the variables that mark a CI run (`CI`, `CONTINUOUS_INTEGRATION`, `CI_*`): with them the CLI refuses its interactive UI and exits at once ("No input provided via stdin"). Set one here to pass it all the same.',
    },
    {
      name = "position",
      type = "string",
      enum = { "right", "left", "bottom", "float", "tab" },
      default = "right",
      summary = "Where :Gemini opens it",
      help = "Where it opens.",
    },
    {
      name = "size",
      type = "number",
      default = 0.4,
      valid = positive,
      invalid = "must be positive (a fraction of the screen below 1, else columns or lines)",
      summary = "Split width or height: a fraction of the screen below 1, else columns or lines",
      help = "Width of a side split or height of a bottom split: a fraction of the screen when below 1, else columns or lines.",
    },
    {
      name = "float",
      type = "table",
      class = "Float",
      summary = 'The window when position is "float"',
      help = "The floating window.",
      fields = {
        {
          name = "width",
          type = "number",
          default = 0.8,
          valid = fraction,
          invalid = "must be a fraction in (0, 1]",
          summary = "Fraction of the editor's width",
        },
        {
          name = "height",
          type = "number",
          default = 0.8,
          valid = fraction,
          invalid = "must be a fraction in (0, 1]",
          summary = "Fraction of the editor's height",
        },
        {
          name = "border",
          type = "border",
          default = "rounded",
          summary = "Border, as in nvim_open_win()",
          help = "Border, as in |nvim_open_win()|.",
        },
      },
    },
    {
      name = "auto_insert",
      type = "boolean",
      default = true,
      summary = "Enter terminal mode when the window opens",
      help = "Enter |Terminal-mode| when the window opens.",
    },
  },
}
