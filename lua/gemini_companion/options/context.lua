--- The options of `context`: what the CLI learns about open files, the cursor and
--- the selection. A part of the option schema (options.lua, which says what an
--- entry holds).

---@type gemini_companion.OptionSpec
return {
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
}
