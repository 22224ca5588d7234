--- The RPC surface between the Lua and the Python side, declared once, as data:
--- every message, its direction and its kind. Nothing loads this at run time; it is
--- the list the two sides are held to (tests/test_rpc_surface.py fails when a side
--- sends or handles a message missing here, or one here is missing on a side).
---
--- Lua -> Python (`to = "python"`): host.lua sends `vim.rpcnotify(channel,
--- "gemini_companion_<name>", ...)`; `__init__.py` handles it with
--- `@pynvim.rpc_export("gemini_companion_<name>")`. All are notifications: Neovim
--- never waits for the Python side (an answer, if any, comes back as a message
--- the other way, named in `answer`).
---
--- Python -> Lua (`to = "lua"`): the `Editor` method `python` (editor.py, over
--- pynvim in nvim_editor.py) calls host.lua's `_receive(name, ...)`, which runs
--- `handlers[name]`. A "notify" is sent without waiting (`_send`), a "request"
--- waits for the handler's return value in a future (`_request`). early.py sends
--- the first `state` by hand, before pynvim loads.
---
--- To add a message: add it here, then to both sides (and to the README's table of
--- the two RPC surfaces).

---@class gemini_companion.RpcMessage
---@field name string
---@field to "python"|"lua"
---@field kind "notify"|"request"
---@field python? string to = "lua": the Editor method that sends it
---@field answer? string the message that answers it, the other way
---@field doc string

---@type gemini_companion.RpcMessage[]
return {
  -- Lua -> Python ------------------------------------------------------------------
  { name = "start", to = "python", kind = "notify", doc = "start the companion server (companion.py StartOptions)" },
  { name = "stop", to = "python", kind = "notify", doc = "stop it and remove its discovery file" },
  { name = "workspace", to = "python", kind = "notify", doc = "the directories Neovim works in changed" },
  { name = "context", to = "python", kind = "notify", doc = "an editor event for the context tracker" },
  { name = "diff_accept", to = "python", kind = "notify", doc = "the user accepted a diff (its text)" },
  { name = "diff_reject", to = "python", kind = "notify", doc = "the user rejected a diff, or closed it" },
  {
    name = "host_info",
    to = "python",
    kind = "notify",
    answer = "host_info",
    doc = "checkhealth's question about the host",
  },
  { name = "tool_result", to = "python", kind = "notify", doc = "the answer to a tool_run" },
  {
    name = "agent",
    to = "python",
    kind = "notify",
    doc = "a request of the agent panel; answered by state and agent_draw",
  },

  -- Python -> Lua ------------------------------------------------------------------
  { name = "state", to = "lua", kind = "notify", python = "publish_state", doc = "the companion's state changed" },
  { name = "notify", to = "lua", kind = "notify", python = "notify", doc = "a message for the user" },
  { name = "stopped", to = "lua", kind = "notify", python = "server_stopped", doc = "the server stopped by itself" },
  {
    name = "host_info",
    to = "lua",
    kind = "notify",
    python = "host_info",
    doc = "the answer to host_info (query 0: the host's hello)",
  },
  { name = "diff_open", to = "lua", kind = "request", python = "open_diff", doc = "open a diff view" },
  { name = "diff_close", to = "lua", kind = "request", python = "close_diff", doc = "close a view without an answer" },
  { name = "diff_finish", to = "lua", kind = "notify", python = "finish_diff", doc = "the answer went out: close" },
  { name = "diff_orphan", to = "lua", kind = "notify", python = "orphan_diff", doc = "the view's CLI is gone" },
  {
    name = "diff_accept_failed",
    to = "lua",
    kind = "request",
    python = "accept_failed",
    doc = "the accepted text cannot be sent; is the view still open?",
  },
  {
    name = "tool_run",
    to = "lua",
    kind = "notify",
    python = "run_tool",
    answer = "tool_result",
    doc = "run a Neovim tool",
  },
  { name = "agent_draw", to = "lua", kind = "request", python = "agent_draw", doc = "draw a batch of the panel" },
  {
    name = "agent_attach_refused",
    to = "lua",
    kind = "notify",
    python = "attach_refused",
    doc = "a prompt's attachment needs the user's consent or cannot be read: ask, or give the text back",
  },
  { name = "buffer_read", to = "lua", kind = "request", python = "read_buffer", doc = "the agent reads a buffer" },
  {
    name = "buffer_apply",
    to = "lua",
    kind = "request",
    python = "apply_buffer_edits",
    doc = "the agent writes a file through its buffer",
  },
}
