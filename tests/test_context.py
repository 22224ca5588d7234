"""Issue 3: context awareness. ``ide/contextUpdate`` from a real headless Neovim to a
real MCP client and to the real ``IdeClient``, and :class:`ContextTracker` on its own."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from gemini_companion.context import (
    MAX_CANDIDATES,
    MAX_SELECTION_BYTES,
    TRUNCATION_MARK,
    ContextTracker,
    cap_selection,
)
from gemini_companion.sessions import SessionStream
from harness import Nvim
from ide_client import IdeClientProcess
from lua_options import option_defaults
from mcp_client import SyncMcpConnection, mcp_client

UPDATE = "ide/contextUpdate"
Params = dict[str, Any]

# -- ContextTracker on its own ------------------------------------------------------------


class FakeStreams:
    """Stands in for SessionStreams: records what each session was sent."""

    def __init__(self, *sessions: str) -> None:
        self.streams: dict[str, Any] = dict.fromkeys(sessions)
        self.sent: list[tuple[str, Params]] = []

    async def notify(self, session_id: str, method: str, params: Mapping[str, Any]) -> bool:
        assert method == UPDATE
        self.sent.append((session_id, dict(params)))
        return True


def run_tracker(
    scenario: Callable[[ContextTracker, FakeStreams], Any],
    *,
    files: set[str] | None = None,
    sessions: tuple[str, ...] = ("s1",),
    **kwargs: Any,
) -> list[tuple[str, Params]]:
    """Run ``scenario`` on a loop; what the sessions were sent."""
    streams = FakeStreams(*sessions)

    async def main() -> None:
        exists = files if files is not None else set()
        kwargs.setdefault("debounce_ms", option_defaults()["context"]["debounce_ms"])
        tracker = ContextTracker(
            lambda: streams, is_file=lambda p: files is None or p in exists, **kwargs
        )
        await scenario(tracker, streams)
        await asyncio.sleep(0)

    asyncio.run(main())
    return streams.sent


async def settle(tracker: ContextTracker) -> None:
    await asyncio.sleep(tracker.debounce + 0.03)


def test_tracker_debounces_buffer_events_into_one_update() -> None:
    async def scenario(t: ContextTracker, s: FakeStreams) -> None:
        t.handle("buffer", [1, "/a"])
        t.handle("focus", [1, "/a", 1, 1])
        t.handle("buffer", [2, "/b"])
        t.handle("focus", [2, "/b", 3, 4])
        await asyncio.sleep(t.debounce / 2)
        assert s.sent == [], "sent before the debounce ended"
        await settle(t)

    sent = run_tracker(scenario)
    assert len(sent) == 1
    files = sent[0][1]["workspaceState"]["openFiles"]
    assert [f["path"] for f in files] == ["/b", "/a"]
    assert files[0]["isActive"] is True and files[0]["cursor"] == {"line": 3, "character": 4}
    assert set(files[1]) == {"path", "timestamp"}, "only the active file has extra fields"
    assert files[0]["timestamp"] > files[1]["timestamp"]


def test_tracker_sends_cursor_and_selection_at_once_and_suppresses_repeats() -> None:
    async def scenario(t: ContextTracker, s: FakeStreams) -> None:
        t.handle("focus", [1, "/a", 1, 1])
        await settle(t)
        t.handle("selection", [1, 2, 3, "abc"])  # already debounced in Lua
        await asyncio.sleep(0)
        assert len(s.sent) == 2
        t.handle("cursor", [1, 2, 3])  # same place: the selection stays, nothing new
        t.handle("selection", [1, 2, 3, "abc"])
        await asyncio.sleep(0)
        assert len(s.sent) == 2
        t.handle("cursor", [1, 2, 4])  # a move clears it
        await asyncio.sleep(0)

    sent = run_tracker(scenario)
    active = [p["workspaceState"]["openFiles"][0] for _, p in sent]
    assert active[1]["selectedText"] == "abc"
    assert "selectedText" not in active[2] and active[2]["cursor"]["character"] == 4


def test_tracker_keeps_ten_existing_files_and_never_sends_null() -> None:
    paths = [f"/f{i}" for i in range(30)]

    async def scenario(t: ContextTracker, s: FakeStreams) -> None:
        for i, path in enumerate(paths):
            t.handle("focus", [i + 1, path, 1, 1])
        await settle(t)

    # Every third file does not exist on disk.
    existing = {p for i, p in enumerate(paths) if i % 3}
    sent = run_tracker(scenario, files=existing)
    files = sent[-1][1]["workspaceState"]["openFiles"]
    assert len(files) == 10
    assert all(f["path"] in existing for f in files)
    assert files[0]["path"] == "/f29" and files[0]["isActive"] is True
    assert "null" not in json.dumps(sent[-1][1])
    assert "isTrusted" not in sent[-1][1]["workspaceState"]


def test_tracker_active_file_missing_on_disk_means_no_active_file() -> None:
    async def scenario(t: ContextTracker, s: FakeStreams) -> None:
        t.handle("focus", [1, "/saved", 1, 1])
        t.handle("focus", [2, "/unsaved-new-file", 1, 1])
        await settle(t)

    sent = run_tracker(scenario, files={"/saved"})
    files = sent[-1][1]["workspaceState"]["openFiles"]
    assert files == [{"path": "/saved", "timestamp": files[0]["timestamp"]}]


def test_tracker_is_trusted_only_when_configured() -> None:
    async def focus(t: ContextTracker, s: FakeStreams) -> None:
        t.handle("focus", [1, "/a", 1, 1])
        await settle(t)

    for trusted in (True, False):
        sent = run_tracker(focus, trusted=trusted)
        assert sent[-1][1]["workspaceState"]["isTrusted"] is trusted
    assert "isTrusted" not in run_tracker(focus)[-1][1]["workspaceState"]


def test_tracker_never_focused_buffers_rank_below_the_active_file() -> None:
    async def scenario(t: ContextTracker, s: FakeStreams) -> None:
        t.handle("focus", [1, "/a", 1, 1])
        t.handle("buffer", [2, "/added-later"])  # :badd: listed, never shown
        await settle(t)

    files = run_tracker(scenario)[-1][1]["workspaceState"]["openFiles"]
    assert [f["path"] for f in files] == ["/a", "/added-later"]
    assert files[0]["timestamp"] > files[1]["timestamp"]


def test_tracker_close_and_rename_keep_the_focus_order() -> None:
    async def scenario(t: ContextTracker, s: FakeStreams) -> None:
        for i, path in enumerate(["/a", "/b", "/c"], start=1):
            t.handle("focus", [i, path, 1, 1])
        t.handle("buffer", [2, "/b-renamed"])
        t.handle("close", [3])  # the active file goes; the previous one is active again
        await settle(t)

    files = run_tracker(scenario)[-1][1]["workspaceState"]["openFiles"]
    assert [f["path"] for f in files] == ["/b-renamed", "/a"]
    assert files[0]["isActive"] is True


def test_tracker_snapshot_for_a_new_session_and_once_per_session() -> None:
    async def scenario(t: ContextTracker, s: FakeStreams) -> None:
        t.handle("focus", [1, "/a", 5, 6])
        await settle(t)
        written: list[bytes] = []

        async def send(message: Mapping[str, Any]) -> None:
            written.append(message["body"])

        stream = SessionStream("s2", send)
        await t.session_opened(stream)
        await stream.drained()
        assert len(written) == 1 and b'"line":5' in written[0]
        s.streams["s2"] = stream
        t.flush()  # nothing changed: neither session gets it again
        await asyncio.sleep(0)
        assert [sid for sid, _ in s.sent] == ["s1"]

    run_tracker(scenario)


def test_tracker_sync_repeated_changes_nothing() -> None:
    async def scenario(t: ContextTracker, s: FakeStreams) -> None:
        buffers = [[1, "/a", 100], [2, "/b", 200], [3, "/never", 0]]
        t.handle("sync", [buffers, [2, 7, 8]])
        await settle(t)
        t.handle("sync", [buffers, [2, 7, 8]])
        await settle(t)

    sent = run_tracker(scenario)
    assert len(sent) == 1
    files = sent[0][1]["workspaceState"]["openFiles"]
    assert [f["path"] for f in files] == ["/b", "/a", "/never"]
    assert files[0]["cursor"] == {"line": 7, "character": 8}


def test_tracker_ignores_malformed_events() -> None:
    async def scenario(t: ContextTracker, s: FakeStreams) -> None:
        t.handle("focus", [1])
        t.handle("nonsense", [])
        t.handle("cursor", ["x", 1, 1])
        t.handle("focus", [1, "/a", 1, 1])
        await settle(t)

    assert len(run_tracker(scenario)) == 1


def test_selection_cap_is_16_kib_at_a_character_boundary() -> None:
    text = "é" * 20000  # 40000 bytes
    capped = cap_selection(text)
    assert len(capped.encode()) <= MAX_SELECTION_BYTES
    assert capped.endswith(TRUNCATION_MARK)
    assert text.startswith(capped[: -len(TRUNCATION_MARK)])
    assert cap_selection("short") == "short"


def test_building_with_1000_buffers_checks_at_most_64_files_on_disk() -> None:
    """What keeps a build cheap with many buffers (its time is bench/context.py's):
    the worst case, where no buffer's file exists, stops after MAX_CANDIDATES."""
    checked: list[str] = []

    def is_file(path: str) -> bool:
        checked.append(path)
        return False

    async def main() -> None:
        debounce_ms = option_defaults()["context"]["debounce_ms"]
        t = ContextTracker(lambda: None, debounce_ms=debounce_ms, is_file=is_file)
        for i in range(1000):
            t.focus(i + 1, f"/gone/f{i}.txt", 1, 1)
        assert t.build() == {"workspaceState": {"openFiles": []}}

    asyncio.run(main())
    assert len(checked) == MAX_CANDIDATES == 64
    assert checked[0] == "/gone/f999.txt", "most recently focused first"


# -- the real plugin in a real Neovim ------------------------------------------------------


@contextmanager
def client(nvim: Nvim) -> Iterator[SyncMcpConnection]:
    state = nvim.state()
    with mcp_client(state["port"], nvim.token()) as conn:
        yield conn


def wait_update(
    conn: SyncMcpConnection, predicate: Callable[[Params], bool], what: str, timeout: float = 5
) -> Params:
    """The first update (from now) for which ``predicate`` holds."""
    deadline = time.monotonic() + timeout
    seen: list[Params] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"no context update with {what} within {timeout}s; saw {seen!r}")
        try:
            params = conn.next_notification(UPDATE, remaining)
        except TimeoutError:
            continue
        seen.append(params)
        if predicate(params):
            return params


