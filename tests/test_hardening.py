"""Issue 14: hostile paths, a dead host, stalled clients, idle sockets, leaks and
private files. Each test attacks the running plugin as an adversary or an unlucky
user would, and checks what the user and the other clients observe."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Nvim
from mcp_client import SyncMcpConnection, mcp_client


@pytest.fixture
def conn(nvim: Nvim) -> Iterator[SyncMcpConnection]:
    with mcp_client(nvim.state()["port"], nvim.token()) as connection:
        yield connection


def answers_within(nvim: Nvim, seconds: float) -> bool:
    """Neovim answers ``nvim_eval("1")`` within ``seconds`` (its main loop is free)."""
    answered = threading.Event()

    def ask() -> None:
        if nvim.api.eval("1") == 1:
            answered.set()

    threading.Thread(target=ask, daemon=True).start()
    return answered.wait(seconds)


def ui_snapshot(nvim: Nvim) -> Any:
    return nvim.lua(
        "return {#vim.api.nvim_list_tabpages(), #vim.api.nvim_list_bufs(),"
        " #vim.api.nvim_list_wins()}"
    )


def refused(result: dict[str, Any], expected: str) -> str:
    assert result["isError"] is True, result
    [part] = result["content"]
    assert expected in part["text"], part["text"]
    return str(part["text"])


# -- 1. no path may freeze Neovim ------------------------------------------------------


def test_fifos_pipes_and_devices_are_refused_and_neovim_stays_responsive(
    nvim: Nvim, conn: SyncMcpConnection
) -> None:
    fifo = nvim.sandbox.root / "fifo"
    os.mkfifo(fifo)
    link = nvim.sandbox.root / "link-to-fifo"
    link.symlink_to(fifo)
    before = ui_snapshot(nvim)
    # stdin of `nvim --embed` is the RPC pipe: reading it would block for ever.
    for path in (fifo, link, "/dev/stdin", "/proc/self/fd/0", "/dev/zero"):
        result = conn.call_tool("openDiff", {"filePath": str(path), "newContent": "x\n"})
        refused(result, "not a regular file")
        assert answers_within(nvim, 1.0), f"Neovim froze on {path}"
    assert ui_snapshot(nvim) == before


@pytest.mark.parametrize("char", ["\n", "\r", "\x1b", "\x07", "\x9b"])
def test_paths_with_control_characters_are_refused(
    nvim: Nvim, conn: SyncMcpConnection, char: str
) -> None:
    before = ui_snapshot(nvim)
    path = str(nvim.sandbox.root / f"a{char}b.txt")
    refused(conn.call_tool("openDiff", {"filePath": path, "newContent": "x\n"}), "control")
    refused(conn.call_tool("closeDiff", {"filePath": path}), "control")
    assert ui_snapshot(nvim) == before


# -- 7. outside the workspace needs a reason -------------------------------------------


def test_files_outside_the_workspace_are_refused_unless_open_in_neovim(
    nvim: Nvim, conn: SyncMcpConnection, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("secret\n")
    sneaky = nvim.sandbox.root / "sneaky.txt"
    sneaky.symlink_to(secret)  # inside by name, outside in fact
    before = ui_snapshot(nvim)
    for path in (secret, sneaky, Path("/proc/self/environ"), outside / "new.txt"):
        text = refused(
            conn.call_tool("openDiff", {"filePath": str(path), "newContent": "x\n"}),
            "outside the workspace",
        )
        assert "diff.allowed_dirs" in text
    assert ui_snapshot(nvim) == before
    assert nvim.lua("return #require('gemini_companion.diff').views()") == 0
    # A file the user has open in Neovim is the user's own choice.
    nvim.api.command(f"edit {secret}")
    result = conn.call_tool("openDiff", {"filePath": str(secret), "newContent": "x\n"})
    assert not result.get("isError"), result
    assert nvim.lua("return #require('gemini_companion.diff').views()") == 1


def test_allowed_dirs_lets_diffs_show_files_of_more_folders(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "f.txt").write_text("old\n")
    nvim = nvim_factory(setup={"diff": {"allowed_dirs": [str(extra)]}})
    nvim.wait_running()
    with mcp_client(nvim.state()["port"], nvim.token()) as conn:
        result = conn.call_tool("openDiff", {"filePath": str(extra / "f.txt"), "newContent": "x"})
        assert not result.get("isError"), result
        refused(
            conn.call_tool("openDiff", {"filePath": str(tmp_path / "g.txt"), "newContent": "x"}),
            "outside the workspace",
        )


def test_allowed_dirs_must_be_absolute(nvim_factory: Callable[..., Nvim]) -> None:
    nvim = nvim_factory(setup={"auto_start": False})
    error = nvim.lua(
        "local ok, err = pcall(require('gemini_companion').setup,"
        " {diff = {allowed_dirs = {'relative/dir'}}}) return err"
    )
    assert "diff.allowed_dirs[1]" in error and "absolute" in error
