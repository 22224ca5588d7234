---@meta
-- Public LuaCATS types of gemini-companion.nvim.

-- Option classes: generated from options.lua by scripts/gen-options; edit there.

---@class (exact) gemini_companion.Options
---@field auto_start? boolean Start the server on VimEnter (default true)
---@field log_level? "debug"|"info"|"warning"|"error" Log file verbosity (default "info")
---@field log_file? string Log file path (unset: stdpath("log") .. "/gemini-companion.log")
---@field keep_alive_seconds? number Interval of SSE keep-alive comments (default 15)
---@field max_request_bytes? integer Largest request body accepted, in bytes (default 64 * 1024 * 1024)
---@field context? gemini_companion.ContextOptions What the CLI learns about open files, cursor and selection
---@field tools? gemini_companion.ToolsOptions Neovim's tools for the agent (diagnostics, buffers, LSP)
---@field diff? gemini_companion.DiffOptions The diff review tab
---@field terminal? gemini_companion.TerminalOptions The Gemini CLI terminal of :Gemini
---@field agent? gemini_companion.AgentOptions The agent panel of :GeminiAgent

---@class (exact) gemini_companion.Config
---@field auto_start boolean
---@field log_level "debug"|"info"|"warning"|"error"
---@field log_file? string
---@field keep_alive_seconds number
---@field max_request_bytes integer
---@field context gemini_companion.ContextConfig
---@field tools gemini_companion.ToolsConfig
---@field diff gemini_companion.DiffConfig
---@field terminal gemini_companion.TerminalConfig
---@field agent gemini_companion.AgentConfig

---@class (exact) gemini_companion.ContextOptions
---@field debounce_ms? number Quiet time before a change is sent to the CLI, in ms (default 50)
---@field trusted? boolean Sent as isTrusted, overriding the CLI's folder trust (unset: nothing is sent, the CLI decides)

---@class (exact) gemini_companion.ContextConfig
---@field debounce_ms number
---@field trusted? boolean

---@class (exact) gemini_companion.ToolsOptions
---@field enabled? boolean Serve Neovim's tools to the agent on the server's /tools endpoint (default true)
---@field lsp_timeout_ms? integer How long a tool waits for the language server, in ms (default 3000)

---@class (exact) gemini_companion.ToolsConfig
---@field enabled boolean
---@field lsp_timeout_ms integer

---@class (exact) gemini_companion.DiffOptions
---@field keymaps? gemini_companion.DiffKeymapsOptions Buffer-local keys in the diff tab's own buffers
---@field allowed_dirs? string[] Folders outside the workspace whose files openDiff may show (default {})

---@class (exact) gemini_companion.DiffConfig
---@field keymaps gemini_companion.DiffKeymapsConfig
---@field allowed_dirs string[]

---@class (exact) gemini_companion.DiffKeymapsOptions
---@field accept? string|false Normal-mode key accepting the proposal (default "<LocalLeader>a")
---@field reject? string|false Normal-mode key rejecting it (default "<LocalLeader>r")

---@class (exact) gemini_companion.DiffKeymapsConfig
---@field accept string|false
---@field reject string|false

---@class (exact) gemini_companion.TerminalOptions
---@field cmd? string The Gemini CLI executable (default "gemini")
---@field args? string[] Arguments given to it (default {})
---@field env? table<string,string> Extra environment variables for it (default {})
---@field position? "right"|"left"|"bottom"|"float"|"tab" Where :Gemini opens it (default "right")
---@field size? number Split width or height: a fraction of the screen below 1, else columns or lines (default 0.4)
---@field float? gemini_companion.FloatOptions The window when position is "float"
---@field auto_insert? boolean Enter terminal mode when the window opens (default true)

---@class (exact) gemini_companion.TerminalConfig
---@field cmd string
---@field args string[]
---@field env table<string,string>
---@field position "right"|"left"|"bottom"|"float"|"tab"
---@field size number
---@field float gemini_companion.FloatConfig
---@field auto_insert boolean

