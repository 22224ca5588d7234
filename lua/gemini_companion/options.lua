--- The option schema: every option of `setup()`, in one place.
---
--- Everything else about an option comes from its entry here:
--- - its default and its validation (config.lua reads this table at `setup()`),
--- - its LuaCATS field (the generated part of types.lua),
--- - the help's defaults block and its entry under |gemini-companion-config|
---   (the generated part of doc/gemini-companion.txt),
--- - the Python side's value: Lua sends the merged configuration, and Python keeps
---   no default of its own (tests/test_options.py checks all of this).
---
--- This file holds the top-level options and lists the groups in their order;
--- each group (a `table` option) is a file of its own under options/, and
--- options/checks.lua holds the checks several of them share.
---
--- To add or change an option: edit its entry (here or in its group's file), then
--- run `scripts/gen-options` (it rewrites types.lua's option classes and the
--- help's option list), and pass the value to Python where it is used (init.lua's
--- `host.start` or the agent's `open`). Kept as data, so the generator reads it
--- without running the plugin.
---
--- An entry: `name`, `type` (below), `default` (nil: unset means `unset`),
--- `summary` (one line: types.lua), `help` (the help's text; the summary when
--- absent), and for checks beyond the type: `enum` (the allowed strings), `valid`
--- (a predicate) with `invalid` (the message when it fails), `item_valid`/
--- `item_invalid` (each item of a list). A `table` has `fields` and `class` (the
--- stem of its LuaCATS classes: `<class>Options`, `<class>Config`).
---
--- Types: "boolean", "number", "integer" (a number, shown as an integer), "string",
--- "keys" (a key sequence, or false for none), "command" (a non-empty list: a
--- command and its arguments), "strings" (a list of strings), "env" (a map of
--- environment variables), "border" (as in nvim_open_win()), "choice" (one of
--- `enum`, which may hold booleans as well as strings), "table".

---@class gemini_companion.OptionSpec
---@field name string
---@field type "boolean"|"number"|"integer"|"string"|"keys"|"command"|"strings"|"env"|"border"|"choice"|"table"
---@field default? any
---@field unset? string What an option without a default means when unset
---@field shown? string The default as the defaults block writes it (e.g. "64 * 1024 * 1024")
---@field summary string
---@field help? string
---@field enum? (string|boolean)[]
---@field valid? fun(value: any): boolean
---@field invalid? string
---@field item_valid? fun(value: any): boolean
---@field item_invalid? string
---@field fields? gemini_companion.OptionSpec[]
---@field class? string

local positive = require("gemini_companion.options.checks").positive

---@type gemini_companion.OptionSpec
return {
  name = "",
  type = "table",
  class = "",
  summary = "The options of setup()",
  fields = {
    {
      name = "auto_start",
      type = "boolean",
      default = true,
      summary = "Start the server on VimEnter",
      help = "Start the server after start-up (past |VimEnter|, so it never delays the first screen).",
    },
    {
      name = "log_level",
      type = "string",
      enum = { "debug", "info", "warning", "error" },
      default = "info",
      summary = "Log file verbosity",
      help = "What the log file records.",
    },
    {
      name = "log_file",
      type = "string",
      unset = 'stdpath("log") .. "/gemini-companion.log"',
      summary = "Log file path",
      help = "The log file.",
    },
    {
      name = "keep_alive_seconds",
      type = "number",
      default = 15,
      valid = positive,
      invalid = "must be positive",
      summary = "Interval of SSE keep-alive comments",
      help = "Interval of keep-alive comments on idle CLI streams.",
    },
    {
      name = "max_request_bytes",
      type = "integer",
      default = 64 * 1024 * 1024,
      shown = "64 * 1024 * 1024",
      valid = function(n)
        return n >= 1024
      end,
      invalid = "must be at least 1024",
      summary = "Largest request body accepted, in bytes",
      help = "Larger request bodies (64 MiB by default) are refused (HTTP 413).",
    },
    require("gemini_companion.options.context"),
    require("gemini_companion.options.tools"),
    require("gemini_companion.options.diff"),
    require("gemini_companion.options.terminal"),
    require("gemini_companion.options.agent"),
  },
}
