"""The agent panel over ACP (issue 12) with the real ``gemini`` 0.61.0 in ``--acp`` mode.

Real parts: a headless Neovim with the plugin, its Python host, and the Gemini CLI
from npm started by the plugin as ``node gemini.js --acp``, offline: the model's
answers are canned (fake_model.py, the CLI's own ``--fake-responses-non-strict``),
so a test says what the model answers and asserts what the user sees in Neovim and
on disk. Each test has its own HOME for the CLI (settings, session records).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_setup import (
    GEMINI_JS,
    acp_setup,
    agent_state,
    transcript,
    wait_agent,
    wait_transcript,
)
from fake_model import Part, call, gemini_home, text, thought, write_responses
from harness import Nvim, wait_for

# The CLI takes about 2.5 s to answer initialize here, more on a busy machine.
AGENT_WAIT = 90

pytestmark = pytest.mark.usefixtures("interop")


class Agent:
    """One Neovim with the panel on ACP, and the files of its canned model."""

    def __init__(self, nvim: Nvim, root: Path, fake: Path, work: Path) -> None:
        self.nvim = nvim
        self.root = root
        self.fake = fake
        self.work = work

    def transcript(self) -> str:
        return transcript(self.nvim)

    def state(self) -> dict[str, Any]:
        return agent_state(self.nvim)

    def wait_transcript(self, needle: str, timeout: float = AGENT_WAIT) -> str:
        return wait_transcript(self.nvim, needle, timeout)

    def wait_state(
        self, what: str, check: Callable[[dict[str, Any]], bool], timeout: float = AGENT_WAIT
    ) -> dict[str, Any]:
        return wait_agent(self.nvim, what, check, timeout)

    def wait_pending(self, kind: str) -> dict[str, Any]:
        state = self.wait_state(f"a pending {kind} confirmation", lambda s: bool(s["pending"]))
        pending: dict[str, Any] = state["pending"][0]
        assert pending["kind"] == kind, state
        return pending

    def wait_idle(self) -> dict[str, Any]:
        return self.wait_state("the turn to end", lambda s: s["state"] == "idle")

    def agent_pids(self) -> list[int]:
        """The running CLI processes of this test (their command line names its file)."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if str(self.fake).encode() in cmdline and b"--acp" in cmdline:
                pids.append(int(entry.name))
        return pids


@pytest.fixture
def start_agent(nvim_factory: Callable[..., Nvim], tmp_path: Path) -> Callable[..., Agent]:
    def start(turns: Sequence[Sequence[Sequence[Part]]], **kwargs: Any) -> Agent:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        fake = write_responses(tmp_path / "fake-responses.jsonl", turns)
        home = gemini_home(tmp_path)
        nvim = nvim_factory(cwd=work, **acp_setup(fake, home), **kwargs)
        nvim.wait_running()
        return Agent(nvim, tmp_path, fake, work)

    return start


def test_a_prompt_streams_the_answer_and_the_thought_into_the_transcript(
    start_agent: Callable[..., Agent],
) -> None:
    agent = start_agent(
        [[[thought("Planning", "what to say")], [text("Hello ")], [text("from ACP.")]]]
    )
    agent.nvim.api.command("GeminiAgent say hello")
    agent.wait_transcript("Hello from ACP.")
    shown = agent.transcript()
    assert "say hello" in shown
    assert "Planning" in shown
    state = agent.wait_idle()
    assert state["protocol"] == "acp"
    assert state["session_id"]
    assert state["mode"] == "default"
    assert "autoEdit" in state["modes"]
    assert state["model"] == "auto"
    assert state["models"]


def start_edit(
    start_agent: Callable[..., Agent], tmp_path: Path, name: str, *, old: str, new: str, done: str
) -> tuple[Agent, Path, list[dict[str, Any]]]:
    """An agent whose model writes ``new`` over ``old`` in work/``name``, then says
    ``done``; prompted, it waits with its edit pending, open in a diff tab (the views)."""
    target = tmp_path / "work" / name
    target.parent.mkdir(exist_ok=True)
    target.write_text(old)
    agent = start_agent(
        [[[call("write_file", file_path=str(target), content=new)]], [[text(done)]]]
    )
    agent.nvim.api.command(f"GeminiAgent update {name}")
    pending = agent.wait_pending("edit")
    assert pending["file_path"] == str(target)
    views = wait_for(
        lambda: agent.nvim.lua("return require('gemini_companion.diff').views()"),
        30,
        "the diff tab",
    )
    return agent, target, views