---@class (exact) gemini_companion.FloatOptions
---@field width? number Fraction of the editor's width (default 0.8)
---@field height? number Fraction of the editor's height (default 0.8)
---@field border? string|string[] Border, as in nvim_open_win() (default "rounded")

---@class (exact) gemini_companion.FloatConfig
---@field width number
---@field height number
---@field border string|string[]

---@class (exact) gemini_companion.AgentOptions
---@field protocol? "a2a"|"acp" The agent's protocol (default "acp")
---@field markdown? true|false|"treesitter" How the transcript's markdown is highlighted (default true)
---@field prestart? boolean Start the agent once Neovim is idle after start-up (default false)
---@field a2a? gemini_companion.AgentA2AOptions The A2A agent
---@field acp? gemini_companion.AgentAcpOptions The ACP agent
---@field panel? gemini_companion.AgentPanelOptions The panel's windows
---@field keymaps? gemini_companion.AgentKeymapsOptions Buffer-local keys of the panel; false for none

---@class (exact) gemini_companion.AgentConfig
---@field protocol "a2a"|"acp"
---@field markdown true|false|"treesitter"
---@field prestart boolean
---@field a2a gemini_companion.AgentA2AConfig
---@field acp gemini_companion.AgentAcpConfig
---@field panel gemini_companion.AgentPanelConfig
---@field keymaps gemini_companion.AgentKeymapsConfig

---@class (exact) gemini_companion.AgentA2AOptions
---@field url? string Connect to this A2A agent instead of starting one (unset: start cmd)
---@field cmd? string[] The A2A server to start: command and arguments (default { "gemini-cli-a2a-server" })
---@field env? table<string,string> Extra environment variables for it (default {})

---@class (exact) gemini_companion.AgentA2AConfig
---@field url? string
---@field cmd string[]
---@field env table<string,string>

---@class (exact) gemini_companion.AgentAcpOptions
---@field cmd? string[] The ACP agent to start: command and arguments (default { "gemini", "--acp" })
---@field env? table<string,string> Extra environment variables for it (default {})
---@field auth_method? string Log in with this of the agent's methods when it asks (e.g. "gemini-api-key", "oauth-personal") (unset: the panel names the agent's login methods)
---@field startup_timeout? number Seconds to wait for the agent to start (default 60)
---@field cancel_timeout? number Seconds a cancelled prompt may take to end before the agent is stopped (default 5)

---@class (exact) gemini_companion.AgentAcpConfig
---@field cmd string[]
---@field env table<string,string>
---@field auth_method? string
---@field startup_timeout number
---@field cancel_timeout number

---@class (exact) gemini_companion.AgentPanelOptions
---@field position? "right"|"left" Side of the tab (default "right")
---@field size? number Width: a fraction of the screen below 1, else columns (default 0.4)
---@field prompt_height? integer Lines of the prompt window (default 6)
---@field insert? boolean Start in Insert mode in the prompt when the panel opens; false: Normal mode (default true)

---@class (exact) gemini_companion.AgentPanelConfig
---@field position "right"|"left"
---@field size number
---@field prompt_height integer
---@field insert boolean

---@class (exact) gemini_companion.AgentKeymapsOptions
---@field send? string|false Normal mode, prompt buffer: send the prompt (default "<CR>")
---@field send_insert? string|false Insert mode, prompt buffer: send the prompt (default "<C-s>")
---@field cancel? string|false Normal mode, both buffers: cancel the turn (default "<C-c>")
---@field accept? string|false Accept the oldest pending confirmation (default "<LocalLeader>a")
---@field reject? string|false Reject it (default "<LocalLeader>r")
---@field close? string|false Close the panel (default "q")
---@field history_prev? string|false Previous prompt (default "<C-p>")
---@field history_next? string|false Next prompt (default "<C-n>")
---@field help? string|false Normal mode, both buffers: list the panel's keys (default "?")

