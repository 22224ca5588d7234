"""The diff tab's bars say what they say whole (issue 22 item 6): over a buffer with
unsaved changes, the left side's note fits its window rather than being cut
mid-word (``<fer, unsaved changes: ...``). A real headless Neovim, the diff opened
by IDE mode's ``openDiff`` over the companion's MCP endpoint."""

from __future__ import annotations

from pathlib import Path

from harness import Nvim
from mcp_client import SyncMcpConnection
from test_diff import conn, ok, open_diff, target, views  # noqa: F401 (fixtures)

WHOLE_NOTES = (
    "(your buffer, unsaved changes: accepting writes the proposal to disk and keeps them here)",
    "(unsaved changes: kept here on accept)",
    "(unsaved changes kept)",
)


def shown(nvim: Nvim, win: int) -> str:
    return str(
        nvim.lua(
            "local w = ... return vim.api.nvim_eval_statusline(vim.wo[w].winbar,"
            " {winid = w, use_winbar = true}).str",
            win,
        )
    )


def test_the_unsaved_buffers_note_fits_its_window_whole(
    nvim: Nvim,
    conn: SyncMcpConnection,  # noqa: F811
    target: Path,  # noqa: F811
) -> None:
    nvim.api.command(f"edit {target}")
    nvim.api.command("normal! Go# my unsaved line")
    ok(open_diff(conn, target, "def hello():\n    return 2\n"))
    [view] = views(nvim)
    width = nvim.lua("return vim.api.nvim_win_get_width(...)", view["original_win"])
    assert width < 60  # half of an 80-column screen: the long note cannot fit
    bar = shown(nvim, view["original_win"])
    # The note is whole (the file name gives way first, cut from its start).
    assert "(" in bar, bar
    note = bar[bar.rindex("(") :].rstrip()
    assert note in WHOLE_NOTES, bar
    assert bar.startswith(" Current: "), bar
