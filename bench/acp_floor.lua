-- The floor under any ACP panel (bench/panel_cost.py): the barest client Neovim
-- can be. `open()` spawns the agent and sends `initialize` before anything else,
-- then `session/new` (no MCP servers); `prompt()` sends `session/prompt` and each
-- `agent_message_chunk` is appended to one buffer shown in a window that follows
-- its end. No markdown, no state, no error handling: what a panel cannot do with less.
local M = { session = nil, done = 0 }
local stdin, stdout = vim.uv.new_pipe(), vim.uv.new_pipe()
local next_id, waiting, pending = 0, {}, ""
local buf, win

local function send(method, params, on_answer)
  next_id = next_id + 1
  waiting[next_id] = on_answer
  stdin:write(vim.json.encode({ jsonrpc = "2.0", id = next_id, method = method, params = params }) .. "\n")
end

local function append(text)
  local last = vim.api.nvim_buf_line_count(buf)
  local col = #vim.api.nvim_buf_get_lines(buf, last - 1, last, false)[1]
  vim.api.nvim_buf_set_text(buf, last - 1, col, last - 1, col, vim.split(text, "\n", { plain = true }))
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
end

local function receive(line)
  local message = vim.json.decode(line)
  if message.method == "session/update" and message.params.update.sessionUpdate == "agent_message_chunk" then
    append(message.params.update.content.text)
  elseif message.id and not message.method and waiting[message.id] then
    waiting[message.id](message.result)
  end
end

function M.open(cmd)
  vim.uv.spawn(cmd[1], { args = vim.list_slice(cmd, 2), stdio = { stdin, stdout, nil }, cwd = vim.fn.getcwd() })
  local caps = { fs = { readTextFile = false, writeTextFile = false } }
  send("initialize", { protocolVersion = 1, clientCapabilities = caps }, function()
    send("session/new", { cwd = vim.fn.getcwd(), mcpServers = {} }, function(result)
      M.session = result.sessionId
    end)
  end)
  stdout:read_start(function(_, data)
    if not data then
      return
    end
    local lines = vim.split(pending .. data, "\n", { plain = true })
    pending = table.remove(lines)
    vim.schedule(function()
      for _, l in ipairs(lines) do
        receive(l)
      end
    end)
  end)
  buf = vim.api.nvim_create_buf(false, true)
  vim.cmd("botright vsplit")
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
end

function M.prompt(text)
  send("session/prompt", { sessionId = M.session, prompt = { { type = "text", text = text } } }, function()
    M.done = M.done + 1
  end)
end

function M.lines(n)
  return vim.api.nvim_buf_get_lines(buf, -n, -1, false)
end

return M
