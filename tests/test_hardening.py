"""Issue 14: hostile paths, a dead host, stalled clients, idle sockets, leaks and
private files. Each test attacks the running plugin as an adversary or an unlucky
user would, and checks what the user and the other clients observe."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import ROOT, Nvim, Sandbox
from mcp_client import SyncMcpConnection, mcp_client

RECORD_MESSAGES = """
_G.messages = {}
local notify = vim.notify
vim.notify = function(m, l, o) table.insert(_G.messages, {m, l}); return notify(m, l, o) end
"""


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


# -- 6. folders and logs are private ---------------------------------------------------


def test_an_own_discovery_folder_left_open_is_made_private(
    nvim_factory: Callable[..., Nvim], sandbox: Sandbox
) -> None:
    sandbox.discovery_dir.mkdir(parents=True)
    os.chmod(sandbox.discovery_dir, 0o777)
    os.chmod(sandbox.discovery_dir.parent, 0o777)
    nvim = nvim_factory()
    state = nvim.wait_running()
    assert Path(state["discovery_file"]).parent == sandbox.discovery_dir
    assert stat.S_IMODE(sandbox.discovery_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(sandbox.discovery_dir.parent.stat().st_mode) == 0o700


def test_a_discovery_folder_that_is_a_symlink_is_refused_with_a_message(
    nvim_factory: Callable[..., Nvim], sandbox: Sandbox, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sandbox.discovery_dir.parent.mkdir(parents=True)
    sandbox.discovery_dir.symlink_to(elsewhere)
    nvim = nvim_factory(extra_init=RECORD_MESSAGES)
    state = nvim.wait_state(lambda s: bool(s.get("error")), 15, "the start to fail")
    assert "not a directory" in state["error"]
    assert list(elsewhere.iterdir()) == []
    messages = [m for m, _ in nvim.lua("return _G.messages")]
    assert any("could not write the discovery file" in m for m in messages), messages


WRITE_AS_OTHER_USER = """
import sys
sys.path.insert(0, sys.argv[1])
from discovery import DiscoveryFile, discovery_dir
directory = discovery_dir({"TMPDIR": sys.argv[2]})
DiscoveryFile(directory, 4242, 4343, "their-token").write("/somewhere")
"""


def python_for_everyone() -> str | None:
    """A Python 3.10+ that another user may run (the venv's may live under /root)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"):
        if os.path.exists(candidate) and os.stat(os.path.realpath(candidate)).st_mode & 0o001:
            version = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info >= (3, 10))"],
                capture_output=True,
                text=True,
                check=False,
            )
            if version.stdout.strip() == "True":
                return candidate
    return None


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as a second user")
def test_two_users_share_a_shared_tmpdir_each_with_a_private_file(tmp_path: Path) -> None:
    from gemini_companion.discovery import DiscoveryFile, discovery_dir

    python = python_for_everyone()
    if python is None:
        pytest.skip("no Python 3.10+ that another user may run")
    world = Path(tempfile.mkdtemp(prefix="gemini-companion-users-", dir="/tmp"))
    os.chmod(world, 0o755)
    # The module, where the second user can read it (this checkout may be private).
    shutil.copy(ROOT / "rplugin/python3/gemini_companion/discovery.py", world / "discovery.py")
    shared = world / "shared-tmp"  # like /tmp: everyone may create, nobody may remove
    shared.mkdir()
    os.chmod(shared, 0o1777)
    directory = discovery_dir({"TMPDIR": str(shared)})
    mine = DiscoveryFile(directory, 1, 2, "my-token")
    mine.write("/work")
    # The shared part works for every user: a second user publishes in the same folder.
    nobody = 65534
    result = subprocess.run(
        [python, "-c", WRITE_AS_OTHER_USER, str(world), str(shared)],
        user=nobody,
        group=nobody,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    theirs = directory / "gemini-ide-server-4242-4343.json"
    for path, uid in ((mine.path, os.getuid()), (theirs, nobody)):
        st = path.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (uid, 0o600)
    for folder in (directory, directory.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o1777
    # The per-user part is private: neither can read or remove the other's file.
    probe = subprocess.run(
        [python, "-c", f"open({str(mine.path)!r}).read()"],
        user=nobody,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert probe.returncode != 0
    remove = subprocess.run(
        [python, "-c", f"import os; os.unlink({str(mine.path)!r})"],
        user=nobody,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert remove.returncode != 0 and mine.path.exists()
    shutil.rmtree(world)


def test_the_log_file_is_private_and_its_lines_are_bounded(nvim: Nvim) -> None:
    log_file = nvim.sandbox.log_file
    assert stat.S_IMODE(log_file.stat().st_mode) == 0o600
    from gemini_companion.logfile import MAX_MESSAGE_CHARS, configure_logging

    path = nvim.sandbox.root / "other.log"
    path.write_text("")
    os.chmod(path, 0o644)
    configure_logging(str(path))
    try:
        logging.getLogger("gemini_companion.test").info("path %s", "/x" * 512 * 1024 + "\nfake")
    finally:
        for handler in logging.getLogger("gemini_companion").handlers:
            handler.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    assert len(lines[0]) < MAX_MESSAGE_CHARS + 200
    assert "more characters" in lines[0]
