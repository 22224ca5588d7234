"""The agent's file reads and writes through Neovim's buffers (ACP ``fs/*``).

files.py drives a real headless Neovim here, through host.lua's messages
(``buffer_read``/``buffer_apply``) as the Python host does: what the agent reads of a
modified buffer, what a write leaves in the buffer, its undo history and on disk.
merge.py's three-way merge is tested on its own first.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from gemini_companion.agent.files import (
    MAX_READ_BYTES,
    EditorFiles,
    FileAccessError,
    select_lines,
)
from gemini_companion.agent.merge import MergeConflictError, merge
from gemini_companion.paths import PathPolicy
from harness import Nvim

# -- merge.py ---------------------------------------------------------------------------


def test_merge_takes_the_agents_text_when_the_user_changed_nothing() -> None:
    assert merge(["a", "b"], ["a", "b"], ["a", "B", "c"]) == ["a", "B", "c"]


def test_merge_keeps_the_users_edits_elsewhere_in_the_file() -> None:
    base = ["one", "two", "three", "four", "five"]
    ours = ["ONE (user)", "two", "three", "four", "five", "six (user)"]
    theirs = ["one", "two", "THREE (agent)", "four", "five"]
    assert merge(base, ours, theirs) == [
        "ONE (user)",
        "two",
        "THREE (agent)",
        "four",
        "five",
        "six (user)",
    ]


def test_merge_refuses_when_both_changed_the_same_line() -> None:
    with pytest.raises(MergeConflictError) as info:
        merge(["a", "b", "c"], ["a", "user", "c"], ["a", "agent", "c"])
    assert info.value.line == 2


def test_merge_refuses_two_insertions_at_one_place() -> None:
    with pytest.raises(MergeConflictError):
        merge(["a", "b"], ["a", "user", "b"], ["a", "agent", "b"])


def test_merge_of_identical_changes_is_that_change() -> None:
    assert merge(["a"], ["b"], ["b"]) == ["b"]


def test_select_lines_honours_line_and_limit() -> None:
    text = "1\n2\n3\n4\n"
    assert select_lines(text, None, None) == text
    assert select_lines(text, 2, None) == "2\n3\n4\n"
    assert select_lines(text, 2, 2) == "2\n3\n"
    assert select_lines(text, None, 1) == "1\n"
    assert select_lines(text, 9, 2) == ""


# -- files.py against a real Neovim --------------------------------------------------


class LuaEditor:
    """The two Editor messages files.py sends, delivered to host.lua's ``_receive``
    in the test's Neovim (the rest of the Editor is not needed here). pynvim runs
    its own event loop, so every call into Neovim goes through one worker thread."""

    def __init__(self, nvim: Nvim) -> None:
        self.nvim = nvim
        self.pool = concurrent.futures.ThreadPoolExecutor(1)

    def _call(self, name: str, *args: Any) -> concurrent.futures.Future[Any]:
        return self.pool.submit(
            self.nvim.lua, "return require('gemini_companion.host')._receive(...)", name, *args
        )

    async def command(self, command: str) -> None:
        """Type into Neovim meanwhile, as the user would."""
        await asyncio.wrap_future(self.pool.submit(self.nvim.api.command, command))

    def read_buffer(self, path: str) -> concurrent.futures.Future[Any]:
        return self._call("buffer_read", path)

    def apply_buffer_edits(
        self, path: str, tick: int, edits: list[dict[str, Any]], options: Mapping[str, Any]
    ) -> concurrent.futures.Future[Any]:
        return self._call("buffer_apply", path, tick, edits, dict(options))


@pytest.fixture
def editor_nvim(nvim_factory: Any, tmp_path: Path) -> Nvim:
    return nvim_factory(setup={"auto_start": False}, cwd=tmp_path)  # type: ignore[no-any-return]


def files_for(nvim: Nvim, *roots: Path) -> tuple[EditorFiles, LuaEditor]:
    """files.py on ``nvim``; with ``roots``, files not loaded in Neovim are reached
    only under them (the workspace policy, paths.PathPolicy)."""
    editor = LuaEditor(nvim)
    policy = PathPolicy.of([str(r) for r in roots]) if roots else None
    return EditorFiles(editor, lambda: policy), editor  # type: ignore[arg-type]


def buffer_lines(nvim: Nvim, path: Path) -> list[str]:
    return list(
        nvim.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)", str(path))
    )


def test_the_agent_reads_the_unsaved_text_of_a_loaded_buffer(
    editor_nvim: Nvim, tmp_path: Path
) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("on disk\nsecond\n")
    editor_nvim.api.command(f"edit {target}")
    editor_nvim.api.command("normal! ggcconly in the buffer")
    files, _ = files_for(editor_nvim)
    assert asyncio.run(files.read(str(target))) == "only in the buffer\nsecond\n"
    assert asyncio.run(files.read(str(target), 2, 1)) == "second\n"
    other = tmp_path / "other.txt"
    other.write_text("not loaded\n")
    assert asyncio.run(files.read(str(other))) == "not loaded\n"
    # Absent: empty, so the CLI's write_file creates it (README, "Agent panel").
    assert asyncio.run(files.read(str(tmp_path / "missing.txt"))) == ""
    assert asyncio.run(files.read(str(tmp_path / "no" / "folder" / "missing.txt"))) == ""


def test_a_write_to_a_loaded_buffer_is_one_undo_step_and_reaches_disk(
    editor_nvim: Nvim, tmp_path: Path
) -> None:
    target = tmp_path / "code.py"
    target.write_text("a = 1\nb = 2\nc = 3\n")
    editor_nvim.api.command(f"edit {target}")
    files, _ = files_for(editor_nvim)

    async def agent_edit() -> None:
        text = await files.read(str(target))
        await files.write(str(target), text.replace("b = 2", "b = 20\nb2 = 21").replace("c", "C"))

    asyncio.run(agent_edit())
    assert target.read_text() == "a = 1\nb = 20\nb2 = 21\nC = 3\n"
    assert buffer_lines(editor_nvim, target) == ["a = 1", "b = 20", "b2 = 21", "C = 3"]
    assert editor_nvim.lua("return vim.bo.modified") is False
    editor_nvim.api.command("silent undo")
    assert buffer_lines(editor_nvim, target) == ["a = 1", "b = 2", "c = 3"]


def test_a_write_keeps_the_users_unsaved_edits_in_other_lines(
    editor_nvim: Nvim, tmp_path: Path
) -> None:
    target = tmp_path / "list.txt"
    target.write_text("one\ntwo\nthree\nfour\n")
    editor_nvim.api.command(f"edit {target}")
    files, editor = files_for(editor_nvim)

    async def scenario() -> None:
        text = await files.read(str(target))  # the agent reads, then the user types
        await editor.command("normal! Gofive (typed by the user)")
        await files.write(str(target), text.replace("two", "TWO (agent)"))

    asyncio.run(scenario())
    expected = ["one", "TWO (agent)", "three", "four", "five (typed by the user)"]
    assert buffer_lines(editor_nvim, target) == expected
    assert target.read_text() == "\n".join(expected) + "\n"


def test_a_write_that_clobbers_the_users_unsaved_edit_is_refused(
    editor_nvim: Nvim, tmp_path: Path
) -> None:
    target = tmp_path / "list.txt"
    target.write_text("one\ntwo\n")
    editor_nvim.api.command(f"edit {target}")
    files, editor = files_for(editor_nvim)

    async def scenario() -> None:
        text = await files.read(str(target))
        await editor.command("normal! ggjccmine")
        await files.write(str(target), text.replace("two", "theirs"))

    with pytest.raises(FileAccessError, match="conflict"):
        asyncio.run(scenario())
    assert buffer_lines(editor_nvim, target) == ["one", "mine"]
    assert target.read_text() == "one\ntwo\n"


def test_a_write_of_a_file_not_loaded_goes_to_disk(editor_nvim: Nvim, tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir" / "file.txt"
    files, _ = files_for(editor_nvim)
    asyncio.run(files.write(str(target), "created\r\nwith CRLF\r\n"))
    assert target.read_bytes() == b"created\r\nwith CRLF\r\n"


def test_an_accepted_edit_writes_the_users_version_instead_of_the_proposal(
    editor_nvim: Nvim, tmp_path: Path
) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("old\n")
    editor_nvim.api.command(f"edit {target}")
    files, _ = files_for(editor_nvim)
    files.expect_write(str(target), "proposal\n", "proposal\n# the user's line\n")

    async def scenario() -> None:
        await files.read(str(target))
        await files.write(str(target), "proposal\n")

    asyncio.run(scenario())
    assert target.read_text() == "proposal\n# the user's line\n"
    assert buffer_lines(editor_nvim, target) == ["proposal", "# the user's line"]


# -- the path policy (openDiff's, diff.py) ---------------------------------------------


def test_paths_with_control_characters_and_files_too_large_are_refused(
    editor_nvim: Nvim, tmp_path: Path
) -> None:
    files, _ = files_for(editor_nvim)
    with pytest.raises(FileAccessError, match="control character"):
        asyncio.run(files.read(str(tmp_path / "a\x1b[2Jb.txt")))
    with pytest.raises(FileAccessError, match="control character"):
        asyncio.run(files.write(str(tmp_path / "line\nbreak.txt"), "x"))
    assert not list(tmp_path.glob("*break*"))
    big = tmp_path / "big.log"
    with big.open("wb") as f:
        f.truncate(MAX_READ_BYTES + 1)  # sparse: nothing is really written
    with pytest.raises(FileAccessError, match="larger than 20 MiB"):
        asyncio.run(files.read(str(big)))


def test_writes_to_a_fifo_or_outside_the_workspace_are_refused(
    editor_nvim: Nvim, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fifo = work / "pipe"
    os.mkfifo(fifo)
    outside = tmp_path / "outside.txt"
    outside.write_text("kept\n")
    files, _ = files_for(editor_nvim, work)
    with pytest.raises(FileAccessError, match="not a regular file"):
        asyncio.run(files.write(str(fifo), "never\n"))
    with pytest.raises(FileAccessError, match="outside the workspace folders"):
        asyncio.run(files.write(str(outside), "clobbered\n"))
    (work / "escape").symlink_to(outside)
    with pytest.raises(FileAccessError, match="outside the workspace folders"):
        asyncio.run(files.write(str(work / "escape"), "clobbered\n"))
    assert outside.read_text() == "kept\n"
    asyncio.run(files.write(str(work / "new.txt"), "inside\n"))
    assert (work / "new.txt").read_text() == "inside\n"


def test_a_loaded_buffer_outside_the_workspace_is_not_read_for_the_agent(
    editor_nvim: Nvim, tmp_path: Path
) -> None:
    """Issue 29 item 6b: a file the user opened is no consent to the agent reading it:
    outside the policy's folders a loaded buffer is refused as a file on disk is,
    links resolved; inside, its unsaved text is served."""
    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("on disk\n")
    (work / "link.txt").symlink_to(secret)
    editor_nvim.api.command(f"edit {secret}")
    editor_nvim.api.command("normal! ggccunsaved secret")
    files, _ = files_for(editor_nvim, work)
    for path in (secret, work / "link.txt"):
        with pytest.raises(FileAccessError, match="outside the workspace folders") as info:
            asyncio.run(files.read(str(path)))
        assert "diff.allowed_dirs" in str(info.value)
    inside = work / "inside.txt"
    inside.write_text("on disk\n")
    editor_nvim.api.command(f"edit {inside}")
    editor_nvim.api.command("normal! ggccunsaved inside")
    assert asyncio.run(files.read(str(inside))) == "unsaved inside\n"