---@class (exact) gemini_companion.AgentKeymapsConfig
---@field send string|false
---@field send_insert string|false
---@field cancel string|false
---@field accept string|false
---@field reject string|false
---@field close string|false
---@field history_prev string|false
---@field history_next string|false
---@field help string|false

-- End of the generated option classes.

---@class gemini_companion.Session
---@field id string MCP session id
---@field connected_at number Unix time the session's stream opened

---@class gemini_companion.State
---@field running boolean
---@field loading? boolean true in the state the host announces as it starts: the socket listens and the discovery file is written (a CLI connecting waits until the server accepts it), while pynvim and the server stack still load
---@field port? integer
---@field serving? boolean The server's MCP stack is loaded (on the first connection, or when a terminal opens or the agent panel starts its agent): a CLI connecting now does not wait for it
---@field workspace_path? string
---@field discovery_file? string
---@field started_at? number
---@field sessions gemini_companion.Session[]
---@field env table<string, string> Variables exported to jobs Neovim starts
---@field error? string Why the last start failed
---@field host_lacks? boolean The host could not start for want of packages: the next start runs a fresh host

--- Data of the `User GeminiDiffOpened` event.
---@class gemini_companion.DiffOpenedData
---@field id integer
---@field file_path string The file the proposal is for (exactly as the CLI sent it)
---@field session string MCP session of the CLI that asked
---@field tab integer The diff's tab page
---@field proposal_buf integer
---@field original_buf integer The left buffer: the file's own buffer if it was loaded, else a copy
---@field unsaved boolean The file's buffer had unsaved changes
---@field new_file boolean The file does not exist yet

--- Data of the `User GeminiDiffClosed` event.
---@class gemini_companion.DiffClosedData
---@field id integer
---@field file_path string
---@field session string
---@field result "accepted"|"rejected"|"closed"|"replaced"|"disconnected" closed: by the CLI (closeDiff)

---@class gemini_companion.AgentOption
---@field id string What goes back to the agent (e.g. "proceed_once")
---@field name string
---@field kind "allow_once"|"allow_always"|"reject_once"|"reject_always"|""

---@class gemini_companion.AgentPending
---@field id string The tool call's id
---@field kind "edit"|"exec"|"mcp"|"info"
---@field title string
---@field options gemini_companion.AgentOption[]
---@field file_path? string
---@field command? string
---@field directory? string an exec confirmation: where the command runs
---@field server? string an MCP confirmation: the server
---@field tool? string an MCP confirmation: the tool
---@field description? string
---@field input? { name: string, value: string }[] the tool's arguments naming a command, path or URL that its title does not show
---@field hidden? integer characters of the request its block does not show (a bare accept does not answer it)

---@class gemini_companion.AgentTokens
---@field input_tokens integer
---@field output_tokens integer

--- The agent's state (`require("gemini_companion.agent").state()`, and the data of
--- the `User GeminiAgentUpdate` event).
---@class gemini_companion.AgentState
---@field conversation? integer The conversation it describes (unique while the host runs)
---@field usage? { turn: gemini_companion.AgentTokens, total: gemini_companion.AgentTokens } Tokens, as the agent reported them: the last turn's and the conversation's
---@field protocol? "a2a"|"acp"
---@field dialect? "rfc"|"coder-agent" A2A: the encoding the server speaks
---@field task_id? string A2A
---@field context_id? string A2A
---@field session_id? string ACP
---@field mode? string ACP: the session's current mode (e.g. "default", "autoEdit")
---@field modes? string[] ACP: the modes the agent offers (:GeminiAgentMode)
---@field model? string ACP: the current model
---@field models? string[] ACP: the models the agent offers (:GeminiAgentModel)
---@field sessions? { id: string, title: string, updated_at: number }[] ACP: past sessions, after :GeminiAgentResume
---@field state "stopped"|"starting"|"idle"|"working"|"waiting"|"error"
---@field detail? string Why (an error, "cancelled")
---@field pending gemini_companion.AgentPending[] Oldest first
---@field commands string[] Slash commands; sub-commands as "parent child"
