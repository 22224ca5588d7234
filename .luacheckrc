-- luacheck configuration: Neovim's LuaJIT with the `vim` global.
std = "luajit"
-- `vim` itself is extended by the plugin (vim.g, vim.env): a writable global.
globals = { "vim" }
-- StyLua (.stylua.toml) keeps code within 120 columns; what it cannot break, long
-- message strings, is left alone rather than split by hand.
max_line_length = false
-- `self` is often unused in methods kept for a uniform interface.
self = false
exclude_files = { "tests/interop/node_modules/", "tools/node_modules/", ".venv/", ".demo/", ".cache/" }