def test_an_edit_reviewed_in_the_diff_tab_lands_on_disk_as_the_user_changed_it(
    start_agent: Callable[..., Agent], tmp_path: Path
) -> None:
    agent, target, [view] = start_edit(
        start_agent, tmp_path, "notes.txt", old="old line\n", new="new line\n", done="Written."
    )
    nvim = agent.nvim
    assert view["file_path"] == str(target)
    assert nvim.api.buffers[view["proposal"]][:] == ["new line"]
    assert target.read_text() == "old line\n"  # nothing is written before the answer
    nvim.api.buffers[view["proposal"]][:] = ["new line", "# reviewed in Neovim"]
    nvim.api.command("GeminiAccept")
    agent.wait_transcript("Written.")
    assert target.read_text() == "new line\n# reviewed in Neovim\n"
    agent.wait_idle()


def test_an_edit_of_a_modified_buffer_reads_its_unsaved_text_and_keeps_the_users_edits(
    start_agent: Callable[..., Agent], tmp_path: Path
) -> None:
    target = tmp_path / "work" / "list.txt"
    target.parent.mkdir(exist_ok=True)
    target.write_text("alpha\nbeta\ngamma\n")
    agent = start_agent(
        [
            [
                [
                    call(
                        "replace",
                        file_path=str(target),
                        instruction="Capitalise beta",
                        old_string="beta",
                        new_string="BETA",
                    )
                ]
            ],
            [[text("Replaced.")]],
        ]
    )
    nvim = agent.nvim
    nvim.api.command(f"edit {target}")
    nvim.api.current.buffer[2:3] = ["gamma (unsaved)"]
    assert nvim.lua("return vim.bo.modified") is True
    nvim.api.command("GeminiAgent capitalise beta")
    agent.wait_pending("edit")
    view = wait_for(
        lambda: nvim.lua("return require('gemini_companion.diff').views()"), 30, "the diff tab"
    )[0]
    # The agent computed its proposal from the unsaved text.
    assert nvim.api.buffers[view["proposal"]][:] == ["alpha", "BETA", "gamma (unsaved)"]
    nvim.api.command("GeminiAccept")
    agent.wait_transcript("Replaced.")
    lines = nvim.lua(
        "return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)", str(target)
    )
    assert lines == ["alpha", "BETA", "gamma (unsaved)"]
    assert target.read_text() == "alpha\nBETA\ngamma (unsaved)\n"
    # The agent's change is one undo step in the user's buffer.
    nvim.api.command(f"buffer {target}")
    nvim.api.command("silent undo")
    assert nvim.api.current.buffer[:] == ["alpha", "beta", "gamma (unsaved)"]


def test_a_rejected_shell_command_does_not_run(
    start_agent: Callable[..., Agent], tmp_path: Path
) -> None:
    marker = tmp_path / "work" / "ran.txt"
    agent = start_agent(
        [
            [[call("run_shell_command", command=f"touch {marker}", description="make a file")]],
            [[text("Not run, then.")]],
        ]
    )
    nvim = agent.nvim
    nvim.api.command("GeminiAgent make a file")
    pending = agent.wait_pending("exec")
    assert pending["command"] == f"touch {marker}"
    assert [o["id"] for o in pending["options"]] == ["proceed_always", "proceed_once", "cancel"]
    assert f"touch {marker}" in agent.transcript()
    nvim.api.command("GeminiReject")
    agent.wait_transcript("Not run, then.")
    agent.wait_idle()
    assert not marker.exists()


