"""The agent goes with the companion, for both protocols: after
``:GeminiCompanionStop`` and after ``:qa`` no process of the agent is left (the
child and everything in its process group) and the A2A server's private home is
removed. Nothing is killed by hand: the plugin's own stop is what is tested.

Real parts: ``gemini --acp`` 0.61.0 offline on canned answers (as in
test_agent_acp.py) and the A2A server 0.25.2 on the fake Gemini API (as in
test_agent_a2a.py)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from agent_setup import SERVER_BIN, START, acp_setup, wait_agent, wait_transcript
from editor_double import RecordingEditor
from fake_gemini import FakeGemini, text_turn
from fake_model import gemini_home, text, write_responses
from gemini_companion.agent.service import TEST_TRANSPORT_VAR
from gemini_companion.companion import Companion, StartOptions
from harness import ROOT, Nvim, process_env, wait_for
from lua_options import start_options


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name; None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"  # a zombie is gone for the user


def parent(pid: int) -> int:
    fields = _stat(pid)
    assert fields is not None, f"process {pid} is gone"
    return int(fields[1])


def group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (the agent and what it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


# -- ACP -------------------------------------------------------------------------------


def acp_pid(root: Path) -> int:
    """The pid of this test's ``gemini --acp`` (its command line names the test's files)."""

    def find() -> int | None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    cmdline = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                if str(root).encode() in cmdline and b"--acp" in cmdline:
                    return int(entry.name)
        return None

    return wait_for(find, START, "the agent process")


@pytest.fixture
def acp_nvim(interop: None, nvim_factory: Callable[..., Nvim], tmp_path: Path) -> tuple[Nvim, int]:
    """A Neovim whose panel has run one ACP turn; the agent's pid."""
    work = tmp_path / "work"
    work.mkdir()
    fake = write_responses(tmp_path / "fake-responses.jsonl", [[[text("Hello from ACP.")]]])
    nvim = nvim_factory(cwd=work, **acp_setup(fake, gemini_home(tmp_path)))
    nvim.wait_running()
    nvim.api.command("GeminiAgent say hello")
    wait_transcript(nvim, "Hello from ACP.", START)
    wait_agent(nvim, "the turn to end", lambda s: s["state"] == "idle", START)
    return nvim, acp_pid(tmp_path)


def test_companion_stop_stops_the_acp_agent_and_everything_it_started(
    acp_nvim: tuple[Nvim, int],
) -> None:
    nvim, pid = acp_nvim
    assert pid in group(pid)
    nvim.api.command("GeminiCompanionStop")
    # The panel says "stopped" once the agent's stop has run to its end.
    wait_agent(nvim, "the agent stopped", lambda s: s["state"] == "stopped", START)
    assert group(pid) == []


def test_quitting_neovim_stops_the_acp_agent_before_the_host_exits(
    acp_nvim: tuple[Nvim, int],
) -> None:
    nvim, pid = acp_nvim
    host = parent(pid)
    nvim.close()
    wait_for(lambda: not alive(host), 30, "the plugin's host to exit with Neovim")
    assert group(pid) == []


# -- A2A -------------------------------------------------------------------------------


@pytest.fixture
def a2a_nvim(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, tmp_path: Path
) -> tuple[Nvim, int, Path]:
    """A Neovim whose panel has run one A2A turn; the server's pid and private home."""
    if not SERVER_BIN.exists():
        pytest.skip("scripts/setup installs the A2A server (npm)")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = {"HOME": str(home), "GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": fake.url}
    nvim = nvim_factory(
        cwd=work,
        setup={"agent": {"protocol": "a2a", "a2a": {"cmd": [str(SERVER_BIN)], "env": env}}},
    )
    nvim.wait_running()
    fake.add(text_turn("Hello from A2A."))
    nvim.api.command("GeminiAgent say hello")
    wait_transcript(nvim, "Hello from A2A.", START)
    idle = wait_agent(nvim, "idle", lambda s: s["state"] == "idle" and bool(s.get("pid")), START)
    pid = int(idle["pid"])
    private = Path(process_env(pid)["GEMINI_CLI_HOME"])
    assert private.is_dir() and private != home
    return nvim, pid, private


def test_companion_stop_stops_the_a2a_server_and_removes_its_private_home(
    a2a_nvim: tuple[Nvim, int, Path],
) -> None:
    nvim, pid, private = a2a_nvim
    assert pid in group(pid)
    nvim.api.command("GeminiCompanionStop")
    wait_agent(nvim, "the agent stopped", lambda s: s["state"] == "stopped", START)
    assert group(pid) == []
    assert not os.path.lexists(private)


def test_quitting_neovim_stops_the_a2a_server_and_removes_its_home_before_the_host_exits(
    a2a_nvim: tuple[Nvim, int, Path],
) -> None:
    nvim, pid, private = a2a_nvim
    host = parent(pid)
    nvim.close()
    wait_for(lambda: not alive(host), 30, "the plugin's host to exit with Neovim")
    assert group(pid) == []
    assert not os.path.lexists(private)


# -- the server dies by itself ------------------------------------------------------------


class _Editor(RecordingEditor):
    def agent_draw(self, ops: list[Mapping[str, object]]) -> concurrent.futures.Future[object]:
        done: concurrent.futures.Future[object] = concurrent.futures.Future()
        done.set_result(None)
        return done


def test_a_server_that_dies_by_itself_still_stops_the_agent_before_its_thread_ends(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    transport = ROOT / "tests" / "agent_fakes" / "child_transport.py"
    env = {"TMPDIR": str(tmp_path), TEST_TRANSPORT_VAR: f"{transport}:ChildTransport"}
    companion = Companion(_Editor(), env=env)
    companion.start(
        StartOptions.from_lua(start_options(nvim_pid=1234567, workspace_dirs=[str(project)]))
    )
    run = companion.run
    assert run is not None
    try:
        companion.agent_request("open", {"protocol": "acp", "workspace": str(project)})
        record = project / "agent.json"
        agent = wait_for(
            lambda: record.exists() and json.loads(record.read_text()), 30, "the agent"
        )
        assert alive(agent["pid"]) and os.path.isdir(agent["home"])

        def die() -> None:  # as a bug would end it: the server's main task cancelled
            for task in asyncio.all_tasks():
                if task.get_coro().__qualname__.endswith("_serve"):  # type: ignore[union-attr]
                    task.cancel()

        assert run.server.call_soon(die)
        assert run.server.join(15), "the dead server's thread did not end"
        assert not alive(agent["pid"])
        assert not os.path.lexists(agent["home"])
    finally:
        companion.stop()
