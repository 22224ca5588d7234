"""Consent over ACP (issue 21) and hostile agent output (issue 23): what the panel lets
an agent do without the user, tried as a confused or hostile agent would.

Real parts: a headless Neovim with the plugin and its Python host, driving either the
real ``gemini`` 0.61.0 in ``--acp`` mode (offline, canned model answers) or, for what
the real agent cannot be made to do, the scripted hostile agent
(tests/agent_fakes/hostile_acp.py: raw JSON-RPC lines, every line it reads logged).
Each test asserts what the agent was answered (the log), what reached the disk and
what the user sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_setup import acp_setup, agent_state, transcript, wait_agent, wait_transcript
from fake_model import call, gemini_home, text, write_responses
from harness import Nvim, json_lines, wait_for

HOSTILE = Path(__file__).parent / "agent_fakes" / "hostile_acp.py"
WAIT = 30

# Fixes that land in the next steps (each test fails on the code before its fix).


ALLOW_ONLY = [
    {"optionId": "proceed_always", "name": "Allow always", "kind": "allow_always"},
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
]
GEMINI_OPTIONS = [*ALLOW_ONLY, {"optionId": "cancel", "name": "Reject", "kind": "reject_once"}]
MODES = {
    "modes": {
        "currentModeId": "default",
        "availableModes": [
            {"id": "default", "name": "Default"},
            {"id": "autoEdit", "name": "Auto edit"},
            {"id": "yolo", "name": "YOLO"},
        ],
    }
}


def edit_request(
    path: str | Path,
    *,
    call_id: str = "edit-1",
    old: str | None = "old\n",
    new: str = "new\n",
    options: Sequence[dict[str, str]] = GEMINI_OPTIONS,
    wait: bool = True,
) -> dict[str, Any]:
    """A ``session/request_permission`` step for an edit, as 0.61.0 sends one."""
    return {
        "call": "session/request_permission",
        "wait": wait,
        "params": {
            "sessionId": "$SESSION",
            "toolCall": {
                "toolCallId": call_id,
                "status": "pending",
                "title": f"Edit {os.path.basename(str(path))}",
                "kind": "edit",
                "content": [{"type": "diff", "path": str(path), "oldText": old, "newText": new}],
                "locations": [{"path": str(path)}],
            },
            "options": list(options),
        },
    }


def exec_request(
    command: str,
    *,
    call_id: str = "shell-1",
    options: Sequence[dict[str, str]] = GEMINI_OPTIONS,
    wait: bool = True,
) -> dict[str, Any]:
    return {
        "call": "session/request_permission",
        "wait": wait,
        "params": {
            "sessionId": "$SESSION",
            "toolCall": {
                "toolCallId": call_id,
                "status": "pending",
                "title": command,
                "kind": "execute",
            },
            "options": list(options),
        },
    }


def write_request(path: str | Path, content: str) -> dict[str, Any]:
    return {
        "call": "fs/write_text_file",
        "params": {"sessionId": "$SESSION", "path": str(path), "content": content},
    }


def read_request(path: str | Path, **extra: int) -> dict[str, Any]:
    return {
        "call": "fs/read_text_file",
        "params": {"sessionId": "$SESSION", "path": str(path), **extra},
    }


def say(text: str) -> dict[str, Any]:
    return {
        "notify": "session/update",
        "params": {
            "sessionId": "$SESSION",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            },
        },
    }


class Hostile:
    """One Neovim with the panel on the scripted hostile agent."""

    def __init__(self, nvim: Nvim, root: Path, work: Path, log: Path) -> None:
        self.nvim = nvim
        self.root = root
        self.work = work
        self.log = log

    # -- what the agent saw -----------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        return json_lines(self.log)

    def sent(self, method: str) -> list[dict[str, Any]]:
        """The requests the agent sent with ``method``, in order."""
        return [
            e["msg"]
            for e in self.entries()
            if e["dir"] == "out" and e["msg"].get("method") == method and "id" in e["msg"]
        ]

    def answer_to(self, request: dict[str, Any]) -> dict[str, Any] | None:
        for entry in self.entries():
            msg = entry.get("msg") or {}
            if entry["dir"] == "in" and "method" not in msg and msg.get("id") == request["id"]:
                return dict(msg)
        return None

    def answers(self, method: str) -> list[dict[str, Any] | None]:
        return [self.answer_to(r) for r in self.sent(method)]

    def wait_answers(self, method: str, count: int, timeout: float = WAIT) -> list[dict[str, Any]]:
        def check() -> list[dict[str, Any]] | None:
            got = self.answers(method)
            done = [a for a in got if a is not None]
            return done if len(done) >= count else None

        try:
            return wait_for(check, timeout, f"{count} answers to {method}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- transcript ---\n{self.transcript()}") from None

    # -- what the user sees -----------------------------------------------------------

    def transcript(self) -> str:
        return transcript(self.nvim)

    def state(self) -> dict[str, Any]:
        return agent_state(self.nvim)

    def views(self) -> list[dict[str, Any]]:
        return list(self.nvim.lua("return require('gemini_companion.diff').views()"))

    def wait_transcript(self, needle: str, timeout: float = WAIT) -> str:
        return wait_transcript(self.nvim, needle, timeout)

    def wait_state(
        self, what: str, check: Callable[[dict[str, Any]], bool], timeout: float = WAIT
    ) -> dict[str, Any]:
        return wait_agent(self.nvim, what, check, timeout)

    def wait_pending(self, count: int = 1) -> list[dict[str, Any]]:
        state = self.wait_state(f"{count} pending", lambda s: len(s["pending"]) >= count)
        return list(state["pending"])

    def wait_idle(self) -> dict[str, Any]:
        return self.wait_state("the turn to end", lambda s: s["state"] == "idle")

    def prompt(self, text: str = "go") -> None:
        self.nvim.api.command(f"GeminiAgent {text}")


@pytest.fixture
def hostile(nvim_factory: Callable[..., Nvim], tmp_path: Path) -> Callable[..., Hostile]:
    def start(turns: Sequence[Sequence[dict[str, Any]]], **new_session: Any) -> Hostile:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"turns": turns, "new_session": new_session}))
        log = tmp_path / "agent-log.jsonl"
        cmd = [sys.executable, str(HOSTILE), str(script), str(log)]
        nvim = nvim_factory(
            cwd=work,
            setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd, "cancel_timeout": 2}}},
        )
        nvim.wait_running()
        return Hostile(nvim, tmp_path, work, log)

    return start


def outcome(answer: dict[str, Any] | None) -> dict[str, Any]:
    assert answer is not None and "result" in answer, answer
    return dict(answer["result"]["outcome"])


# -- 21.4: rejecting never selects an allow-kind option ----------------------------------


def test_reject_in_the_panel_answers_cancelled_when_the_agent_offers_no_reject_option(
    hostile: Callable[..., Hostile],
) -> None:
    agent = hostile([[exec_request("rm -rf build", options=ALLOW_ONLY), say("after")]])
    agent.prompt()
    agent.wait_pending()
    agent.nvim.api.command("GeminiReject")
    [answer] = agent.wait_answers("session/request_permission", 1)
    assert outcome(answer) == {"outcome": "cancelled"}
    agent.wait_idle()


@pytest.mark.parametrize("how", ["GeminiReject", "tabclose"])
def test_rejecting_an_edit_in_the_diff_tab_answers_cancelled_when_no_reject_option_is_offered(
    hostile: Callable[..., Hostile], tmp_path: Path, how: str
) -> None:
    target = tmp_path / "work" / "shown.txt"
    target.parent.mkdir()
    target.write_text("old\n")
    agent = hostile([[edit_request(target, options=ALLOW_ONLY), say("after")]])
    agent.prompt()
    agent.wait_pending()
    wait_for(agent.views, WAIT, "the diff tab")
    agent.nvim.api.command("tablast")
    agent.nvim.api.command(how)
    [answer] = agent.wait_answers("session/request_permission", 1)
    assert outcome(answer) == {"outcome": "cancelled"}
    agent.wait_idle()
    assert target.read_text() == "old\n"


def test_reject_naming_an_allow_option_is_refused_and_answers_nothing(
    hostile: Callable[..., Hostile],
) -> None:
    agent = hostile([[exec_request("make install"), say("after")]])
    agent.prompt()
    [pending] = agent.wait_pending()
    agent.nvim.api.command("GeminiReject proceed_always")
    # Told in full in the transcript, and in one line that fits in the message area.
    wait_for(lambda: "not a way to reject" in agent.transcript(), WAIT, "the refusal told")
    messages = lambda: agent.nvim.lua(  # noqa: E731
        "return vim.api.nvim_exec2('messages', {output = true}).output"
    )
    wait_for(
        lambda: "Gemini agent: make install: 'proc" in messages(), WAIT, "the refusal's message"
    )
    assert "(more in the transcript)" in messages()
    assert agent.answers("session/request_permission") == [None]
    assert agent.state()["pending"] == [pending]
    agent.nvim.api.command("GeminiReject")
    [answer] = agent.wait_answers("session/request_permission", 1)
    assert outcome(answer) == {"outcome": "selected", "optionId": "cancel"}


# -- 21.8: request ids are unique per pending request ------------------------------------


def test_two_requests_with_one_tool_call_id_are_two_requests_each_answered(
    hostile: Callable[..., Hostile],
) -> None:
    agent = hostile(
        [
            [
                exec_request("echo first", call_id="dup", wait=False),
                exec_request("echo second", call_id="dup", wait=False),
                {"await": "all"},
                say("both answered"),
            ]
        ]
    )
    agent.prompt()
    pending = agent.wait_pending(2)
    assert len({p["id"] for p in pending}) == 2, pending
    assert [p["command"] for p in pending] == ["echo first", "echo second"]
    agent.nvim.api.command("GeminiAccept")
    first, second = agent.sent("session/request_permission")
    wait_for(lambda: agent.answer_to(first), WAIT, "the first request answered")
    assert outcome(agent.answer_to(first)) == {"outcome": "selected", "optionId": "proceed_once"}
    assert agent.answer_to(second) is None
    [left] = agent.wait_state("one left", lambda s: len(s["pending"]) == 1)["pending"]
    assert left["command"] == "echo second"
    agent.nvim.api.command("GeminiAgentCancel")
    wait_for(lambda: agent.answer_to(second), WAIT, "the second request answered")
    assert outcome(agent.answer_to(second)) == {"outcome": "cancelled"}


# -- 21.7: writes no one approved --------------------------------------------------------


def test_a_write_no_permission_covered_is_refused_and_nothing_is_written(
    hostile: Callable[..., Hostile], tmp_path: Path
) -> None:
    other = tmp_path / "work" / "other.txt"
    agent = hostile([[write_request(other, "unasked\n"), say("tried")]])
    agent.prompt()
    [answer] = agent.wait_answers("fs/write_text_file", 1)
    assert "error" in answer, answer
    assert "no permission" in answer["error"]["message"]
    agent.wait_idle()
    assert not other.exists()
    assert "refused" in agent.transcript()


def test_after_allowing_an_edit_of_one_file_a_write_of_another_is_refused(
    hostile: Callable[..., Hostile], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shown, other = work / "shown.txt", work / "other.txt"
    shown.write_text("old\n")
    other.write_text("untouched\n")
    agent = hostile(
        [
            [
                edit_request(shown, new="new\n"),
                write_request(other, "sneaked in\n"),
                write_request(shown, "new\n"),
                say("done"),
            ]
        ]
    )
    agent.prompt()
    agent.wait_pending()
    agent.nvim.api.command("GeminiAccept")
    refused, written = agent.wait_answers("fs/write_text_file", 2)
    assert "error" in refused, refused
    assert written == {"jsonrpc": "2.0", "id": written["id"], "result": {}} or "result" in written
    assert other.read_text() == "untouched\n"
    assert shown.read_text() == "new\n"


def test_a_second_write_of_an_approved_edit_is_refused(
    hostile: Callable[..., Hostile], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shown = work / "shown.txt"
    shown.write_text("old\n")
    agent = hostile(
        [
            [
                edit_request(shown, new="new\n"),
                write_request(shown, "new\n"),
                write_request(shown, "something else\n"),
                say("done"),
            ]
        ]
    )
    agent.prompt()
    agent.wait_pending()
    agent.nvim.api.command("GeminiAccept")
    first, second = agent.wait_answers("fs/write_text_file", 2)
    assert "result" in first and "error" in second, (first, second)
    assert shown.read_text() == "new\n"


@pytest.mark.parametrize("how", ["mode autoEdit", "mode yolo", "allow always"])
def test_writes_go_through_once_the_user_chose_to_auto_approve_edits(
    hostile: Callable[..., Hostile], tmp_path: Path, how: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shown, other = work / "shown.txt", work / "other.txt"
    shown.write_text("old\n")
    first_turn: list[dict[str, Any]] = [say("ready")]
    if how == "allow always":
        first_turn = [edit_request(shown, new="new\n"), write_request(shown, "new\n")]
    agent = hostile([first_turn, [write_request(other, "auto\n"), say("written")]], **MODES)
    if how == "allow always":
        agent.prompt()
        agent.wait_pending()
        agent.nvim.api.command("tabfirst")
        agent.nvim.api.command("GeminiAccept proceed_always")
        agent.wait_answers("fs/write_text_file", 1)
    else:
        agent.nvim.api.command("GeminiAgent")
        agent.wait_state("started", lambda s: s["state"] == "idle")
        agent.nvim.api.command(f"GeminiAgentMode {how.split()[1]}")
        agent.wait_state("the mode", lambda s: s.get("mode") == how.split()[1])
        agent.prompt()
        agent.wait_transcript("ready")
    agent.wait_idle()
    agent.prompt("again")
    agent.wait_transcript("written")
    assert other.read_text() == "auto\n"


def test_a_mode_the_agent_announces_itself_does_not_approve_writes(
    hostile: Callable[..., Hostile], tmp_path: Path
) -> None:
    other = tmp_path / "work" / "other.txt"
    agent = hostile(
        [
            [
                {
                    "notify": "session/update",
                    "params": {
                        "sessionId": "$SESSION",
                        "update": {"sessionUpdate": "current_mode_update", "currentModeId": "yolo"},
                    },
                },
                write_request(other, "self-approved\n"),
                say("tried"),
            ]
        ],
        **MODES,
    )
    agent.prompt()
    [answer] = agent.wait_answers("fs/write_text_file", 1)
    assert "error" in answer, answer
    assert not other.exists()


# -- 21.1 and 21.9: every path an agent names is checked before anything is shown ---------


def bad_edit_paths(root: Path) -> dict[str, tuple[Path | str, str]]:
    work = root / "work"
    return {
        "newline": (work / "x\nlua vim.g.pwned = 1", "control character"),
        "escape": (work / "x\x1b[2Jy.txt", "control character"),
        "relative": ("notes.txt", "absolute"),
        "fifo": (work / "pipe", "not a regular file"),
        "directory": (work / "sub", "directory"),
        "outside": (root / "outside.txt", "outside the workspace"),
    }


@pytest.mark.parametrize("case", list(bad_edit_paths(Path("/"))))
def test_an_edit_of_a_path_that_fails_the_policy_is_refused_before_anything_is_shown(
    hostile: Callable[..., Hostile], tmp_path: Path, case: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    path, reason = bad_edit_paths(tmp_path)[case]
    if case == "fifo":
        os.mkfifo(path)
    elif case == "directory":
        Path(path).mkdir()
    elif case != "relative":
        Path(path).write_text("secret outside\n")
    agent = hostile([[edit_request(path), say("after the refusal")]])
    agent.prompt()
    [answer] = agent.wait_answers("session/request_permission", 1)
    assert outcome(answer) == {"outcome": "cancelled"}
    shown = agent.wait_transcript("after the refusal")
    assert reason in shown
    assert agent.views() == []
    assert agent.state()["pending"] == []
    assert agent.nvim.lua("return vim.g.pwned") is None
    # Nothing of the file was loaded into Neovim.
    names = agent.nvim.lua(
        "return vim.tbl_map(vim.api.nvim_buf_get_name, vim.api.nvim_list_bufs())"
    )
    assert not any("outside.txt" in n or "pipe" in n for n in names), names


def test_an_edit_outside_the_workspace_of_a_file_open_in_neovim_is_shown(
    hostile: Callable[..., Hostile], tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("old\n")
    agent = hostile([[edit_request(outside, new="new\n"), write_request(outside, "new\n")]])
    agent.nvim.api.command(f"edit {outside}")
    agent.prompt()
    agent.wait_pending()
    [view] = wait_for(agent.views, WAIT, "the diff tab")
    assert view["file_path"] == str(outside)
    agent.nvim.api.command("GeminiAccept")
    agent.wait_answers("fs/write_text_file", 1)
    assert outside.read_text() == "new\n"


# -- 21.6: checks and uses are one step -----------------------------------------------


def swapper(link: Path, targets: Sequence[Path], stop: Path) -> subprocess.Popen[bytes]:
    """A process that points ``link`` at each of ``targets`` in turn, as fast as it
    can (rename of a fresh link: the link always exists), until ``stop`` exists."""
    code = (
        "import os, sys\n"
        "link, stop, targets = sys.argv[1], sys.argv[2], sys.argv[3:]\n"
        "i = 0\n"
        "while not os.path.exists(stop):\n"
        "    tmp = link + '.tmp'\n"
        "    try: os.unlink(tmp)\n"
        "    except FileNotFoundError: pass\n"
        "    os.symlink(targets[i % len(targets)], tmp)\n"
        "    os.replace(tmp, link)\n"
        "    i += 1\n"
    )
    return subprocess.Popen([sys.executable, "-c", code, str(link), str(stop), *map(str, targets)])


def test_a_link_swapped_during_the_agents_reads_never_yields_a_file_outside(
    hostile: Callable[..., Hostile], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    inside, secret = work / "inside.txt", tmp_path / "secret.txt"
    inside.write_text("inside\n")
    secret.write_text("SECRET\n")
    link, stop = work / "link.txt", tmp_path / "stop"
    link.symlink_to(inside)
    go = tmp_path / "go"
    agent = hostile([[{"wait_for_file": str(go)}, {"repeat": 300, "steps": [read_request(link)]}]])
    agent.prompt()
    proc = swapper(link, [inside, secret], stop)
    try:
        go.touch()
        answers = agent.wait_answers("fs/read_text_file", 300)
    finally:
        stop.touch()
        proc.wait(10)
    contents = [a["result"]["content"] for a in answers if "result" in a]
    assert "SECRET\n" not in contents, f"{contents.count('SECRET' + chr(10))} of 300 reads"
    assert contents, "some reads went through"


def test_a_link_swapped_during_the_agents_writes_never_writes_outside(
    hostile: Callable[..., Hostile], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    inside, secret = work / "inside.txt", tmp_path / "secret.txt"
    inside.write_text("inside\n")
    secret.write_text("SECRET\n")
    link, stop, go = work / "link.txt", tmp_path / "stop", tmp_path / "go"
    link.symlink_to(inside)
    agent = hostile(
        [
            [
                {"wait_for_file": str(go)},
                {"repeat": 100, "steps": [write_request(link, "overwritten\n")]},
            ],
        ],
        **MODES,
    )
    agent.nvim.api.command("GeminiAgent")
    agent.wait_state("started", lambda s: s["state"] == "idle")
    agent.nvim.api.command("GeminiAgentMode yolo")  # the user lets every write through
    agent.wait_state("the mode", lambda s: s.get("mode") == "yolo")
    agent.prompt()
    proc = swapper(link, [inside, secret], stop)
    try:
        go.touch()
        agent.wait_answers("fs/write_text_file", 100, timeout=200)
    finally:
        stop.touch()
        proc.wait(10)
    assert secret.read_text() == "SECRET\n"


# -- 23.6 and 23.5: bad JSON and bad text from the agent ---------------------------------


def test_deeply_nested_json_from_the_agent_is_refused_and_the_next_prompt_works(
    hostile: Callable[..., Hostile],
) -> None:
    agent = hostile([[{"deep": 3000}, say("after the deep one")], [say("second answer")]])
    agent.prompt()
    shown = agent.wait_transcript("after the deep one")
    assert "nested" in shown
    agent.wait_idle()
    agent.prompt("again")
    agent.wait_transcript("second answer")


def test_an_agent_that_closes_its_output_and_lives_on_is_restarted_by_the_next_prompt(
    hostile: Callable[..., Hostile],
) -> None:
    agent = hostile([[say("first"), {"close_stdout": True}], [say("second answer")]])
    agent.prompt()
    state = agent.wait_state("the break told", lambda s: s["state"] == "error")
    assert "the next prompt starts it again" in state["detail"]
    agent.prompt("again")
    agent.wait_transcript("second answer")


def test_lone_surrogates_and_invalid_utf8_from_the_agent_are_replaced(
    hostile: Callable[..., Hostile],
) -> None:
    chunk = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"hostile-session-1",'
        '"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%s}}}}'
    )
    agent = hostile(
        [
            [
                {"raw": chunk % '"lone \\ud800 surrogate "'},
                {"raw_hex": (chunk % '"bad \xff\xfe bytes "').encode("latin-1").hex()},
                say("and the rest"),
            ],
            [say("next prompt fine")],
        ]
    )
    agent.prompt()
    shown = agent.wait_transcript("and the rest")
    assert "lone \ufffd surrogate" in shown
    assert "bad \ufffd\ufffd bytes" in shown
    agent.wait_idle()
    agent.prompt("again")
    agent.wait_transcript("next prompt fine")


# -- 23.2: the host's memory after the agent's reads ----------------------------------


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_the_hosts_memory_comes_back_after_the_agent_reads_a_big_file_many_ways(
    hostile: Callable[..., Hostile], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    big = work / "big.txt"
    big.write_text(("x" * 99 + "\n") * (5 * 1024 * 1024 // 100))
    (work / "d").mkdir()
    # Forty spellings of one file (pathlib would fold the "." away).
    spellings = [f"{work}/d/.." + "/." * i + "/big.txt" for i in range(40)]
    agent = hostile(
        [
            [say("ready")],
            [read_request(p, line=1, limit=1) for p in spellings] + [say("read all")],
        ]
    )
    agent.prompt()
    agent.wait_idle()
    # The server stack the panel's open loads (server.py) is in before the measure.
    agent.nvim.wait_state(lambda s: s.get("serving"), 30, "the server stack loaded")
    pid = agent.nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)")
    rest = rss_kib(pid)
    agent.prompt("read")
    agent.wait_transcript("read all")
    answers = agent.wait_answers("fs/read_text_file", 40)
    assert all(a.get("result", {}).get("content") == "x" * 99 + "\n" for a in answers), answers[0]
    agent.wait_idle()
    grown = (rss_kib(pid) - rest) / 1024
    assert grown < 10, f"the host grew {grown:.0f} MiB"


# -- the real gemini --acp: the write rule lets its legitimate writes through ----------


@pytest.mark.usefixtures("interop")
@pytest.mark.parametrize("mode", ["autoEdit", "yolo"])
def test_the_real_agent_writes_without_asking_once_the_user_chose_an_auto_edit_mode(
    nvim_factory: Callable[..., Nvim], tmp_path: Path, mode: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    target = work / "auto.txt"
    target.write_text("before\n")
    fake = write_responses(
        tmp_path / "fake-responses.jsonl",
        [
            [[call("write_file", file_path=str(target), content="written by the agent\n")]],
            [[text("Written.")]],
        ],
    )
    nvim = nvim_factory(cwd=work, **acp_setup(fake, gemini_home(tmp_path)))
    nvim.wait_running()
    agent = Hostile(nvim, tmp_path, work, tmp_path / "no-log")
    nvim.api.command("GeminiAgent")
    agent.wait_state("started", lambda s: s["state"] == "idle", timeout=90)
    nvim.api.command(f"GeminiAgentMode {mode}")
    agent.wait_state("the mode", lambda s: s.get("mode") == mode)
    nvim.api.command("GeminiAgent write it")
    shown = agent.wait_transcript("Written.", timeout=90)
    assert target.exists(), shown
    assert target.read_text() == "written by the agent\n"
    assert "refused" not in agent.transcript()
