"""The Gemini CLI started in one process (issue 31 item 3, agent/acp/launch.py):
``gemini`` 0.61.0 otherwise starts a Node process that loads the CLI only to start
itself again with a bigger heap (about 400 ms, and 143 MiB kept for nothing). The
panel starts the second one directly, with what the relaunch would give it; a
user's own ``GEMINI_CLI_NO_RELAUNCH`` (even empty) and heap flag are kept, and
other agents' commands are left alone. The last test drives the real CLI, IDE
mode on, in a real Neovim."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import GEMINI_JS, acp_setup, wait_agent, wait_transcript
from fake_model import gemini_home, text, write_responses
from gemini_companion.agent.acp.launch import (
    HEAP_FLAG,
    NO_RELAUNCH,
    half_memory_mb,
    runs_gemini_cli,
    start_env,
)
from harness import Nvim, wait_for


@pytest.mark.parametrize(
    "cmd",
    [
        ["gemini", "--acp"],
        ["/usr/local/bin/gemini", "--acp", "--model", "x"],
        ["node", "/opt/lib/node_modules/@google/gemini-cli/bundle/gemini.js", "--acp"],
        ["npx", "-y", "@google/gemini-cli@0.61.0", "--acp"],
        ["python3", "tap.py", "log", "--", "node", "/x/bundle/gemini.js", "--acp"],
    ],
)
def test_a_command_that_runs_the_gemini_cli_starts_it_once(cmd: list[str]) -> None:
    assert runs_gemini_cli(cmd)
    env = start_env(cmd, {"PATH": "/bin", "NODE_OPTIONS": "--enable-source-maps"})
    heap = half_memory_mb()
    assert heap is not None and heap > 0
    assert env == {
        "PATH": "/bin",
        "NODE_OPTIONS": f"--enable-source-maps {HEAP_FLAG}={heap}",
        NO_RELAUNCH: "true",
    }


@pytest.mark.parametrize(
    "cmd",
    [
        ["claude-code-acp"],
        ["node", "/opt/other-agent/index.js", "--model", "gemini"],
        ["my-wrapper", "gemini"],
        [],
    ],
)
def test_other_agents_get_their_environment_unchanged(cmd: list[str]) -> None:
    assert not runs_gemini_cli(cmd)
    assert start_env(cmd, {"PATH": "/bin"}) == {"PATH": "/bin"}


def test_what_the_user_set_is_kept() -> None:
    cmd = ["gemini", "--acp"]
    # Their own choice of relaunch, even empty (the CLI then starts itself again).
    for value in ("", "1"):
        assert start_env(cmd, {NO_RELAUNCH: value}) == {NO_RELAUNCH: value}
    # Their own heap limit.
    env = start_env(cmd, {"NODE_OPTIONS": f"{HEAP_FLAG}=2048"})
    assert env == {"NODE_OPTIONS": f"{HEAP_FLAG}=2048", NO_RELAUNCH: "true"}


def agent_processes(fake: Path) -> list[int]:
    """The processes running the CLI on ``fake``'s canned answers."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if str(fake).encode() in cmdline and b"--acp" in cmdline:
            found.append(int(entry.name))
    return found


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.usefixtures("interop")
def test_the_real_cli_runs_in_one_process_with_the_heap_its_relaunch_gives(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    if NO_RELAUNCH in os.environ:
        pytest.skip(f"{NO_RELAUNCH} is set here: the agent keeps it (the user's choice)")
    work = tmp_path / "work"
    work.mkdir()
    fake = write_responses(tmp_path / "fake.jsonl", [[[text("One process.")]]])
    setup = acp_setup(fake, gemini_home(tmp_path, ide=True))
    nvim = nvim_factory(cwd=work, **setup)
    nvim.wait_running()
    assert "gemini.js" in str(setup) and GEMINI_JS.exists()
    nvim.api.command("GeminiAgent are you one?")
    wait_transcript(nvim, "One process.", 90)
    wait_agent(nvim, "the turn to end", lambda s: s["state"] == "idle", 90)
    pids = wait_for(lambda: agent_processes(fake) or None, 30, "the agent's process")
    # One Node process, not a parent waiting on its relaunched child.
    assert len(pids) == 1, pids
    env = environ(pids[0])
    assert env[NO_RELAUNCH] == "true"
    assert f"{HEAP_FLAG}={half_memory_mb()}" in env["NODE_OPTIONS"].split()
