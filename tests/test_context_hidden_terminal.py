"""The context follows the window the user is in, whatever terminals other plugins
open in hidden buffers (issue 32, item 6): a task runner's
``nvim_buf_call(buf, function() vim.fn.termopen(...) end)`` on a buffer no window
shows fires TermOpen (and sets 'buftype') with that buffer current for a moment,
and no BufEnter when the user's window is current again. Observed with a real MCP
client on the plugin's server."""

from __future__ import annotations

from harness import Nvim
from test_context import client, cursor, is_active, next_update, wait_update, write

# What task runners do: a terminal job in a buffer no window shows.
HIDDEN_TERMINAL = """
local buf = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_call(buf, function()
  vim.fn.termopen({ 'cat' })
end)
return buf
"""


def test_cursor_moves_reach_the_client_after_a_terminal_opens_in_a_hidden_buffer(
    nvim: Nvim,
) -> None:
    project = nvim.sandbox.root / "project"
    project.mkdir()
    path = write(project / "code.py", "".join(f"line {n}\n" for n in range(1, 120)))
    nvim.api.command(f"edit {path}")
    with client(nvim) as conn:
        wait_update(conn, is_active(path, cursor=cursor(1, 1)), "the file at 1:1")
        for _ in range(3):
            nvim.lua(HIDDEN_TERMINAL)
        assert nvim.lua("return vim.api.nvim_buf_get_name(0)") == str(path)
        for line in range(2, 12):
            nvim.api.input("j")
            next_update(conn, is_active(path, cursor=cursor(line, 1)), f"the cursor on {line}")