def test_allow_always_switches_the_mode_and_the_mode_and_model_commands_complete(
    start_agent: Callable[..., Agent], tmp_path: Path
) -> None:
    agent, target, _ = start_edit(
        start_agent, tmp_path, "a.txt", old="a\n", new="b\n", done="Edited."
    )
    nvim = agent.nvim
    nvim.api.command("tabfirst")  # the panel's tab: the answer takes an option there
    nvim.api.command("GeminiAccept proceed_always")
    agent.wait_transcript("Edited.")
    agent.wait_state("the mode to change", lambda s: s.get("mode") == "autoEdit")
    assert target.read_text() == "b\n"
    assert "[MODE_UPDATE]" not in agent.transcript()
    modes = nvim.api.eval("getcompletion('GeminiAgentMode ', 'cmdline')")
    assert modes == ["default", "autoEdit", "yolo", "plan"]
    nvim.api.command("GeminiAgentMode default")
    agent.wait_state("the mode set back", lambda s: s.get("mode") == "default")
    models = nvim.api.eval("getcompletion('GeminiAgentModel gemini-2', 'cmdline')")
    assert models == ["gemini-2.5-pro"]
    nvim.api.command("GeminiAgentModel gemini-2.5-pro")
    agent.wait_state("the model set", lambda s: s.get("model") == "gemini-2.5-pro")


def test_slash_commands_complete_and_run_as_prompts(start_agent: Callable[..., Agent]) -> None:
    agent = start_agent([])
    nvim = agent.nvim
    nvim.api.command("GeminiAgent")
    agent.wait_state("the agent's commands", lambda s: "memory show" in s["commands"])
    assert nvim.api.eval("getcompletion('GeminiAgent /mem', 'cmdline')") == ["/memory"]
    assert "show" in nvim.api.eval("getcompletion('GeminiAgent /memory ', 'cmdline')")
    nvim.api.command("GeminiAgent /memory show")
    agent.wait_transcript("Memory is currently empty.")


def test_cancel_answers_the_pending_permission_and_the_next_prompt_works(
    start_agent: Callable[..., Agent], tmp_path: Path
) -> None:
    marker = tmp_path / "work" / "ran.txt"
    agent = start_agent(
        [
            [[call("run_shell_command", command=f"touch {marker}")]],
            [[text("A new answer.")]],
        ]
    )
    nvim = agent.nvim
    nvim.api.command("GeminiAgent make a file")
    agent.wait_pending("exec")
    nvim.api.command("GeminiAgentCancel")
    agent.wait_state("idle after cancel", lambda s: s["state"] == "idle" and not s["pending"])
    agent.wait_transcript("cancelled")
    nvim.api.command("GeminiAgent and now?")
    agent.wait_transcript("A new answer.")
    assert not marker.exists()


def test_a_killed_agent_is_reported_and_the_next_prompt_starts_it_again(
    start_agent: Callable[..., Agent],
) -> None:
    agent = start_agent([[[text("First answer.")]]])
    nvim = agent.nvim
    nvim.api.command("GeminiAgent first")
    agent.wait_transcript("First answer.")
    agent.wait_idle()
    pids = agent.agent_pids()
    assert pids, "the agent process"
    # The next run of the CLI reads its canned answers from the start again.
    write_responses(agent.fake, [[[text("Second answer, new process.")]]])
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    state = agent.wait_state("the death to be reported", lambda s: s["state"] == "error")
    assert "the agent" in state.get("detail", "") and "next prompt" in state["detail"]
    nvim.api.command("GeminiAgent second")
    agent.wait_transcript("Second answer, new process.")
    assert "restarted in a new session" in agent.transcript()
    assert set(agent.agent_pids()).isdisjoint(pids)


