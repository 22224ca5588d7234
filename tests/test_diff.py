"""Issue 4: diff review in Neovim (openDiff/closeDiff, accept and reject, nothing lost).

Real headless Neovim, a real MCP client over real sockets, the real ``IdeClient``
and, at the end, the real ``gemini`` binary in a Neovim ``:terminal``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pynvim
import pytest
from harness import INTEROP, Nvim, Sandbox, wait_for
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ide_client import IdeClientProcess
from mcp_client import SyncMcpConnection, mcp_client, open_raw_session

VIEWS = """
return vim.tbl_map(function(v)
  return {
    id = v.id, file_path = v.file_path, state = v.state, tab = v.tab,
    proposal = v.proposal, original = v.original, original_owned = v.original_owned,
    proposal_win = v.proposal_win, original_win = v.original_win,
  }
end, require('gemini_companion.diff').views())
"""

RECORD_EVENTS = """
_G.diff_events = {}
vim.api.nvim_create_autocmd('User', {
  pattern = {'GeminiDiffOpened', 'GeminiDiffClosed'},
  callback = function(args) table.insert(_G.diff_events, {args.match, args.data}) end,
})
_G.messages = {}
local notify = vim.notify
vim.notify = function(m, l, o) table.insert(_G.messages, {m, l}); return notify(m, l, o) end
"""


@contextmanager
def client_of(nvim: Nvim) -> Iterator[SyncMcpConnection]:
    state = nvim.state()
    with mcp_client(state["port"], nvim.token()) as conn:
        yield conn


def views(nvim: Nvim) -> list[dict[str, Any]]:
    return list(nvim.lua(VIEWS))


def wait_views(nvim: Nvim, count: int, what: str = "") -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]] | None:
        found = views(nvim)
        return found if len(found) == count else None

    return wait_for(check, 30, what or f"{count} open diff views")


def no_views(nvim: Nvim, what: str) -> None:
    wait_for(lambda: not views(nvim), 10, what)


def proposal_text(nvim: Nvim, view: dict[str, Any]) -> list[str]:
    return list(nvim.api.buffers[view["proposal"]][:])  # type: ignore[index]


def open_diff(conn: SyncMcpConnection, path: Path | str, content: str) -> dict[str, Any]:
    return conn.call_tool("openDiff", {"filePath": str(path), "newContent": content})


def nothing_sent_since(nvim: Nvim, conn: SyncMcpConnection, why: str) -> None:
    """Nothing was answered to ``conn`` since its last answer read: a diff of a marker
    file is opened and rejected, and its rejection must be the first answer ``conn``
    gets (its stream is ordered, so a stray answer would come first)."""
    marker = nvim.sandbox.root / "marker.txt"
    ok(open_diff(conn, marker, "marker\n"))
    [view] = [v for v in views(nvim) if v["file_path"] == str(marker)]
    nvim.lua("require('gemini_companion.diff').reject(...)", view["id"])
    answers = [
        n for n in conn.notifications_until("ide/diffRejected") if n[0].startswith("ide/diff")
    ]
    assert answers == [("ide/diffRejected", {"filePath": str(marker)})], why


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert not result.get("isError"), result
    return result


@pytest.fixture
def nvim(nvim_factory: Callable[..., Nvim]) -> Nvim:
    instance = nvim_factory(extra_init=RECORD_EVENTS)
    instance.wait_running()
    return instance


@pytest.fixture
def conn(nvim: Nvim) -> Iterator[SyncMcpConnection]:
    with client_of(nvim) as connection:
        yield connection


@pytest.fixture
def target(nvim: Nvim) -> Path:
    path = nvim.sandbox.root / "hello.py"
    path.write_text("def hello():\n    return 1\n")
    return path


def events(nvim: Nvim) -> list[tuple[str, dict[str, Any]]]:
    return [(name, dict(data)) for name, data in nvim.lua("return _G.diff_events")]


# -- opening ----------------------------------------------------------------------------


def test_open_diff_returns_empty_content_and_opens_a_diff_tab(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    proposal = "def hello():\n    return 2\n"
    assert ok(open_diff(conn, target, proposal)) == {"content": [], "isError": False}
    [view] = views(nvim)
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 2
    assert nvim.lua("return vim.api.nvim_get_current_tabpage()") == view["tab"]
    wins = nvim.lua("return vim.api.nvim_tabpage_list_wins(0)")
    assert sorted(wins) == sorted([view["proposal_win"], view["original_win"]])
    for win in wins:
        assert nvim.lua("return vim.wo[...].diff", win) is True
    assert nvim.lua("return vim.api.nvim_get_current_win()") == view["proposal_win"]
    buf = view["proposal"]
    assert nvim.lua("return vim.bo[...].buftype", buf) == "acwrite"
    assert nvim.lua("return vim.bo[...].filetype", buf) == "python"
    assert nvim.lua("return vim.bo[...].filetype", view["original"]) == "python"
    assert nvim.lua("return vim.bo[...].modified", buf) is False
    assert nvim.lua("return vim.bo[...].modifiable", buf) is True
    # Named after the file, relative to the working directory, and what it holds.
    assert nvim.lua("return vim.fn.bufname(...)", buf) == "hello.py (proposal)"
    assert nvim.lua("return vim.api.nvim_buf_get_name(...)", buf) == f"{target} (proposal)"
    assert proposal_text(nvim, view) == ["def hello():", "    return 2"]
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", view["original"]) == [
        "def hello():",
        "    return 1",
    ]
    winbar = nvim.lua(
        "local win = ...; return vim.api.nvim_eval_statusline(vim.wo[win].winbar,"
        " {winid = win, maxwidth = 200}).str",
        view["proposal_win"],
    )
    assert winbar == " Proposed: hello.py   accept :w or \\a  reject :q or \\r"
    # The cursor starts at the first change.
    assert nvim.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 2
    assert events(nvim)[0][0] == "GeminiDiffOpened"
    opened = events(nvim)[0][1]
    assert opened["file_path"] == str(target)
    assert opened["proposal_buf"] == buf
    assert opened["new_file"] is False


def test_a_new_file_is_shown_against_an_empty_buffer(nvim: Nvim, conn: SyncMcpConnection) -> None:
    path = nvim.sandbox.root / "new.lua"
    ok(open_diff(conn, path, "return {}\n"))
    [view] = views(nvim)
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", view["original"]) == [
        ""
    ]
    assert nvim.lua("return vim.bo[...].filetype", view["proposal"]) == "lua"
    assert "new file" in nvim.lua("return vim.wo[...].winbar", view["original_win"])
    nvim.api.command("GeminiAccept")
    assert conn.next_notification("ide/diffAccepted") == {
        "filePath": str(path),
        "content": "return {}\n",
    }
    assert not path.exists(), "the plugin must not write the file: the CLI does"


def test_an_option_to_a_clis_diff_is_an_error_and_changes_nothing(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    ok(open_diff(conn, target, "def hello():\n    return 2\n"))
    [view] = views(nvim)
    assert nvim.api.eval("getcompletion('GeminiAccept ', 'cmdline')") == []
    for command in ("GeminiAccept proceed_always", "GeminiReject cancel"):
        with pytest.raises(pynvim.NvimError, match="it takes no option"):
            nvim.api.command(command)
        message, level = nvim.lua("return _G.messages[#_G.messages]")
        assert "This diff is the Gemini CLI's: it takes no option" in message
        assert level == 4  # vim.log.levels.ERROR
    assert [v["id"] for v in views(nvim)] == [view["id"]]
    nothing_sent_since(nvim, conn, "an option must not answer a CLI's diff")
    nvim.api.command("GeminiAccept")
    assert conn.next_notification("ide/diffAccepted") == {
        "filePath": str(target),
        "content": "def hello():\n    return 2\n",
    }


def test_a_new_file_in_new_folders_is_reviewable_and_nothing_is_created(
    nvim: Nvim, conn: SyncMcpConnection
) -> None:
    package = nvim.sandbox.root / "new_pkg"
    path = package / "sub" / "mod.py"
    ok(open_diff(conn, path, "x = 1\n"))
    [view] = views(nvim)
    assert view["file_path"] == str(path)
    assert "new file" in nvim.lua("return vim.wo[...].winbar", view["original_win"])
    assert not package.exists(), "opening the review must not create the folders"
    nvim.api.command("GeminiAccept")
    assert conn.next_notification("ide/diffAccepted") == {
        "filePath": str(path),
        "content": "x = 1\n",
    }
    no_views(nvim, "the diff tab to close")
    assert not package.exists(), "the plugin must not create anything: the CLI does"


# -- accepting -------------------------------------------------------------------------


def test_accept_command_sends_the_proposal_closes_the_tab_and_never_writes_the_file(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    before = target.read_bytes()
    ok(open_diff(conn, target, "def hello():\n    return 2\n"))
    nvim.api.command("GeminiAccept")
    params = conn.next_notification("ide/diffAccepted")
    assert params == {"filePath": str(target), "content": "def hello():\n    return 2\n"}
    no_views(nvim, "the diff tab to close")
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1
    assert target.read_bytes() == before
    assert f"{target} (proposal)" not in nvim.lua(
        "return vim.tbl_map(vim.api.nvim_buf_get_name, vim.api.nvim_list_bufs())"
    )
    closed = wait_for(
        lambda: [e for e in events(nvim) if e[0] == "GeminiDiffClosed"], 5, "GeminiDiffClosed"
    )
    assert closed[0][1]["result"] == "accepted"
    assert closed[0][1]["file_path"] == str(target)


def test_write_in_the_proposal_accepts_it_with_the_users_edits(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    ok(open_diff(conn, target, "def hello():\n    return 2\n"))
    nvim.api.command("normal! Goprint(hello())")
    nvim.api.command("1s/hello/hi/")
    nvim.api.command("write")
    params = conn.next_notification("ide/diffAccepted")
    assert params["content"] == "def hi():\n    return 2\nprint(hello())\n"
    no_views(nvim, "the diff tab to close")
    assert target.read_text() == "def hello():\n    return 1\n"


def test_wq_in_the_proposal_accepts_once_and_sends_no_rejection(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    ok(open_diff(conn, target, "x = 1\n"))
    nvim.api.command("wq")
    assert conn.next_notification("ide/diffAccepted")["content"] == "x = 1\n"
    no_views(nvim, "the diff tab to close")
    nothing_sent_since(nvim, conn, "no rejection after the accept")


def test_configured_keymaps_accept_and_reject(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = nvim_factory(setup={"diff": {"keymaps": {"accept": "ZA", "reject": "ZR"}}})
    nvim.wait_running()
    path = nvim.sandbox.root / "k.txt"
    with client_of(nvim) as conn:
        ok(open_diff(conn, path, "one\n"))
        assert "accept :w or ZA" in nvim.lua("return vim.wo.winbar")
        nvim.api.input("ZA")
        assert conn.next_notification("ide/diffAccepted")["content"] == "one\n"
        no_views(nvim, "the tab to close after ZA")
        ok(open_diff(conn, path, "two\n"))
        nvim.api.input("ZR")
        assert conn.next_notification("ide/diffRejected") == {"filePath": str(path)}
        no_views(nvim, "the tab to close after ZR")


def test_keymaps_can_be_turned_off_and_bad_ones_are_refused(
    nvim_factory: Callable[..., Nvim],
) -> None:
    nvim = nvim_factory(setup={"diff": {"keymaps": {"accept": False}}})
    nvim.wait_running()
    err = nvim.lua(
        "local ok, e = pcall(require('gemini_companion').setup, {diff = {keymaps = {acept = 'x'}}})"
        " return e"
    )
    assert "diff.keymaps.acept" in err
    err = nvim.lua(
        "local ok, e = pcall(require('gemini_companion').setup, {diff = {keymaps = {reject = 1}}})"
        " return e"
    )
    assert "diff.keymaps.reject" in err
    with client_of(nvim) as conn:
        ok(open_diff(conn, nvim.sandbox.root / "x.txt", "x\n"))
        assert "accept :w  reject :q or \\r" in nvim.lua("return vim.wo.winbar")
        maps = nvim.lua(
            "return vim.tbl_map(function(m) return m.lhs end, vim.api.nvim_buf_get_keymap(0, 'n'))"
        )
        assert maps == ["\\r"], "only reject's <LocalLeader>r is mapped"


# -- rejecting -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "how",
    ["GeminiReject", "quit", "tabclose", "close the left window, then the proposal's"],
)
def test_reject_paths_send_diff_rejected_and_close_the_tab(
    nvim: Nvim, conn: SyncMcpConnection, target: Path, how: str
) -> None:
    ok(open_diff(conn, target, "changed\n"))
    [view] = views(nvim)
    if how == "close the left window, then the proposal's":
        nvim.lua("vim.api.nvim_win_close(..., false)", view["original_win"])
        nvim.api.command("quit")
    else:
        nvim.api.command(how)
    assert conn.next_notification("ide/diffRejected") == {"filePath": str(target)}
    no_views(nvim, "the diff tab to close")
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1
    closed = [e for e in events(nvim) if e[0] == "GeminiDiffClosed"]
    assert [c[1]["result"] for c in closed] == ["rejected"]
    nothing_sent_since(nvim, conn, "one answer per diff")


def test_a_diff_tab_that_is_the_last_tab_closes_without_quitting(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    ok(open_diff(conn, target, "changed\n"))
    nvim.api.command("1tabclose")  # the original tab; only the diff's is left
    nvim.api.command("GeminiReject")
    conn.next_notification("ide/diffRejected")
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1
    assert nvim.lua("return vim.bo.buftype") == ""


# -- closeDiff -------------------------------------------------------------------------


def test_close_diff_returns_the_proposal_with_edits_as_json_and_sends_nothing(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    ok(open_diff(conn, target, "a\nb\n"))
    nvim.api.command("normal! Goc")
    result = ok(conn.call_tool("closeDiff", {"filePath": str(target)}))
    [part] = result["content"]
    assert part["type"] == "text"
    assert json.loads(part["text"]) == {"content": "a\nb\nc\n"}
    no_views(nvim, "closeDiff to close the tab")
    closed = [e for e in events(nvim) if e[0] == "GeminiDiffClosed"]
    assert [c[1]["result"] for c in closed] == ["closed"]
    nothing_sent_since(nvim, conn, "closeDiff sends no notification")
    again = conn.call_tool("closeDiff", {"filePath": str(target)})
    assert again["isError"] is True
    assert "no diff is open" in again["content"][0]["text"]


def test_close_diff_with_suppress_notification_as_the_cli_sends_it(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    ok(open_diff(conn, target, "z\n"))
    result = ok(
        conn.call_tool("closeDiff", {"filePath": str(target), "suppressNotification": True})
    )
    assert json.loads(result["content"][0]["text"]) == {"content": "z\n"}


# -- bad input -------------------------------------------------------------------------

BAD_OPEN: list[tuple[str, Callable[[Path], Any], str]] = [
    ("missing filePath", lambda d: {"newContent": "x"}, "'filePath' is missing"),
    ("filePath not a string", lambda d: {"filePath": 42, "newContent": "x"}, "must be a string"),
    ("missing newContent", lambda d: {"filePath": str(d / "f.txt")}, "'newContent' is missing"),
    (
        "newContent not a string",
        lambda d: {"filePath": str(d / "f.txt"), "newContent": ["x"]},
        "must be a string",
    ),
    ("relative path", lambda d: {"filePath": "src/f.txt", "newContent": "x"}, "absolute path"),
    ("empty path", lambda d: {"filePath": "", "newContent": "x"}, "absolute path"),
    ("directory", lambda d: {"filePath": str(d), "newContent": "x"}, "is a directory"),
    (
        "a file where a folder must be",
        lambda d: {"filePath": str(d / "init.lua" / "f.txt"), "newContent": "x"},
        "Not a directory",
    ),
    (
        "NUL in content",
        lambda d: {"filePath": str(d / "f.bin"), "newContent": "a\nb\0c"},
        "NUL character (line 2)",
    ),
    (
        "NUL at the very end of content",
        lambda d: {"filePath": str(d / "f.txt"), "newContent": "ok\n\0"},
        "NUL character (line 2)",
    ),
    (
        "control character in filePath",
        lambda d: {"filePath": str(d / "f\x1b[2J.txt"), "newContent": "x"},
        "control character",
    ),
    (
        "newline in filePath",
        lambda d: {"filePath": str(d / "f\n.txt"), "newContent": "x"},
        "control character",
    ),
]


def test_bad_open_diff_input_is_an_error_and_leaves_neovim_untouched(
    nvim: Nvim, conn: SyncMcpConnection
) -> None:
    snapshot = (
        "return {#vim.api.nvim_list_tabpages(), #vim.api.nvim_list_bufs(),"
        " #vim.api.nvim_list_wins()}"
    )
    before = nvim.lua(snapshot)
    for name, make, expected in BAD_OPEN:
        result = conn.call_tool("openDiff", make(nvim.sandbox.root))
        assert result["isError"] is True, name
        [part] = result["content"]
        assert expected in part["text"], (name, part["text"])
        assert "Traceback" not in part["text"]
    for name, arguments, expected in [
        ("closeDiff without filePath", {}, "'filePath' is missing"),
        ("closeDiff relative", {"filePath": "f.txt"}, "absolute path"),
        ("closeDiff, nothing open", {"filePath": str(nvim.sandbox.root / "f.txt")}, "no diff"),
        (
            "closeDiff bad suppressNotification",
            {"filePath": str(nvim.sandbox.root / "f.txt"), "suppressNotification": "yes"},
            "must be a boolean",
        ),
    ]:
        result = conn.call_tool("closeDiff", arguments)
        assert result["isError"] is True, name
        assert expected in result["content"][0]["text"], (name, result)
    # A lone surrogate cannot be sent by this client; raw JSON can carry one. The
    # transport refuses it before the tool runs (the tool would too: test_text.py).
    answer = raw_tool_call(
        nvim,
        "openDiff",
        '{"filePath": ' + json.dumps(str(nvim.sandbox.root / "f.txt")) + ', "newContent": '
        '"ok\\n\\ud800"}',
    )
    assert "error" in answer or answer["result"]["isError"] is True, answer
    assert nvim.lua(snapshot) == before
    assert views(nvim) == []
    assert nvim.lua("return _G.diff_events") == []


def raw_tool_call(nvim: Nvim, name: str, arguments_json: str) -> dict[str, Any]:
    """A tools/call whose arguments are sent as given (raw JSON text): the JSON-RPC answer."""
    url = f"http://127.0.0.1:{nvim.state()['port']}/mcp"
    with httpx2.Client(timeout=10) as http:
        headers = open_raw_session(http, url, nvim.token())
        body = (
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": '
            + json.dumps(name)
            + ', "arguments": '
            + arguments_json
            + "}}"
        )
        response = http.post(url, content=body, headers=headers)
        for line in response.text.splitlines():
            if line.startswith("data:"):
                return dict(json.loads(line[5:]))
        return dict(response.json())


# -- nothing lost: the text ------------------------------------------------------------

TEXT = st.lists(
    st.sampled_from(["a", "Z", " ", "\t", "\n", "\r", "\r\n", "é", "漢", "😀", "\x0b", "\x7f"]),
    max_size=40,
).map("".join)


@pytest.fixture
def roundtrip(nvim: Nvim, conn: SyncMcpConnection) -> Callable[[str], None]:
    path = nvim.sandbox.root / "roundtrip.txt"

    def check(content: str) -> None:
        ok(open_diff(conn, path, content))
        nvim.api.command("GeminiAccept")
        params = conn.next_notification("ide/diffAccepted")
        assert params["content"] == content
        no_views(nvim, "the tab to close")

    return check


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(content=TEXT)
@example(content="")
@example(content="\n")
@example(content="\n\n")
@example(content="no final newline")
@example(content="a\r\nb\r\n")
@example(content="a\r\nb")
@example(content="a\r\nb\nc\r\n")
@example(content="\r\n")
@example(content="\r")
@example(content="tab\there\n  spaces  \n")
@example(content="multibyte: é 漢字 😀 \u200b\n")
@example(content="x" * 200_000 + "\n" + "y" * 70_000)
def test_accepting_without_edits_returns_new_content_byte_for_byte(
    roundtrip: Callable[[str], None], content: str
) -> None:
    roundtrip(content)


BIG = 300_000  # past the size from which a proposal travels through a file


@pytest.mark.parametrize(
    "content",
    [
        ("x" * 79 + "\n") * (BIG // 80),
        ("x" * 78 + "\r\n") * (BIG // 80),
        ("x" * 78 + "\r\n") * (BIG // 80) + "no final newline",
        ("a\r\nb\n" + "y" * 77 + "\n") * (BIG // 80) + "\r",
        ("é 漢字 😀 \u200b" + "z" * 60 + "\n") * (BIG // 70),
        "one line, no newline " * (BIG // 20),
    ],
    ids=["unix", "dos", "dos-no-eol", "mixed-cr-at-end", "multibyte", "one-line"],
)
def test_big_proposals_go_through_a_private_file_and_come_back_byte_for_byte(
    nvim: Nvim, conn: SyncMcpConnection, content: str
) -> None:
    path = nvim.sandbox.root / "big.txt"
    neovim_tmp = Path(nvim.lua("return vim.fn.fnamemodify(vim.fn.tempname(), ':h')"))
    host_tmp = nvim.sandbox.root / "tmp"
    ok(open_diff(conn, path, content))
    [view] = views(nvim)
    expected_lines = content.removesuffix("\n").split("\n")
    if nvim.lua("return vim.bo[...].fileformat", view["proposal"]) == "dos":
        expected_lines = content.removesuffix("\r\n").split("\r\n")
    assert proposal_text(nvim, view) == expected_lines
    assert not list(host_tmp.glob("gemini-companion-diff-*")), "the handed-over file stays"
    result = ok(conn.call_tool("closeDiff", {"filePath": str(path)}))
    assert json.loads(result["content"][0]["text"])["content"] == content
    ok(open_diff(conn, path, content))
    nvim.api.command("GeminiAccept")
    assert conn.next_notification("ide/diffAccepted")["content"] == content
    no_views(nvim, "the tab to close")
    assert not list(neovim_tmp.iterdir()), "a file Neovim handed over was left behind"


def test_crlf_content_is_shown_as_dos_and_mixed_endings_keep_their_cr(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    ok(open_diff(conn, target, "a\r\nb\r\n"))
    [view] = views(nvim)
    assert nvim.lua("return vim.bo[...].fileformat", view["proposal"]) == "dos"
    assert proposal_text(nvim, view) == ["a", "b"]
    result = ok(conn.call_tool("closeDiff", {"filePath": str(target)}))
    assert json.loads(result["content"][0]["text"])["content"] == "a\r\nb\r\n"
    ok(open_diff(conn, target, "a\r\nb\n"))
    [view] = views(nvim)
    assert nvim.lua("return vim.bo[...].fileformat", view["proposal"]) == "unix"
    assert proposal_text(nvim, view) == ["a\r", "b"]
    nvim.api.command("normal! Goc")
    nvim.api.command("GeminiAccept")
    assert conn.next_notification("ide/diffAccepted")["content"] == "a\r\nb\nc\n"


def test_the_proposal_starts_its_undo_history_with_the_proposal(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    ok(open_diff(conn, target, "proposal\n"))
    nvim.api.command("silent! undo")
    nvim.api.command("GeminiAccept")
    assert conn.next_notification("ide/diffAccepted")["content"] == "proposal\n"


# -- nothing lost: the user's buffers --------------------------------------------------


def test_unsaved_buffer_is_the_left_side_and_keeps_its_changes(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    nvim.api.command(f"edit {target}")
    nvim.api.command("normal! Go# my unsaved line")
    user_buf = nvim.lua("return vim.api.nvim_get_current_buf()")
    proposal = "def hello():\n    return 2\n"
    ok(open_diff(conn, target, proposal))
    [view] = views(nvim)
    assert view["original"] == user_buf
    assert view["original_owned"] is False
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", user_buf)[-1] == (
        "# my unsaved line"
    )
    assert "unsaved changes" in nvim.lua("return vim.wo[...].winbar", view["original_win"])
    assert events(nvim)[0][1]["unsaved"] is True
    nvim.api.command("GeminiAccept")
    assert conn.next_notification("ide/diffAccepted")["content"] == proposal
    no_views(nvim, "the tab to close")
    # The CLI writes the file; the user's buffer keeps its edits and is not reloaded.
    target.write_text(proposal)
    wait_for(
        lambda: any("unsaved changes" in m for m, _ in nvim.lua("return _G.messages")),
        10,
        "the warning that the buffer was not reloaded",
    )
    lines = nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", user_buf)
    assert lines == ["def hello():", "    return 1", "# my unsaved line"]
    assert nvim.lua("return vim.bo[...].modified", user_buf) is True
    # diffoff restored the user's window options where the buffer is shown again.
    assert nvim.lua("return vim.wo.diff") is False


def test_unmodified_buffers_reload_without_a_prompt_after_the_cli_writes(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    other = nvim.sandbox.root / "other.py"
    other.write_text("unrelated\n")
    nvim.api.command(f"edit {target}")
    nvim.api.command(f"split {other}")
    nvim.api.command(f"split {target}")
    nvim.lua("vim.go.autoread = false")  # even so: no W11 prompt
    buf = nvim.lua("return vim.fn.bufnr(...)", str(target))
    new = "def hello():\n    return 'new'\n"
    ok(open_diff(conn, target, new))
    nvim.api.command("GeminiAccept")
    conn.next_notification("ide/diffAccepted")
    no_views(nvim, "the tab to close")
    target.write_text(new)  # what the CLI does
    wait_for(
        lambda: (
            nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf)
            == ["def hello():", "    return 'new'"]
        ),
        10,
        "the file's buffer to reload",
    )
    assert nvim.lua("return vim.bo[...].modified", buf) is False
    assert nvim.lua("return vim.api.nvim_get_mode().blocking") is False
    assert nvim.lua("return vim.go.autoread") is False
    assert nvim.lua("return vim.bo[...].autoread", buf) is None
    windows = nvim.lua("return vim.fn.win_findbuf(...)", buf)
    assert len(windows) == 2


def test_left_copy_of_an_unloaded_file_is_read_only_and_leaves_no_buffer(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    before = nvim.lua("return #vim.api.nvim_list_bufs()")
    ok(open_diff(conn, target, "changed\n"))
    [view] = views(nvim)
    assert view["original_owned"] is True
    assert nvim.lua("return vim.bo[...].modifiable", view["original"]) is False
    assert nvim.lua("return vim.fn.bufnr(...)", str(target)) == -1
    nvim.api.command("GeminiReject")
    conn.next_notification("ide/diffRejected")
    assert nvim.lua("return #vim.api.nvim_list_bufs()") == before


# -- sessions --------------------------------------------------------------------------


def test_a_disconnected_clis_diff_stays_marked_and_sends_nothing(nvim: Nvim, target: Path) -> None:
    with client_of(nvim) as other:
        with client_of(nvim) as conn:
            ok(open_diff(conn, target, "proposal\n"))
            nvim.api.command("normal! Go# edit")
        [view] = wait_views(nvim, 1)
        wait_for(
            lambda: views(nvim)[0]["state"] == "orphaned", 10, "the diff to be marked orphaned"
        )
        assert "disconnected" in nvim.lua("return vim.wo[...].winbar", view["proposal_win"])
        assert proposal_text(nvim, view) == ["proposal", "# edit"], "edits must survive"
        nvim.api.command("GeminiAccept")  # refused with a message, tab kept
        assert len(views(nvim)) == 1
        assert any("disconnected" in m for m, _ in nvim.lua("return _G.messages"))
        with pytest.raises(pynvim.NvimError, match="E37"):  # the edits are protected
            nvim.api.command("tabclose")
        nvim.api.command("GeminiReject")
        no_views(nvim, "the orphaned tab to close")
        closed = [e for e in events(nvim) if e[0] == "GeminiDiffClosed"]
        assert [c[1]["result"] for c in closed] == ["disconnected"]
        nothing_sent_since(nvim, other, "nothing may go to another session")
        # The file is free again for a new CLI.
        ok(open_diff(other, target, "again\n"))
        nvim.api.command("GeminiReject")
        assert other.next_notification("ide/diffRejected") == {"filePath": str(target)}
    log = nvim.sandbox.log_file.read_text()
    assert "orphaned" in log


def test_a_new_cli_may_replace_an_orphaned_diff_of_the_same_file(nvim: Nvim, target: Path) -> None:
    with client_of(nvim) as conn:
        ok(open_diff(conn, target, "first\n"))
    wait_for(lambda: views(nvim)[0]["state"] == "orphaned", 10, "orphaned")
    with client_of(nvim) as conn:
        ok(open_diff(conn, target, "second\n"))
        [view] = views(nvim)
        assert proposal_text(nvim, view) == ["second"]
        nvim.api.command("GeminiAccept")
        assert conn.next_notification("ide/diffAccepted")["content"] == "second\n"


def test_two_sessions_have_diffs_open_at_once_and_each_gets_its_own_answer(
    nvim: Nvim, target: Path
) -> None:
    other_file = nvim.sandbox.root / "other.txt"
    with client_of(nvim) as first, client_of(nvim) as second:
        ok(open_diff(first, target, "first\n"))
        ok(open_diff(second, other_file, "second\n"))
        taken = second.call_tool("openDiff", {"filePath": str(target), "newContent": "x"})
        assert taken["isError"] is True
        assert "another Gemini CLI session" in taken["content"][0]["text"]
        by_path = {v["file_path"]: v for v in wait_views(nvim, 2)}
        # closeDiff of another session's diff is refused.
        assert first.call_tool("closeDiff", {"filePath": str(other_file)})["isError"] is True
        tab = by_path[str(other_file)]["tab"]
        nvim.api.command(f"tabnext {nvim.lua('return vim.api.nvim_tabpage_get_number(...)', tab)}")
        nvim.api.command("GeminiAccept")
        assert second.next_notification("ide/diffAccepted") == {
            "filePath": str(other_file),
            "content": "second\n",
        }
        wait_views(nvim, 1)
        nvim.api.command("GeminiReject")  # the only one left, from any tab
        assert first.next_notification("ide/diffRejected") == {"filePath": str(target)}
        nothing_sent_since(nvim, first, "one answer to the first CLI")
        nothing_sent_since(nvim, second, "one answer to the second CLI")


SCREEN_ROW = """
local row = ...
local cells = {}
for col = 1, vim.o.columns do
  cells[#cells + 1] = vim.fn.screenstring(row, col)
end
return table.concat(cells)
"""


def test_diff_tab_labels_read_the_file_and_proposal_at_80_columns(nvim: Nvim) -> None:
    """Two proposals for files of the same name in different folders, next to the
    user's own tab: the default tabline (what `:redraw` draws on an 80x24 screen)
    names each by its file and says it is the proposal."""
    root = nvim.sandbox.root
    for folder in ("src", "lib"):
        (root / folder).mkdir()
        (root / folder / "calc.py").write_text("x = 1\n")
    nvim.lua("vim.cmd.edit({ args = { 'notes.md' } })")
    with client_of(nvim) as first, client_of(nvim) as second:
        ok(open_diff(first, root / "src" / "calc.py", "x = 2\n"))
        ok(open_diff(second, root / "lib" / "calc.py", "x = 3\n"))
        wait_views(nvim, 2)
        assert nvim.api.eval("[&columns, tabpagenr('$'), &showtabline]") == [80, 3, 1]
        nvim.api.command("redraw!")
        tabline = nvim.lua(SCREEN_ROW, 1)
        assert tabline.startswith(" notes.md  2 s/calc.py (proposal)  2 l/calc.py (proposal) "), (
            tabline
        )
        assert "//" not in tabline
        # A tabline plugin's way: the tail of each tab's current buffer name.
        nvim.lua(
            "function _G.plugin_tabline()"
            " local labels = {}"
            " for n = 1, vim.fn.tabpagenr('$') do"
            "   local buf = vim.fn.tabpagebuflist(n)[vim.fn.tabpagewinnr(n)]"
            "   labels[#labels + 1] = ' ' .. vim.fn.fnamemodify(vim.fn.bufname(buf), ':t') .. ' '"
            " end"
            " return table.concat(labels, '|')"
            " end"
            " vim.o.tabline = '%!v:lua.plugin_tabline()'"
        )
        nvim.api.command("redraw!")
        assert nvim.lua(SCREEN_ROW, 1).rstrip() == (
            " notes.md | calc.py (proposal) | calc.py (proposal)"
        )
        nvim.lua("vim.o.tabline = ''")
        # Each proposal still accepts with :w (the name is no file's).
        nvim.api.command("write")
        assert second.next_notification("ide/diffAccepted") == {
            "filePath": str(root / "lib" / "calc.py"),
            "content": "x = 3\n",
        }
        wait_views(nvim, 1)
        nvim.api.command("GeminiReject")
        assert first.next_notification("ide/diffRejected") == {
            "filePath": str(root / "src" / "calc.py")
        }
    assert (root / "src" / "calc.py").read_text() == "x = 1\n"
    assert not (root / "src" / "calc.py (proposal)").exists()
    assert not (root / "lib" / "calc.py (proposal)").exists()


def test_edit_bang_in_the_proposal_brings_the_proposal_back(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    """`:e!` discards the user's edits, as in any buffer: the proposal as it came
    comes back (the buffer's name is no file to read), and accepting it sends it."""
    proposal = "def hello():\n    return 2"  # no final newline
    ok(open_diff(conn, target, proposal))
    [view] = views(nvim)
    nvim.api.command("normal! Goextra")
    nvim.api.command("edit!")
    assert proposal_text(nvim, view) == ["def hello():", "    return 2"]
    assert nvim.lua("return {vim.bo.modified, vim.bo.eol}") == [False, False]
    assert [v["id"] for v in views(nvim)] == [view["id"]]
    # The left side, a copy of the file on disk: `:e!` reads the file again.
    target.write_text("def hello():\n    return 3\n")
    nvim.lua("vim.api.nvim_set_current_win(...)", view["original_win"])
    nvim.api.command("edit!")
    assert nvim.api.current.buffer[:] == ["def hello():", "    return 3"]
    assert nvim.lua("return {vim.bo.modified, vim.bo.modifiable}") == [False, False]
    nvim.lua("vim.api.nvim_set_current_win(...)", view["proposal_win"])
    nvim.api.command("write")
    assert conn.next_notification("ide/diffAccepted") == {
        "filePath": str(target),
        "content": proposal,
    }


def test_a_file_really_named_like_a_proposal_keeps_its_buffer(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    user = nvim.sandbox.root / "hello.py (proposal)"
    user.write_text("mine\n")
    nvim.lua("vim.cmd.edit({ args = { ... }, magic = { file = false } })", str(user))
    nvim.api.command("normal! Ounsaved")
    user_buf = nvim.lua("return vim.api.nvim_get_current_buf()")
    ok(open_diff(conn, target, "def hello():\n    return 2\n"))
    [view] = views(nvim)
    assert nvim.lua("return vim.fn.bufname(...)", view["proposal"]) == "hello.py (proposal 2)"
    nvim.api.command("write")
    assert conn.next_notification("ide/diffAccepted")["content"] == "def hello():\n    return 2\n"
    no_views(nvim, "the diff tab to close")
    assert nvim.api.buffers[user_buf][:] == ["unsaved", "mine"]  # type: ignore[index]
    assert user.read_text() == "mine\n"


def test_a_second_open_diff_from_the_same_session_replaces_the_first_silently(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    ok(open_diff(conn, target, "one\n"))
    ok(open_diff(conn, target, "two\n"))
    [view] = views(nvim)
    assert proposal_text(nvim, view) == ["two"]
    nvim.api.command("GeminiAccept")
    # The first diff got no answer: the accept of the second is the first one sent.
    answers = [n for n in conn.notifications_until("ide/diffAccepted") if n[0].startswith("ide/")]
    answers = [n for n in answers if n[0] != "ide/contextUpdate"]
    assert answers == [("ide/diffAccepted", {"filePath": str(target), "content": "two\n"})]


def test_stopping_the_server_keeps_open_diffs_marked_and_a_restart_starts_afresh(
    nvim: Nvim, target: Path
) -> None:
    with client_of(nvim) as conn:
        ok(open_diff(conn, target, "before stop\n"))
        nvim.api.command("GeminiCompanionStop")
        wait_for(lambda: views(nvim)[0]["state"] == "orphaned", 10, "the diff to be orphaned")
    nvim.start()
    other = nvim.sandbox.root / "other.txt"
    with client_of(nvim) as conn:
        ok(open_diff(conn, other, "after restart\n"))
        by_path = {v["file_path"]: v for v in wait_views(nvim, 2)}
        assert by_path[str(target)]["state"] == "orphaned"
        assert by_path[str(other)]["state"] == "open"
        assert by_path[str(target)]["id"] != by_path[str(other)]["id"]
        nvim.api.command("tabfirst")  # outside both diff tabs: the live one is meant
        nvim.api.command("GeminiAccept")
        assert conn.next_notification("ide/diffAccepted")["content"] == "after restart\n"
    # The accepted view closes once diff.py says the answer went out, which may be
    # after the client read it: awaited, not assumed.
    [left] = wait_views(nvim, 1, "the accepted view to close")
    assert left["file_path"] == str(target)


def test_a_view_that_fails_to_open_is_an_error_and_leaves_nothing_behind(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    snapshot = "return {#vim.api.nvim_list_tabpages(), #vim.api.nvim_list_bufs()}"
    before = nvim.lua(snapshot)
    nvim.lua(
        "vim.api.nvim_create_autocmd('TabNew', {once = true,"
        " callback = function() error('a broken TabNew handler') end})"
    )
    result = conn.call_tool("openDiff", {"filePath": str(target), "newContent": "x\n"})
    assert result["isError"] is True
    assert "a broken TabNew handler" in result["content"][0]["text"]
    assert nvim.lua(snapshot) == before
    assert views(nvim) == []
    ok(open_diff(conn, target, "x\n"))  # and the next one works
    nvim.api.command("GeminiAccept")
    assert conn.next_notification("ide/diffAccepted")["content"] == "x\n"


def test_commands_without_an_open_diff_say_so(nvim: Nvim) -> None:
    nvim.api.command("GeminiAccept")
    nvim.api.command("GeminiReject")
    messages = [m for m, _ in nvim.lua("return _G.messages")]
    assert messages.count("no Gemini diff is open") == 2


# -- the real client -------------------------------------------------------------------


@pytest.mark.usefixtures("interop")
def test_real_ide_client_gets_accepted_edits_and_rejections(nvim: Nvim, target: Path) -> None:
    env = nvim.job_env()
    client = IdeClientProcess(env, nvim.sandbox.root)
    try:
        assert client.connect()["status"] == "connected"
        client.send(
            cmd="openDiff", filePath=str(target), newContent="def hello():\n    return 2\n", id=1
        )
        wait_views(nvim, 1)
        nvim.api.command("normal! Go# reviewed")
        nvim.api.command("GeminiAccept")
        result = client.expect("diff", lambda e: e["id"] == 1)["result"]
        assert result == {
            "status": "accepted",
            "content": "def hello():\n    return 2\n# reviewed\n",
        }
        no_views(nvim, "the tab to close")

        client.send(cmd="openDiff", filePath=str(target), newContent="nope\n", id=2)
        wait_views(nvim, 1)
        nvim.api.command("GeminiReject")
        assert client.expect("diff", lambda e: e["id"] == 2)["result"] == {"status": "rejected"}

        # The CLI answered in its terminal instead: closeDiff gives it the proposal's text.
        client.send(cmd="openDiff", filePath=str(target), newContent="from the terminal\n", id=3)
        wait_views(nvim, 1)
        client.send(
            cmd="closeDiff", filePath=str(target), id=4, options={"suppressNotification": True}
        )
        assert client.expect("closeDiff", lambda e: e["id"] == 4)["result"] == "from the terminal\n"
        no_views(nvim, "closeDiff to close the tab")
    finally:
        client.close()
    assert target.read_text() == "def hello():\n    return 1\n"


# -- end to end: the real gemini binary ------------------------------------------------

GEMINI = INTEROP / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"


def _model_turn(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10},
    }


def _fake_responses(path: Path, target: Path, content: str) -> None:
    """A canned model: one turn calling write_file, then a text turn. Non-strict mode
    takes responses by method, so the spare generateContent answers cover the CLI's
    own side requests (next-speaker checks) whatever their number."""
    turns = [
        {
            "method": "generateContentStream",
            "response": [
                _model_turn(
                    [
                        {
                            "functionCall": {
                                "name": "write_file",
                                "args": {"file_path": str(target), "content": content},
                            }
                        }
                    ]
                )
            ],
        },
        {"method": "generateContentStream", "response": [_model_turn([{"text": "Done."}])]},
    ]
    side = _model_turn([{"text": json.dumps({"reasoning": "done", "next_speaker": "user"})}])
    turns += [{"method": "generateContent", "response": side}] * 5
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))


@pytest.mark.usefixtures("interop")
def test_real_gemini_cli_in_a_terminal_writes_what_was_accepted_in_neovim(
    nvim_factory: Callable[..., Nvim], sandbox: Sandbox
) -> None:
    project = sandbox.root / "project"
    project.mkdir()
    nvim = nvim_factory(cwd=project)
    nvim.wait_running()
    home = sandbox.root / "home"
    (home / ".gemini").mkdir(parents=True)
    settings = {
        "ide": {"enabled": True, "hasSeenNudge": True},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"disableAutoUpdate": True},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    target = project / "notes.txt"
    target.write_text("old line\n")
    fake = sandbox.root / "fake-responses.jsonl"
    _fake_responses(fake, target, "new line\n")
    nvim.api.command(f"edit {target}")  # open and unmodified: must reload after the write
    buf = nvim.lua("return vim.api.nvim_get_current_buf()")
    # The terminal job gets the plugin's IDE variables (and REMOTE_CONTAINERS in a
    # container) and the sandbox's TMPDIR from Neovim's environment.
    nvim.lua(
        "local cmd, cwd, env = ...; vim.cmd('tabnew')"
        "; vim.fn.jobstart(cmd, {term = true, cwd = cwd, env = env})"
        "; _G.gemini_term = vim.api.nvim_get_current_buf()",
        ["node", str(GEMINI), "--fake-responses-non-strict", str(fake), "-i", "Update notes.txt"],
        str(project),
        {"HOME": str(home), "GEMINI_API_KEY": "offline-test-key"},
    )

    def screen() -> str:
        lines = nvim.lua("return vim.api.nvim_buf_get_lines(_G.gemini_term, 0, -1, false)")
        return "\n".join(line.rstrip() for line in lines if line.strip())

    try:
        view = wait_for(
            lambda: (v := views(nvim)) and v[0], 120, "the gemini CLI's diff to open in Neovim"
        )
        assert view["file_path"] == str(target)
        assert proposal_text(nvim, view) == ["new line"]
        nvim.api.command("normal! Go# reviewed in Neovim")
        nvim.api.command("GeminiAccept")
        accepted = "new line\n# reviewed in Neovim\n"
        wait_for(lambda: target.read_text() == accepted, 60, "the CLI to write the file")
        wait_for(
            lambda: (
                nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf)
                == ["new line", "# reviewed in Neovim"]
            ),
            10,
            "the file's buffer to reload",
        )
        wait_for(lambda: "Done." in screen(), 60, "the CLI to finish its turn")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- gemini terminal ---\n{screen()}") from None
    assert "Accepted" in screen()


# -- accepted unchanged: the proposal goes back as the client sent it ------------------

# The answers diff.lua sends to the Python side, kept for the tests below.
RECORD_ACCEPTS = """
_G.accept_bodies = {}
local host = require('gemini_companion.host')
local send = host.diff_accept
host.diff_accept = function(id, body, ...)
  table.insert(_G.accept_bodies, type(body) == 'table' and body or 'text')
  return send(id, body, ...)
end
"""

# Quotes, backslashes, the text of an escape, raw UTF-8 (and a line separator, which
# JSON leaves raw), CRLF endings, a tab, no final newline; past the size set aside.
TRICKY = (
    'say "hi" \\ C:\\path\\n \\u00e9 é 漢字 😀 \u2028 \t tab\r\n' * (BIG // 40)
) + "no final newline"


def kept_folders(nvim: Nvim) -> list[Path]:
    return list((nvim.sandbox.root / "tmp").glob("gemini-companion-accept-*"))


@pytest.mark.usefixtures("interop")
def test_an_unchanged_accept_sends_the_proposal_as_the_real_client_sent_it(
    nvim: Nvim, target: Path
) -> None:
    nvim.lua(RECORD_ACCEPTS)
    client = IdeClientProcess(nvim.job_env(), nvim.sandbox.root)
    try:
        assert client.connect()["status"] == "connected"
        client.send(cmd="openDiff", filePath=str(target), newContent=TRICKY, id=1)
        wait_views(nvim, 1)
        [folder] = kept_folders(nvim)
        assert [p.stat().st_mode & 0o777 for p in folder.iterdir()] == [0o600]
        nvim.api.command("GeminiAccept")
        result = client.expect("diff", lambda e: e["id"] == 1)["result"]
        assert result == {"status": "accepted", "content": TRICKY}
        assert nvim.lua("return _G.accept_bodies") == [{"unchanged": True}]
        assert not kept_folders(nvim), "the kept proposal stays after an accept"

        # Any change, even one undone, sends the buffer's text, which is then the same.
        client.send(cmd="openDiff", filePath=str(target), newContent=TRICKY, id=2)
        wait_views(nvim, 1)
        nvim.api.command("normal! Gox")
        nvim.api.command("undo")
        nvim.api.command("GeminiAccept")
        result = client.expect("diff", lambda e: e["id"] == 2)["result"]
        assert result == {"status": "accepted", "content": TRICKY}
        assert nvim.lua("return _G.accept_bodies")[1] != {"unchanged": True}
        assert not kept_folders(nvim)

        # Edited: the edit is sent.
        client.send(cmd="openDiff", filePath=str(target), newContent=TRICKY, id=3)
        wait_views(nvim, 1)
        nvim.api.command("normal! ggiedited ")
        nvim.api.command("GeminiAccept")
        result = client.expect("diff", lambda e: e["id"] == 3)["result"]
        assert result == {"status": "accepted", "content": "edited " + TRICKY}
        assert not kept_folders(nvim)
    finally:
        client.close()
    no_views(nvim, "the tab to close")


def test_the_accepted_bytes_are_the_json_string_the_client_sent(nvim: Nvim, target: Path) -> None:
    """Escapes (\\u00e9 for é, \\/ for /) come back as they were written."""
    port, token = nvim.state()["port"], nvim.token()
    url = f"http://127.0.0.1:{port}/mcp"
    content = ('é/"\\' + "x" * 70 + "\r\n") * (BIG // 70) + "end"
    token_sent = json.dumps(content).replace("/", "\\/")  # ASCII, é as \u00e9
    events: list[bytes] = []
    with httpx2.Client(timeout=30) as http:
        headers = open_raw_session(http, url, token)

        def listen() -> None:
            get = {**headers, "Accept": "text/event-stream"}
            with http.stream("GET", url, headers=get) as response:
                for chunk in response.iter_bytes():
                    events.append(chunk)
                    seen = b"".join(events)
                    if b"ide/diffAccepted" in seen and seen.endswith(b"\n\n"):
                        return

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        wait_for(lambda: nvim.state()["sessions"] or None, 10, "the GET stream to open")
        body = (
            '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"openDiff",'
            f'"arguments":{{"filePath":{json.dumps(str(target))},"newContent":{token_sent}}}}}}}'
        )
        answer = http.post(url, content=body.encode(), headers=headers)
        assert answer.status_code == 200, answer.text
        wait_views(nvim, 1)
        nvim.api.command("GeminiAccept")
        listener.join(10)
        assert not listener.is_alive(), "no ide/diffAccepted on the stream"
    stream = b"".join(events)
    event = stream[stream.rindex(b"data: ") + len(b"data: ") :].rstrip(b"\n")
    assert event.endswith(b',"content":' + token_sent.encode() + b"}}")
    assert json.loads(event)["params"] == {"filePath": str(target), "content": content}
    assert not kept_folders(nvim)


def test_the_kept_proposal_is_removed_however_the_diff_ends(
    nvim: Nvim, conn: SyncMcpConnection, target: Path
) -> None:
    content = TRICKY
    ok(open_diff(conn, target, content))
    assert len(kept_folders(nvim)) == 1
    nvim.api.command("GeminiReject")
    conn.next_notification("ide/diffRejected")
    assert not kept_folders(nvim), "kept after a reject"

    ok(open_diff(conn, target, content))
    result = ok(conn.call_tool("closeDiff", {"filePath": str(target)}))
    assert json.loads(result["content"][0]["text"])["content"] == content
    assert not kept_folders(nvim), "kept after closeDiff"

    ok(open_diff(conn, target, content))
    ok(open_diff(conn, target, content + "!"))  # replaces the first
    assert len(kept_folders(nvim)) == 1, "the replaced diff's proposal stays"

    outside = Path("/") / "gemini-companion-nowhere" / "x.txt"
    assert open_diff(conn, outside, content)["isError"]
    bad = conn.call_tool("openDiff", {"filePath": "relative.txt", "newContent": content})
    assert bad["isError"]
    assert len(kept_folders(nvim)) == 1, "a refused openDiff left its proposal"

    nvim.api.command("GeminiCompanionStop")
    wait_for(lambda: views(nvim)[0]["state"] == "orphaned", 10, "the diff to be orphaned")
    assert not kept_folders(nvim), "kept after the server stopped"


# -- no path reaches an Ex command line --------------------------------------------------

# Names a workspace can hold (git allows them): a newline ends an Ex command, and
# what follows runs. `fnameescape()` leaves all of these characters alone.
HOSTILE_NAMES = [
    "x\nlua=vim.fn.mkdir(vim.env.GEMINI_MARKER)",
    "x\rlua=vim.fn.mkdir(vim.env.GEMINI_MARKER)",
    "x\n|lua=vim.fn.mkdir(vim.env.GEMINI_MARKER)",
    "x\x16\nlua=vim.fn.mkdir(vim.env.GEMINI_MARKER)",
]

OPEN_VIEW = """
local spec = ...
local ok, err = pcall(require('gemini_companion.diff')._open, spec)
return {ok, tostring(err)}
"""


@pytest.mark.parametrize("where", ["on-disk", "loaded", "unloaded"])
def test_a_file_name_with_a_newline_runs_nothing_in_the_diff_view(
    nvim_factory: Callable[..., Nvim], tmp_path: Path, where: str
) -> None:
    loaded = where == "loaded"
    marker = tmp_path / "marker"
    # The Lua view alone, as diff.py or an agent's edit would open it: the Python
    # side's control-character check is not in the way here.
    nvim = nvim_factory(env={"GEMINI_MARKER": str(marker)})
    nvim.wait_running()
    for n, name in enumerate(HOSTILE_NAMES):
        path = nvim.sandbox.root / name
        path.write_bytes(b"on disk\r\nsecond\r\n")
        # What `:read` would open of an escaped name cut at the newline: present,
        # so that a command line built from the name gets as far as its next line.
        (nvim.sandbox.root / (name.split("\n")[0] + "\\")).write_text("decoy\n")
        if where == "unloaded":  # a buffer for the file, not loaded: read through libuv
            nvim.lua("vim.fn.bufadd(...)", str(path))
        if loaded:
            buf = nvim.lua("local b = vim.api.nvim_create_buf(true, false); return b")
            nvim.lua(
                "local b, p = ...; vim.api.nvim_buf_set_name(b, p);"
                " vim.api.nvim_buf_set_lines(b, 0, -1, false, {'loaded'})",
                buf,
                str(path),
            )
        spec = {
            "id": 100 + n,
            "file_path": str(path),
            "text": "proposed",
            "eol": True,
            "fileformat": "unix",
            "session": "agent",
        }
        opened, err = nvim.lua(OPEN_VIEW, spec)
        assert opened is True, err
        assert not marker.exists(), f"{name!r}: the file name ran a command"
        [view] = [v for v in views(nvim) if v["id"] == 100 + n]
        left = nvim.api.buffers[view["original"]][:]  # type: ignore[index]
        assert left == (["loaded"] if loaded else ["on disk", "second"]), left
        if not loaded:
            assert nvim.lua("return vim.bo[...].fileformat", view["original"]) == "dos"
            assert nvim.lua("return vim.api.nvim_buf_get_name(...)", view["original"]) == (
                f"{path} (on disk)"
            )
        assert nvim.lua("return vim.api.nvim_buf_get_name(...)", view["proposal"]) == (
            f"{path} (proposal)"
        )
        nvim.lua("require('gemini_companion.diff')._close(...)", 100 + n, "closed")
    assert not marker.exists()


COMPARE_WITH_EDIT = """
local path = ...
local text = require('gemini_companion.diff.text')
local copy = vim.api.nvim_create_buf(false, true)
text.load_file(copy, path)
local native = text.load_native(path, 'gemini://current' .. path, {})
vim.cmd.edit({ args = { path }, bang = true, magic = { file = false } })
local edited = vim.api.nvim_get_current_buf()
local function seen(buf)
  local bo = vim.bo[buf]
  return {
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    fileformat = bo.fileformat, fileencoding = bo.fileencoding, eol = bo.eol, bomb = bo.bomb,
  }
end
local result = { seen(copy), seen(native), seen(edited) }
vim.cmd.enew()
for _, buf in ipairs({ edited, copy, native }) do
  vim.api.nvim_buf_delete(buf, { force = true })
end
return result
"""


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\n",
        b"one\ntwo\n",
        b"one\ntwo",
        b"one\r\ntwo\r\n",
        b"one\r\ntwo",
        b"one\r\ntwo\nthree\r\n",
        b"\r\n",
        b"a\rb\rc",
        b"nul\x00inside\n",
        "é 漢字 😀\n".encode(),
        "\ufeffbom\r\n".encode(),
        "caf\xe9\r\n".encode("latin1"),
        b"\xed\xa0\x80 surrogate\n",
        b"\xc0\x80 \xf8\x88\x80\x80\x80 \xfc\x84\x80\x80\x80\x80 long forms\n",
        b"\xc3",
        b"\xc3\n",
        b"\xfe\n",
    ],
    ids=[
        "empty",
        "one-newline",
        "unix",
        "unix-no-eol",
        "dos",
        "dos-no-eol",
        "mixed",
        "one-crlf",
        "cr-only",
        "nul",
        "utf8",
        "bom",
        "latin1",
        "surrogate",
        "long-forms",
        "cut-at-end",
        "cut-at-newline",
        "never-utf8",
    ],
)
def test_the_left_copy_reads_a_file_as_edit_does_either_way(nvim: Nvim, content: bytes) -> None:
    path = nvim.sandbox.root / "sample.txt"
    path.write_bytes(content)
    copy, native, edited = nvim.lua(COMPARE_WITH_EDIT, str(path))
    assert copy == edited
    assert native == edited
