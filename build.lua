-- lazy.nvim runs this file after installing or updating the plugin (it does so
-- for any plugin with a build.lua at its root). packer and vim-plug run the same
-- step through :GeminiCompanionBuild; see :help gemini-companion-install.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
if not vim.tbl_contains(vim.api.nvim_list_runtime_paths(), root) then
  vim.opt.rtp:prepend(root)
end
require("gemini_companion.build").run()