def test_a_session_is_resumed_after_neovim_restarts(
    start_agent: Callable[..., Agent], nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    agent = start_agent([[[text("Noted: apricot.")]]])
    agent.nvim.api.command("GeminiAgent remember the word apricot")
    agent.wait_transcript("Noted: apricot.")
    session_id = agent.wait_idle()["session_id"]
    agent.nvim.close()
    # The Neovim is gone, and with it the agent (its record written as it exits).
    wait_for(lambda: not agent.agent_pids(), 30, "the agent to exit with Neovim")
    again = start_agent([[[text("Still here.")]]])
    nvim = again.nvim
    choices = nvim.api.eval("getcompletion('GeminiAgentResume ', 'cmdline')")
    assert session_id in choices
    nvim.api.command(f"GeminiAgentResume {session_id}")
    try:
        again.wait_transcript("Noted: apricot.")
    except AssertionError as exc:
        records = {
            p.name: p.read_text().count("\n")
            for p in (tmp_path / "home" / ".gemini").glob("tmp/*/chats/*")
        }
        raise AssertionError(f"{exc}\n--- the CLI's session records ---\n{records}") from None
    assert "remember the word apricot" in again.transcript()
    # The replay can be drawn a frame before the state naming the loaded session.
    again.wait_state(
        "the loaded session", lambda s: s["state"] == "idle" and s.get("session_id") == session_id
    )
    nvim.api.command("GeminiAgent are you there?")
    again.wait_transcript("Still here.")


# -- what the real agent cannot be made to do: a small ACP agent (tests/agent_fakes) --

FAKE_AGENT = Path(__file__).parent / "agent_fakes" / "acp_agent.py"


@pytest.fixture
def fake_agent(nvim_factory: Callable[..., Nvim], tmp_path: Path) -> Agent:
    work = tmp_path / "work"
    work.mkdir()
    cmd = [sys.executable, str(FAKE_AGENT)]
    nvim = nvim_factory(
        cwd=work,
        setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd, "cancel_timeout": 1}}},
    )
    nvim.wait_running()
    return Agent(nvim, tmp_path, FAKE_AGENT, work)


def test_garbage_on_the_agents_stdout_is_shown_and_skipped(fake_agent: Agent) -> None:
    fake_agent.nvim.api.command("GeminiAgent garbage")
    fake_agent.wait_transcript("after the garbage")
    shown = fake_agent.transcript()
    assert "not ACP on its stdout" in shown
    assert "Loaded cached credentials." in shown
    fake_agent.wait_idle()
    fake_agent.nvim.api.command("GeminiAgent still fine")
    fake_agent.wait_transcript("echo: still fine")


def test_an_agent_that_ignores_the_cancel_is_stopped_and_the_next_prompt_works(
    fake_agent: Agent,
) -> None:
    nvim = fake_agent.nvim
    nvim.api.command("GeminiAgent hang")
    fake_agent.wait_state("working", lambda s: s["state"] == "working")
    nvim.api.command("GeminiAgentCancel")
    fake_agent.wait_transcript("did not stop within 1 s")
    fake_agent.wait_state("the turn over", lambda s: s["state"] in ("idle", "error"))
    nvim.api.command("GeminiAgent hello again")
    fake_agent.wait_transcript("echo: hello again")
    assert "restarted in a new session" in fake_agent.transcript()


def test_an_agent_that_exits_mid_prompt_is_reported_with_its_stderr(fake_agent: Agent) -> None:
    nvim = fake_agent.nvim
    nvim.api.command("GeminiAgent exit")
    state = fake_agent.wait_state("the exit reported", lambda s: s["state"] == "error")
    assert "exited (code 3)" in state["detail"]
    assert "exiting on purpose" in state["detail"]
    nvim.api.command("GeminiAgent back")
    fake_agent.wait_transcript("echo: back")


