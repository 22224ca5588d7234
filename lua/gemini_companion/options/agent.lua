--- The options of `agent`: the agent panel of :GeminiAgent and the agents it
--- starts or reaches (A2A, ACP). A part of the option schema (options.lua, which
--- says what an entry holds).

local checks = require("gemini_companion.options.checks")
local key = checks.key
local positive = checks.positive

---@type gemini_companion.OptionSpec
return {
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
      help = "Start the agent once Neovim has had no key for a second after start-up (never before the first screen), so that the panel opens on an agent that is ready. It costs the memory of an agent that may not be used: about 225 MiB for `gemini --acp` 0.61.0 and 30 MiB in the plugin's Python host (measured: |gemini-companion-agent-prestart|). It stops with the companion and at |:qa| like any agent; a start that fails says so when the panel opens.",
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
          help = "Seconds a cancelled prompt may take to end before the agent is stopped (the next prompt starts it again). When other conversations use it, it is not stopped: that turn is left to it and the conversation goes on in a new session of the same agent.",
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
}
