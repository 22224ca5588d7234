---@meta
-- Public LuaCATS types of gemini-companion.nvim.

---@class (exact) gemini_companion.Options
---@field auto_start? boolean Start the server on VimEnter (default true)
---@field log_level? "debug"|"info"|"warning"|"error" Log file verbosity (default "info")
---@field log_file? string Log file path (default stdpath("log") .. "/gemini-companion.log")
---@field keep_alive_seconds? number Interval of SSE keep-alive comments (default 15)
---@field max_request_bytes? integer Largest request body accepted (default 64 MiB)

---@class (exact) gemini_companion.Config
---@field auto_start boolean
---@field log_level "debug"|"info"|"warning"|"error"
---@field log_file? string
---@field keep_alive_seconds number
---@field max_request_bytes integer

---@class gemini_companion.Session
---@field id string MCP session id
---@field connected_at number Unix time the session's stream opened

---@class gemini_companion.State
---@field running boolean
---@field port? integer
---@field workspace_path? string
---@field discovery_file? string
---@field started_at? number
---@field sessions gemini_companion.Session[]
---@field env table<string, string> Variables exported to jobs Neovim starts
---@field error? string Why the last start failed