def next_update(
    conn: SyncMcpConnection, predicate: Callable[[Params], bool], what: str, timeout: float = 5
) -> Params:
    """The very next update, which must be the one ``predicate`` describes: an update
    that should not exist would arrive first (the stream is ordered), so this also
    proves nothing was sent since the last one read."""
    params = conn.next_notification(UPDATE, timeout)
    assert predicate(params), f"the next context update is not {what}: {params!r}"
    return params


def files_of(params: Params) -> list[Params]:
    return list(params["workspaceState"]["openFiles"])


def active_of(params: Params) -> Params | None:
    files = files_of(params)
    return files[0] if files and files[0].get("isActive") else None


def paths_of(params: Params) -> list[str]:
    return [f["path"] for f in files_of(params)]


def is_active(path: Path, **fields: Any) -> Callable[[Params], bool]:
    def check(params: Params) -> bool:
        active = active_of(params)
        if active is None or active["path"] != str(path):
            return False
        return all(active.get(k) == v for k, v in fields.items())

    return check


def cursor(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


@pytest.fixture
def project(nvim: Nvim) -> Path:
    path = nvim.sandbox.root / "project"
    path.mkdir()
    return path


def write(path: Path, text: str = "one\ntwo\nthree\n") -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def edit(nvim: Nvim, path: Path) -> None:
    nvim.api.command(f"edit {path}")


def test_new_client_gets_the_current_context_as_its_stream_opens(nvim: Nvim, project: Path) -> None:
    a = write(project / "a.txt")
    with client(nvim) as first:
        edit(nvim, a)
        nvim.lua("vim.api.nvim_win_set_cursor(0, {2, 1})")
        settled = wait_update(first, is_active(a, cursor=cursor(2, 2)), "the cursor at 2:2")
        with client(nvim) as second:
            snapshot = second.next_notification(UPDATE, 5)
            assert snapshot == settled
            assert "isTrusted" not in snapshot["workspaceState"]
            # The snapshot is all a quiet editor sends: the next update is the next change.
            nvim.api.input("k")
            next_update(second, is_active(a, cursor=cursor(1, 2)), "the cursor at 1:2")


def test_open_focus_close_and_rename_files(nvim: Nvim, project: Path) -> None:
    a, b = write(project / "a.txt"), write(project / "b.txt")
    with client(nvim) as conn:
        conn.next_notification(UPDATE, 5)  # the snapshot
        edit(nvim, a)
        first = wait_update(conn, is_active(a, cursor=cursor(1, 1)), "a.txt active")
        assert paths_of(first) == [str(a)]
        edit(nvim, b)
        second = wait_update(conn, is_active(b), "b.txt active")
        assert paths_of(second) == [str(b), str(a)]
        a_entry, b_entry = files_of(second)[1], files_of(second)[0]
        assert set(a_entry) == {"path", "timestamp"}
        assert b_entry["timestamp"] > a_entry["timestamp"]
        assert abs(b_entry["timestamp"] / 1000 - time.time()) < 30, "ms since the epoch"
        edit(nvim, a)  # focus again: back on top, with a newer timestamp
        third = wait_update(conn, is_active(a), "a.txt active again")
        assert paths_of(third) == [str(a), str(b)]
        assert files_of(third)[0]["timestamp"] > b_entry["timestamp"]
        renamed = project / "renamed.txt"
        nvim.api.command(f"saveas {renamed}")
        fourth = wait_update(conn, is_active(renamed), "the renamed file active")
        # :saveas keeps the old name in an alternate buffer, which stays open.
        assert str(renamed) in paths_of(fourth) and str(b) in paths_of(fourth)
        nvim.api.command(f"bwipeout {nvim.lua('return vim.fn.bufnr(...)', str(b))}")
        fifth = wait_update(conn, lambda p: str(b) not in paths_of(p), "b.txt wiped out")
        assert active_of(fifth) is not None and active_of(fifth)["path"] == str(renamed)  # type: ignore[index]
        nvim.api.command(f"bdelete {nvim.lua('return vim.fn.bufnr(...)', str(a))}")  # unlisted
        sixth = wait_update(conn, lambda p: str(a) not in paths_of(p), "a.txt deleted")
        assert paths_of(sixth) == [str(renamed)]


def test_a_new_file_appears_once_written(nvim: Nvim, project: Path) -> None:
    new = project / "new.txt"
    with client(nvim) as conn:
        conn.next_notification(UPDATE, 5)
        edit(nvim, new)  # not on disk yet: nothing to send
        nvim.api.command("write")
        next_update(conn, is_active(new), "new.txt active after :write")


def test_cursor_counts_characters_on_multibyte_lines(nvim: Nvim, project: Path) -> None:
    path = write(project / "multi.txt", "héllo wörld 😀 end\n日本語のテキスト\n")
    with client(nvim) as conn:
        edit(nvim, path)
        nvim.api.input("$")  # "d" of "end": the 17th character, byte 23
        wait_update(conn, is_active(path, cursor=cursor(1, 17)), "the cursor at 1:17")
        nvim.api.input("j03l")  # the 4th character of line 2, byte 10
        wait_update(conn, is_active(path, cursor=cursor(2, 4)), "the cursor at 2:4")
        nvim.api.input("A")  # Insert mode after the last character (CursorMovedI)
        wait_update(conn, is_active(path, cursor=cursor(2, 9)), "the cursor at 2:9")
        nvim.api.input("<Esc>")


SELECTION_TEXT = "alpha beta\ngamma délta\nepsilon\n"


@pytest.mark.parametrize(
    ("keys", "expected", "end"),
    [
        ("wvjl", "beta\ngamma dé", (2, 8)),  # characterwise, multibyte end
        ("Vj", "alpha beta\ngamma délta", (2, 1)),  # linewise
        ("l<C-v>jll", "lph\namm", (2, 4)),  # blockwise
    ],
    ids=["characterwise", "linewise", "blockwise"],
)
def test_visual_selections(
    nvim: Nvim, project: Path, keys: str, expected: str, end: tuple[int, int]
) -> None:
    path = write(project / "sel.txt", SELECTION_TEXT)
    with client(nvim) as conn:
        edit(nvim, path)
        wait_update(conn, is_active(path), "sel.txt active")
        nvim.api.input(keys)
        params = wait_update(conn, is_active(path, selectedText=expected), f"{expected!r}")
        assert active_of(params)["cursor"] == cursor(*end)  # type: ignore[index]
        nvim.api.input("<Esc>j")
        cleared = wait_update(conn, is_active(path), "a cursor move after Visual mode")
        assert "selectedText" not in active_of(cleared)  # type: ignore[operator]


def open_terminal(nvim: Nvim) -> int:
    """A terminal window to the right, the way a user keeps the CLI; returns its buffer."""
    nvim.api.command("botright vsplit | terminal")
    return int(nvim.lua("return vim.api.nvim_get_current_buf()"))


def test_terminal_focus_keeps_the_active_file_and_its_selection(nvim: Nvim, project: Path) -> None:
    path = write(project / "explain.txt", SELECTION_TEXT)
    other = write(project / "other.txt")
    edit(nvim, other)
    edit(nvim, path)
    open_terminal(nvim)
    nvim.api.command("wincmd p")
    with client(nvim) as conn:
        nvim.api.input("Vj")
        selected = wait_update(
            conn, is_active(path, selectedText="alpha beta\ngamma délta"), "the selection"
        )
        # Straight from Visual mode to the terminal window, and type there.
        nvim.api.input("<C-w>l")
        nvim.api.command("startinsert")
        wait_mode = nvim.lua("return vim.api.nvim_get_mode().mode")
        assert wait_mode in ("t", "n"), wait_mode
        assert nvim.lua("return vim.bo.buftype") == "terminal"
        # Back to the file: the selection is still there until the cursor moves.
        nvim.api.input("<C-\\><C-n><C-w>p")
        assert nvim.lua("return vim.api.nvim_buf_get_name(0)") == str(path)
        nvim.api.input("k")
        # The next update is this move: the trip to the terminal and back sent nothing.
        moved = next_update(conn, is_active(path, cursor=cursor(1, 1)), "the cursor moved")
        assert "selectedText" not in active_of(moved)  # type: ignore[operator]
        assert paths_of(moved) == [str(path), str(other)]
        assert files_of(moved)[0]["timestamp"] == active_of(selected)["timestamp"]  # type: ignore[index]


def test_selection_survives_a_quick_jump_to_the_terminal(nvim: Nvim, project: Path) -> None:
    """Leaving Visual mode before the debounce ends still reports the selection."""
    path = write(project / "quick.txt", SELECTION_TEXT)
    edit(nvim, path)
    open_terminal(nvim)
    nvim.api.command("wincmd p")
    with client(nvim) as conn:
        nvim.api.input("vj<C-w>l")  # one batch: far quicker than the debounce
        params = wait_update(conn, is_active(path, selectedText="alpha beta\ng"), "the selection")
        assert active_of(params)["cursor"] == cursor(2, 1)  # type: ignore[index]


def test_non_file_buffers_are_never_sent_nor_active(nvim: Nvim, project: Path) -> None:
    path = write(project / "real.txt")
    with client(nvim) as conn:
        edit(nvim, path)
        wait_update(conn, is_active(path), "real.txt active")
        nvim.api.command("help")
        nvim.api.command("enew")  # unnamed
        nvim.api.command("enew | setlocal buftype=nofile | file scratch-name")
        nvim.api.command(f"edit oil://{project}/")
        nvim.api.command("terminal")
        nvim.api.command("new | setlocal buftype=nofile")
        nvim.lua("vim.api.nvim_buf_set_name(0, ...)", str(project / "nofile.txt"))
        write(project / "nofile.txt")
        nvim.api.input("ihello<Esc>")
        nvim.api.command(f"edit {path}")
        nvim.api.input("j")
        # The next update is this move: the non-file buffers sent nothing.
        params = next_update(conn, is_active(path, cursor=cursor(2, 1)), "real.txt moved")
        assert paths_of(params) == [str(path)]


def test_ten_files_at_most_most_recent_first(nvim: Nvim, project: Path) -> None:
    paths = [write(project / f"f{i:02}.txt") for i in range(14)]
    with client(nvim) as conn:
        for path in paths:
            edit(nvim, path)
        params = wait_update(conn, is_active(paths[-1]), "the last file active")
        assert paths_of(params) == [str(p) for p in reversed(paths[-10:])]
        stamps = [f["timestamp"] for f in files_of(params)]
        assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == 10


def test_selection_is_capped_at_16_kib(nvim: Nvim, project: Path) -> None:
    line = "ü" * 99  # 198 bytes
    path = write(project / "big.txt", (line + "\n") * 2000)  # ~400 KB
    with client(nvim) as conn:
        edit(nvim, path)
        nvim.api.input("ggVG")
        params = wait_update(
            conn, lambda p: bool((a := active_of(p)) and a.get("selectedText")), "a selection"
        )
        text = active_of(params)["selectedText"]  # type: ignore[index]
        assert len(text.encode()) <= 16 * 1024
        assert text.endswith(TRUNCATION_MARK)
        assert (line + "\n").startswith(text[:10]) and len(text.encode()) > 16000
        assert active_of(params)["cursor"] == cursor(2000, 1)  # type: ignore[index]


@pytest.mark.parametrize("keys", ["ggVG", "ggvG$"], ids=["linewise", "characterwise"])
def test_selection_of_more_lines_than_can_be_sent_is_capped(
    nvim: Nvim, project: Path, keys: str
) -> None:
    path = write(project / "lines.txt", "".join(f"{i % 10}\n" for i in range(30000)))
    with client(nvim) as conn:
        edit(nvim, path)
        nvim.api.input(keys)
        params = wait_update(
            conn, lambda p: bool((a := active_of(p)) and a.get("selectedText")), "a selection"
        )
        text = active_of(params)["selectedText"]  # type: ignore[index]
        assert len(text.encode()) <= 16 * 1024 and text.endswith(TRUNCATION_MARK)
        assert text.startswith("0\n1\n2\n")
        assert active_of(params)["cursor"]["line"] == 30000  # type: ignore[index]


def test_two_clients_get_the_same_updates(nvim: Nvim, project: Path) -> None:
    path = write(project / "both.txt")
    with client(nvim) as one, client(nvim) as two:
        nvim.wait_state(lambda s: len(s["sessions"]) == 2, 10, "two sessions")
        one.next_notification(UPDATE, 5)
        two.next_notification(UPDATE, 5)
        edit(nvim, path)
        nvim.api.input("jl")
        got = [wait_update(c, is_active(path, cursor=cursor(2, 2)), "2:2") for c in (one, two)]
        assert got[0] == got[1]


def test_nothing_is_sent_when_nothing_changed(nvim: Nvim, project: Path) -> None:
    path = write(project / "same.txt")
    edit(nvim, path)
    with client(nvim) as conn:
        wait_update(conn, is_active(path, cursor=cursor(1, 1)), "same.txt active")
        nvim.api.input("jk")  # there and back within the debounce
        nvim.api.command("wincmd w")  # one window: focus stays where it was
        nvim.api.input("j")
        # The next update is this move: "jk" and the window command sent nothing.
        next_update(conn, is_active(path, cursor=cursor(2, 1)), "the cursor at 2:1")
        nvim.api.input("k")
        # Exactly one update per change: no second 2:1 before this one.
        next_update(conn, is_active(path, cursor=cursor(1, 1)), "the cursor at 1:1")


def test_burst_of_moves_gives_one_update_with_the_final_position(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # A debounce far longer than the burst, so a slow machine cannot split it (how
    # fast the 50 ms default coalesces is bench/context.py's business).
    nvim = nvim_factory(cwd=project, setup={"context": {"debounce_ms": 2000}})
    nvim.wait_running()
    path = write(project / "burst.txt", "x" * 300 + "\n")
    edit(nvim, path)
    with client(nvim) as conn:
        wait_update(conn, is_active(path), "burst.txt active", timeout=10)
        for _ in range(10):  # ten separate inputs: ten CursorMoved events
            nvim.api.input("l" * 20)
        # Awaited: the update with the final position. Before it, at most updates of
        # positions within the burst, fewer than the moves (on an idle machine none:
        # a stall of the test longer than the debounce between two inputs can split
        # the burst, which is no fault of the plugin).
        burst: list[Params] = []

        def final(params: Params) -> bool:
            burst.append(params)
            return is_active(path, cursor=cursor(1, 201))(params)

        wait_update(conn, final, "the burst's final position", timeout=30)
        positions = [active_of(p)["cursor"] for p in burst]  # type: ignore[index]
        assert len(positions) < 10, positions
        assert all(c["line"] == 1 and c["character"] % 20 == 1 for c in positions), positions
        nvim.api.input("0")
        # One update after the burst: the next one is this move.
        next_update(conn, is_active(path, cursor=cursor(1, 1)), "the cursor at 1:1", timeout=10)


def test_is_trusted_is_sent_only_when_configured(nvim_factory: Callable[..., Nvim]) -> None:
    nvim = nvim_factory(setup={"context": {"trusted": False, "debounce_ms": 10}})
    nvim.wait_running()
    with client(nvim) as conn:
        assert conn.next_notification(UPDATE, 5)["workspaceState"]["isTrusted"] is False


def test_bad_context_options_are_refused_by_name(nvim_factory: Callable[..., Nvim]) -> None:
    nvim = nvim_factory(setup={"auto_start": False})
    for opts, name in (
        ({"context": {"debounce_ms": "50"}}, "context.debounce_ms"),
        ({"context": {"trusted": "yes"}}, "context.trusted"),
        ({"context": {"bogus": 1}}, "context.bogus"),
    ):
        ok, message = nvim.lua("return {pcall(require('gemini_companion').setup, ...)}", opts)
        assert not ok and name in message, message


def test_restarted_server_starts_from_what_is_open(nvim: Nvim, project: Path) -> None:
    """Forwarding starts with a sync: open files, and the file used last stays active
    even when the server starts while the user is in the terminal."""
    a, b = write(project / "a.txt"), write(project / "b.txt", "one\ntwö wörds\n")
    edit(nvim, a)
    edit(nvim, b)
    nvim.lua("vim.api.nvim_win_set_cursor(0, {2, 6})")  # 0-based byte 6: the 6th character
    open_terminal(nvim)
    nvim.api.command("GeminiCompanionStop")
    nvim.wait_state(lambda s: not s["running"], 10, "the companion to stop")
    nvim.start()
    with client(nvim) as conn:
        params = wait_update(conn, is_active(b, cursor=cursor(2, 6)), "b.txt active at 2:6")
        assert paths_of(params) == [str(b), str(a)]


def test_stopping_the_server_removes_the_autocommands(nvim: Nvim) -> None:
    count = "return #vim.api.nvim_get_autocmds({group = 'gemini_companion_context'})"
    assert nvim.lua(count) > 0
    nvim.api.command("GeminiCompanionStop")
    assert (
        nvim.lua("return pcall(vim.api.nvim_get_autocmds, {group = 'gemini_companion_context'})")
        is False
    )


# -- the real IdeClient --------------------------------------------------------------------


@pytest.mark.usefixtures("interop")
def test_real_ide_client_store_shows_active_file_cursor_and_selection(
    nvim: Nvim, project: Path
) -> None:
    a = write(project / "first.py", "import os\nprint('héllo')\n")
    b = write(project / "second.py", "x = 1\ny = 2\nz = 3\n")
    edit(nvim, a)
    edit(nvim, b)
    env = nvim.job_env()
    ide = IdeClientProcess(env, project)
    try:
        assert ide.connect()["status"] == "connected"
        # The snapshot may arrive before connect() returns: look there first.
        early = [e for e in ide.seen if e.get("event") == "context"]

        def store_active(path: Path, **fields: Any) -> Callable[[dict[str, Any]], bool]:
            def check(event: dict[str, Any]) -> bool:
                context = event.get("context") or {}
                files = (context.get("workspaceState") or {}).get("openFiles") or []
                return bool(files) and is_active(path, **fields)(
                    {"workspaceState": context["workspaceState"]}
                )

            return check

        matching = [e for e in early if store_active(b, cursor=cursor(1, 1))(e)]
        event = (
            matching[-1]
            if matching
            else ide.expect("context", store_active(b, cursor=cursor(1, 1)))
        )
        files = event["context"]["workspaceState"]["openFiles"]
        assert [f["path"] for f in files] == [str(b), str(a)]
        nvim.api.input("jw")
        ide.expect("context", store_active(b, cursor=cursor(2, 3)))
        nvim.api.input("v$")
        event = ide.expect("context", store_active(b, selectedText="= 2"))
        assert "cursor" in event["context"]["workspaceState"]["openFiles"][0]
        nvim.api.input("<Esc>")
        edit(nvim, a)
        nvim.api.input("j$")
        event = ide.expect("context", store_active(a, cursor=cursor(2, 14)))
        second = event["context"]["workspaceState"]["openFiles"][1]
        assert second["path"] == str(b) and second.get("isActive") in (None, False)
        ide.send(cmd="status")
        status = ide.expect("status")
        assert status["status"] == "connected", "the client stayed connected (no schema error)"
    finally:
        ide.close()
