-- gemini-companion.nvim: commands and the start-up hook only. Every callback
-- requires its module lazily, so loading this file costs nothing at start-up.
if vim.g.loaded_gemini_companion then
  return
end
vim.g.loaded_gemini_companion = true

-- Neovim 0.10 brought vim.system() and vim.uv, which the plugin is built on.
-- Older: say so once, define nothing.
if vim.fn.has("nvim-0.10") == 0 then
  require("gemini_companion.compat").too_old()
  return
end

local command = vim.api.nvim_create_user_command

command("GeminiCompanionStart", function()
  require("gemini_companion").start()
end, { desc = "Start the Gemini CLI companion server" })

command("GeminiCompanionStop", function()
  require("gemini_companion").stop()
end, { desc = "Stop the Gemini CLI companion server" })

command("GeminiCompanionStatus", function()
  require("gemini_companion").show_status()
end, { desc = "Show the Gemini CLI companion's state" })

command("GeminiAccept", function(args)
  require("gemini_companion.agent").answer_command(true, args.args)
end, {
  nargs = "?",
  complete = function()
    return require("gemini_companion.agent").answer_options(true)
  end,
  desc = "Accept the proposed change (the diff in this tab), or the agent's oldest confirmation [option]",
})

command("GeminiReject", function(args)
  require("gemini_companion.agent").answer_command(false, args.args)
end, {
  nargs = "?",
  complete = function()
    return require("gemini_companion.agent").answer_options(false)
  end,
  desc = "Reject the proposed change (the diff in this tab), or the agent's oldest confirmation",
})

command("GeminiAgent", function(args)
  require("gemini_companion.agent").command(args)
end, {
  nargs = "*",
  range = true,
  complete = function(arglead, cmdline)
    return require("gemini_companion.agent").complete(arglead, cmdline)
  end,
  desc = "Toggle the Gemini agent panel, or send it text (/command runs a slash command)",
})

command("GeminiAgentCancel", function()
  require("gemini_companion.agent").cancel()
end, { desc = "Cancel the Gemini agent's running prompt" })

command("GeminiAgentMode", function(args)
  require("gemini_companion.agent").set_mode(args.args)
end, {
  nargs = 1,
  complete = function(lead)
    return require("gemini_companion.agent").complete_choice("modes", lead)
  end,
  desc = "Switch the Gemini agent's mode (ACP: default, autoEdit, yolo, plan)",
})

command("GeminiAgentModel", function(args)
  require("gemini_companion.agent").set_model(args.args)
end, {
  nargs = 1,
  complete = function(lead)
    return require("gemini_companion.agent").complete_choice("models", lead)
  end,
  desc = "Switch the Gemini agent's model (ACP)",
})

command("GeminiAgentResume", function(args)
  require("gemini_companion.agent").resume(args.args)
end, {
  nargs = "?",
  complete = function(lead)
    return require("gemini_companion.agent").complete_choice("sessions", lead)
  end,
  desc = "Resume a past Gemini agent conversation (ACP session/load)",
})

command("GeminiAgentImage", function(args)
  require("gemini_companion.agent").image(args.args, { drop = args.bang })
end, {
  nargs = "?",
  bang = true,
  complete = "file",
  desc = "Attach an image (PNG, JPEG, GIF, WebP; the clipboard's without a path) to the next prompt; ! drops them",
})

command("GeminiAgentNew", function()
  require("gemini_companion.agent").new()
end, { desc = "Start a new Gemini agent conversation; the current one goes on" })

command("GeminiAgentSwitch", function(args)
  require("gemini_companion.agent").switch(tonumber(args.args) or -1)
end, {
  nargs = 1,
  complete = function()
    return vim.tbl_map(function(c)
      return tostring(c.id)
    end, require("gemini_companion.agent").conversations())
  end,
  desc = "Show the Gemini agent conversation {id} in the panel",
})

command("GeminiAgentConversations", function(args)
  require("gemini_companion.agent.picker").command(args.args)
end, {
  nargs = "?",
  complete = function()
    return { "rename", "delete" }
  end,
  desc = "Pick a live or past Gemini agent conversation (rename, delete: pick one to rename or forget)",
})

command("GeminiAgentRename", function(args)
  require("gemini_companion.agent.picker").rename_shown(args.args)
end, { nargs = 1, desc = "Rename the shown Gemini agent conversation" })

command("GeminiAgentStop", function()
  require("gemini_companion.agent").stop()
end, { desc = "Stop the Gemini agent (and the server the plugin started for it)" })

command("Gemini", function(args)
  require("gemini_companion.terminal").command(args)
end, {
  nargs = "*",
  range = true,
  bang = true,
  desc = "Toggle the Gemini CLI terminal, or send it text / the range as @file#L1-2 (! submits)",
})

command("GeminiCompanionBuild", function()
  -- In the background: the outcome is one message, and the companion starts in
  -- this session once the build is done.
  require("gemini_companion.build").start()
end, { desc = "Build gemini-companion: its Python venv and the choice of its Python" })

local group = vim.api.nvim_create_augroup("gemini_companion_startup", { clear = true })

local function auto_start()
  if require("gemini_companion.config").get().auto_start then
    -- Past the first screen: nothing of ours runs before Neovim has drawn.
    vim.schedule(function()
      -- Installed without its build step (a manager without build hooks, a `dir=`
      -- spec lazy.nvim does not build), and no Python of the user's choosing: the
      -- first start runs the build, in the background.
      local python = require("gemini_companion.python")
      if not python.build_info() and not python.user_host_prog() then
        -- One short line: longer, Neovim asks to "Press ENTER" at 80 columns.
        vim.notify("gemini-companion: first start: running the build step", vim.log.levels.INFO)
        require("gemini_companion.build").start()
        return
      end
      require("gemini_companion").start({ quiet = true })
    end)
  end
end

-- agent.prestart: the agent starts once Neovim is idle, past VimEnter (agent/spare.lua).
local function after_start()
  auto_start()
  if require("gemini_companion.config").get().agent.prestart then
    require("gemini_companion.agent.spare").arm()
  end
end

if vim.v.vim_did_enter == 1 then
  after_start()
else
  vim.api.nvim_create_autocmd("VimEnter", { group = group, once = true, callback = after_start })
end
