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
--- To add or change an option: edit its entry here, then run `scripts/gen-options`
--- (it rewrites types.lua's option classes and the help's option list), and pass
--- the value to Python where it is used (init.lua's `host.start` or the agent's
--- `open`). Kept as data, so the generator reads it without running the plugin.
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
---
--- This file is long because it is the options' documentation; it holds no code.

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

---@param n number
local function positive(n)
  return n > 0
end

---@param n number
local function fraction(n)
  return n > 0 and n <= 1
end

---@param dir string
local function absolute(dir)
  return vim.startswith(dir, "/") or vim.startswith(dir, "~/") or dir == "~"
end

---@param lhs string|false
local function key_sequence(lhs)
  return lhs ~= true and lhs ~= ""
end

local no_key = "must be a key sequence, or false for none"

---@param name string
---@param default string
---@param summary string
---@return gemini_companion.OptionSpec
local function key(name, default, summary)
  return {
    name = name,
    type = "keys",
    default = default,
    valid = key_sequence,
    invalid = no_key,
    summary = summary,
  }
end

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
    {
      name = "context",
      type = "table",
      class = "Context",
      summary = "What the CLI learns about open files, cursor and selection",
      help = "What the CLI learns about open files, the cursor and the selection.",
      fields = {
        {
          name = "debounce_ms",
          type = "number",
          default = 50,
          valid = function(n)
            return n >= 0 and n <= 10000
          end,
          invalid = "must be between 0 and 10000",
          summary = "Quiet time before a change is sent to the CLI, in ms",
          help = "Quiet time, in milliseconds, before a change of open files, cursor or selection is sent to the CLI (0 to 10000).",
        },
        {
          name = "trusted",
          type = "boolean",
          unset = "nothing is sent, the CLI decides",
          summary = "Sent as isTrusted, overriding the CLI's folder trust",
          help = "Sent to the CLI as the workspace's trust, overriding its own folder-trust decision. Not set: nothing is sent and the CLI decides. Set it only for folders you trust.",
        },
      },
    },
    {
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
    },
    {
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
    },
    {
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
    },
    {
      name = "agent",
      type = "table",
      class = "Agent",
      summary = "The agent panel of :GeminiAgent",
      help = "The agent panel (|gemini-companion-agent|).",
      fields = {
        {
          name = "protocol",
          type = "string",
          enum = { "a2a", "acp" },
          -- ACP: the `gemini` CLI users already have, with its own login and settings
          -- (README "Choosing a protocol" says why it is the default).
          default = "acp",
          summary = "The agent's protocol",
          help = "How the panel reaches the agent; see |gemini-companion-agent-protocol| for which to pick.",
        },
        {
          name = "markdown",
          type = "choice",
          enum = { true, false, "treesitter" },
          default = true,
          summary = "How the transcript's markdown is highlighted",
          help = "How the transcript's markdown is highlighted. true: line by line as the answer streams in, code fences in their language (tree-sitter, where the parser is installed) once they close and are on screen; its cost follows what arrives, not the transcript's size. \"treesitter\": Neovim's tree-sitter highlighter (|treesitter-highlight|), complete (setext headings, HTML, every inline rule) but costly while a long answer streams in. false: plain text. Read when the transcript is created; see |gemini-companion-agent-markdown|.",
        },
        {
          name = "prestart",
          type = "boolean",
          default = false,
          summary = "Start the agent once Neovim is idle after start-up",
          help = "Start the agent once Neovim has had no key for a second after start-up (never before the first screen), so that the panel opens on an agent that is ready. It costs the memory of an agent that may not be used: about 145 MiB for `gemini --acp` 0.61.0 and 29 MiB in the plugin's Python host (measured: |gemini-companion-agent-prestart|). It stops with the companion and at |:qa| like any agent; a start that fails says so when the panel opens.",
        },
        {
          name = "a2a",
          type = "table",
          class = "AgentA2A",
          summary = "The A2A agent",
          fields = {
            {
              name = "url",
              type = "string",
              unset = "start cmd",
              valid = function(s)
                return s:match("^https?://") ~= nil
              end,
              invalid = "must be an http:// or https:// URL",
              summary = "Connect to this A2A agent instead of starting one",
              help = "An A2A agent already running to connect to; unset, `cmd` is started.",
            },
            {
              name = "cmd",
              type = "command",
              default = { "gemini-cli-a2a-server" },
              summary = "The A2A server to start: command and arguments",
              help = "The A2A server to start, in the workspace and on 127.0.0.1 only: the command and its arguments.",
            },
            {
              name = "env",
              type = "env",
              default = {},
              summary = "Extra environment variables for it",
            },
          },
        },
        {
          name = "acp",
          type = "table",
          class = "AgentAcp",
          summary = "The ACP agent",
          fields = {
            {
              name = "cmd",
              type = "command",
              default = { "gemini", "--acp" },
              summary = "The ACP agent to start: command and arguments",
              help = "The ACP agent to start in the workspace: the command and its arguments.",
            },
            {
              name = "env",
              type = "env",
              default = {},
              summary = "Extra environment variables for it",
              help = "Extra environment variables for it, added to the environment of the plugin's terminals.",
            },
            {
              name = "auth_method",
              type = "string",
              unset = "the panel names the agent's login methods",
              summary = 'Log in with this of the agent\'s methods when it asks (e.g. "gemini-api-key", "oauth-personal")',
              help = 'When the agent asks for a login, the one of its methods to use (e.g. "gemini-api-key", "oauth-personal"); unset, the panel names them.',
            },
            {
              name = "startup_timeout",
              type = "number",
              default = 60,
              valid = positive,
              invalid = "must be a positive number of seconds",
              summary = "Seconds to wait for the agent to start",
            },
            {
              name = "cancel_timeout",
              type = "number",
              default = 5,
              valid = positive,
              invalid = "must be a positive number of seconds",
              summary = "Seconds a cancelled prompt may take to end before the agent is stopped",
              help = "Seconds a cancelled prompt may take to end before the agent is stopped (the next prompt starts it again).",
            },
          },
        },
        {
          name = "panel",
          type = "table",
          class = "AgentPanel",
          summary = "The panel's windows",
          fields = {
            {
              name = "position",
              type = "string",
              enum = { "right", "left" },
              default = "right",
              summary = "Side of the tab",
            },
            {
              name = "size",
              type = "number",
              default = 0.4,
              valid = positive,
              invalid = "must be positive (a fraction of the width below 1, else columns)",
              summary = "Width: a fraction of the screen below 1, else columns",
            },
            {
              name = "prompt_height",
              type = "integer",
              default = 6,
              valid = function(n)
                return n >= 1
              end,
              invalid = "must be at least 1",
              summary = "Lines of the prompt window",
            },
            {
              name = "insert",
              type = "boolean",
              default = true,
              summary = "Start in Insert mode in the prompt when the panel opens; false: Normal mode",
              help = "Start in Insert mode at the end of the prompt when the panel opens with the cursor in it (|:GeminiAgent|), as chat panels do: the first keys are the prompt's text. `false`: Normal mode.",
            },
          },
        },
        {
          name = "keymaps",
          type = "table",
          class = "AgentKeymaps",
          summary = "Buffer-local keys of the panel; false for none",
          help = "Buffer-local keys of the panel; `false` for none.",
          fields = {
            key("send", "<CR>", "Normal mode, prompt buffer: send the prompt"),
            key("send_insert", "<C-s>", "Insert mode, prompt buffer: send the prompt"),
            key("cancel", "<C-c>", "Normal mode, both buffers: cancel the turn"),
            key("accept", "<LocalLeader>a", "Accept the oldest pending confirmation"),
            key("reject", "<LocalLeader>r", "Reject it"),
            key("close", "q", "Close the panel"),
            key("history_prev", "<C-p>", "Previous prompt"),
            key("history_next", "<C-n>", "Next prompt"),
            key("help", "?", "Normal mode, both buffers: list the panel's keys"),
          },
        },
      },
    },
  },
}
