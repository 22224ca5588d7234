-- lazy.nvim runs this file after installing or updating the plugin (it does so
-- for any plugin with a build.lua at its root), inside a task of its own: the
-- build runs in the background and its steps show as the task's progress.
-- packer and vim-plug run the same build through :GeminiCompanionBuild; see
-- :help gemini-companion-install.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
if not vim.tbl_contains(vim.api.nvim_list_runtime_paths(), root) then
  vim.opt.rtp:prepend(root)
end
local build = require("gemini_companion.build")

if not coroutine.running() or not coroutine.isyieldable() then
  -- Not in a task: wait for it (Neovim's event loop keeps running).
  return build.run()
end

-- In lazy.nvim's task: a yielded string is shown as progress. lazy.nvim's own
-- async runner (lazy.async) can suspend the task until our callbacks wake it;
-- another runner resumes it on its own schedule.
local ok_async, lazy_async = pcall(require, "lazy.async")
local task = ok_async and type(lazy_async.running) == "function" and lazy_async.running() or nil
local messages = {}
local function wake()
  if task then
    task:resume()
  end
end
local state = build.start({
  progress = function(msg)
    messages[#messages + 1] = msg
    wake()
  end,
  on_done = wake,
})
while not state.done or #messages > 0 do
  if #messages > 0 then
    coroutine.yield(table.remove(messages, 1))
  elseif task then
    task:suspend()
  else
    coroutine.yield()
  end
end
if not state.ok then
  error(state.message, 0)
end