def test_a_missing_agent_command_says_what_to_install(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = nvim_factory(
        cwd=tmp_path,
        setup={"agent": {"protocol": "acp", "acp": {"cmd": ["no-such-gemini-here", "--acp"]}}},
    )
    nvim.wait_running()
    agent = Agent(nvim, tmp_path, tmp_path / "none", tmp_path)
    nvim.api.command("GeminiAgent hello")
    state = agent.wait_state("the error", lambda s: s["state"] == "error", timeout=30)
    assert "'no-such-gemini-here' was not found" in state["detail"]
    assert "npm install -g @google/gemini-cli" in state["detail"]


@pytest.mark.parametrize("method", [None, "gemini-api-key"])
def test_an_agent_that_needs_a_login_names_its_login_methods_or_runs_the_chosen_one(
    nvim_factory: Callable[..., Nvim], tmp_path: Path, method: str | None
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fake = write_responses(tmp_path / "fake-responses.jsonl", [[[text("never sent")]]])
    cmd = ["node", str(GEMINI_JS), "--acp", "--fake-responses-non-strict", str(fake)]
    acp: dict[str, Any] = {"cmd": cmd}
    if method:
        acp["auth_method"] = method
    nvim = nvim_factory(
        cwd=work,
        setup={"agent": {"protocol": "acp", "acp": acp}},
        # No key anywhere: the CLI's API-key login cannot work, so it asks for one.
        env={"HOME": str(gemini_home(tmp_path)), "GEMINI_API_KEY": "", "GOOGLE_API_KEY": ""},
    )
    nvim.wait_running()
    agent = Agent(nvim, tmp_path, fake, work)
    nvim.api.command("GeminiAgent hello")
    if method is None:
        shown = agent.wait_transcript("the agent needs a login")
        assert "'gemini-api-key'" in shown and "'oauth-personal'" in shown
        assert "set agent.acp.auth_method to one of them" in shown
    else:
        # The chosen method is run (``authenticate``) and why it cannot work is told.
        shown = agent.wait_transcript("Gemini API key is missing")
        log = Path(nvim.lua("return require('gemini_companion.config').log_file()"))
        assert "authenticating with gemini-api-key" in log.read_text()
        # The panel's connect and its first prompt wait for the same start: one
        # failure, told once, and one CLI started.
        agent.wait_state("the start failed", lambda s: s["state"] == "error")
        shown = agent.transcript()
        assert shown.count("Gemini API key is missing") == 1, shown
        assert log.read_text().count("authenticating with gemini-api-key") == 1
    assert "never sent" not in shown


def test_the_agents_reads_are_refused_off_regular_files_and_outside_the_workspace(
    fake_agent: Agent,
) -> None:
    """``fs/read_text_file`` follows openDiff's policy: a FIFO is refused at once, as
    is a file outside the workspace (a link to /dev/zero included), open in Neovim
    or not (issue 29 item 6b); a loaded buffer inside is served with its unsaved
    text."""
    nvim, work = fake_agent.nvim, fake_agent.work
    fifo = work / "pipe"
    os.mkfifo(fifo)
    (work / "zero").symlink_to("/dev/zero")
    outside = fake_agent.root / "outside.txt"
    outside.write_text("saved outside\n")
    answers: list[str] = []

    def read(path: Path) -> str:
        """The agent's answer to ``read PATH``, once its turn is over."""
        nvim.api.command(f"GeminiAgent read {path}")

        def answer(state: dict[str, Any]) -> bool:
            found = [
                line
                for line in fake_agent.transcript().splitlines()
                if line.startswith(("read: ", "read failed: "))
            ]
            if state["state"] != "idle" or len(found) <= len(answers):
                return False
            answers.append(found[-1])
            return True

        fake_agent.wait_state(f"the answer to reading {path}", answer)
        return answers[-1]

    assert "is not a regular file (a pipe, device or socket)" in read(fifo)
    assert nvim.api.eval("1 + 1") == 2  # Neovim answers; no thread is held
    assert "outside the workspace folders" in read(work / "zero")
    refused = read(outside)
    assert "outside the workspace folders" in refused
    assert "diff.allowed_dirs" in refused

    # Loaded in Neovim, with unsaved text: still outside, still refused.
    nvim.api.command(f"edit {outside}")
    nvim.api.command("normal! ggccunsaved outside")
    refused = read(outside)
    assert "outside the workspace folders" in refused and "unsaved" not in refused
    inside = work / "inside.txt"
    inside.write_text("saved inside\n")
    nvim.api.command(f"edit {inside}")
    nvim.api.command("normal! ggccunsaved inside")
    assert read(inside) == "read: unsaved inside"
    # A missing file the policy allows reads as empty: the real gemini --acp 0.61.0
    # cannot take any client error as "not found" (tests/test_agent_acp_new_files.py).
    assert read(work / "missing").rstrip() == "read:"
    assert "outside the workspace folders" in read(fake_agent.root / "missing-outside")


def test_checkhealth_tells_whether_the_agent_runs(fake_agent: Agent) -> None:
    nvim = fake_agent.nvim

    def health() -> str:
        nvim.api.command("checkhealth gemini_companion")
        report = "\n".join(nvim.api.current.buffer[:])
        nvim.api.command("bwipeout")
        return report

    assert "the agent is not running (:GeminiAgent starts it)" in health()
    nvim.api.command("GeminiAgent hi")
    fake_agent.wait_transcript("echo: hi")
    session = fake_agent.wait_idle()["session_id"]
    report = health()
    assert f"OK running fake-acp-agent 0.0.1, session {session} (mode ?, model ?)" in report, report
