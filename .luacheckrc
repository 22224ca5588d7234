-- luacheck configuration: Neovim's LuaJIT with the `vim` global.
std = "luajit"
-- `vim` itself is extended by the plugin (vim.g, vim.env): a writable global.
globals = { "vim" }
max_line_length = 120
-- `self` is often unused in methods kept for a uniform interface.
self = false
exclude_files = { "tests/interop/node_modules/", "tools/node_modules/", ".venv/", ".demo/" }
