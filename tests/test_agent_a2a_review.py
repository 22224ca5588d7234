"""What the plugin writes over A2A is the path the user reviewed: a hostile agent in
the real server's dialect (tests/agent_fakes/coder_agent.py, a2a-sdk's server side,
over real HTTP) drives a real Neovim's panel and diff tab."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_fakes.coder_agent import PROPOSAL, CoderAgent, coder_agent
from agent_setup import agent_state, transcript, wait_agent, wait_transcript
from harness import Nvim, wait_for


@pytest.fixture
def fake() -> Iterator[tuple[str, CoderAgent]]:
    with coder_agent() as served:
        yield served


@pytest.fixture
def nvim(nvim_factory: Callable[..., Nvim], fake: tuple[str, CoderAgent], workspace: Path) -> Nvim:
    setup = {"agent": {"protocol": "a2a", "a2a": {"url": fake[0]}}}
    started = nvim_factory(cwd=workspace, setup=setup)
    started.wait_running()
    return started


def diff_views(nvim: Nvim) -> list[dict[str, Any]]:
    return list(nvim.lua("return require('gemini_companion.diff').views()"))


def companion_answers(nvim: Nvim, seconds: float) -> bool:
    """The companion's HTTP server (its loop is the panel's) answers within ``seconds``."""
    port = nvim.state()["port"]
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=b"{}", method="POST")
    try:
        urllib.request.urlopen(request, timeout=seconds)
    except urllib.error.HTTPError as error:
        return error.code == 401
    except OSError:
        return False
    return True


def test_a_tool_call_whose_path_changes_after_the_review_is_refused_and_nothing_is_written(
    nvim: Nvim, fake: tuple[str, CoderAgent], workspace: Path, tmp_path: Path
) -> None:
    _, agent = fake
    shown, outside = workspace / "shown.txt", tmp_path / "outside.txt"
    shown.write_text("as it was\n")
    nvim.api.command(f"GeminiAgent swap {shown} {outside}")
    [view] = wait_for(lambda: diff_views(nvim), 30, "the diff tab")
    assert view["file_path"] == str(shown)
    [pending] = wait_agent(nvim, "the edit pending", lambda s: bool(s["pending"]))["pending"]
    assert pending["file_path"] == str(shown)
    # The user edits the proposal; meanwhile the agent re-sends the call, elsewhere.
    nvim.api.buffers[view["proposal"]][:] = ["the user's own text"]
    agent.swap.set()
    wait_for(
        lambda: any(t in transcript(nvim) for t in (f"Write {outside.name}", "refused")),
        30,
        "the changed call handled",
    )
    # Whatever the user does now in the tab (it closed) or the panel, nothing is written.
    nvim.lua("pcall(vim.cmd, 'GeminiAccept')")
    wait_for(lambda: agent.reported, 30, "the agent's answer")
    assert not outside.exists(), f"written outside: {outside.read_text()!r}"
    assert agent.answers == [{"callId": "swap-1", "outcome": "cancel"}]
    wait_transcript(nvim, "refused")
    assert agent.reported == [("swap-1", "cancelled")]
    wait_transcript(nvim, "Not written.")
    text = transcript(nvim)
    assert str(shown) in text and str(outside) in text
    assert not outside.exists()
    assert shown.read_text() == "as it was\n"
    assert not diff_views(nvim)
    assert not agent_state(nvim)["pending"]


def test_the_users_version_goes_to_the_reviewed_path_never_blocking_on_a_fifo(
    nvim: Nvim, fake: tuple[str, CoderAgent], workspace: Path
) -> None:
    _, agent = fake
    target = workspace / "notes.txt"
    nvim.api.command(f"GeminiAgent edit {target}")
    [view] = wait_for(lambda: diff_views(nvim), 30, "the diff tab")
    nvim.api.buffers[view["proposal"]][:] = ["the user's version"]
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "Written.")
    wait_for(lambda: target.read_text() == "the user's version\n", 30, "the user's version on disk")
    assert agent.answers == [{"callId": "edit-1", "outcome": "proceed_once"}]
    # The turn is over before the next prompt (one sent while busy is refused).
    wait_agent(nvim, "the first turn's end", lambda s: s["state"] == "idle")

    # The agent puts a FIFO where the reviewed file was before it reports success:
    # the plugin's own write is refused at once and the companion keeps answering.
    fifo = workspace / "fifo.txt"
    nvim.api.command(f"GeminiAgent fifo {fifo}")
    [view] = wait_for(lambda: diff_views(nvim), 30, "the diff tab")
    nvim.api.buffers[view["proposal"]][:] = ["kept for the user"]
    nvim.api.command("GeminiAccept")
    try:
        wait_for(lambda: ("fifo-2", "success") in agent.reported, 30, "the success report")

        def handled() -> bool:
            assert companion_answers(nvim, 5), "the companion's HTTP server froze"
            return transcript(nvim).count("Written.") == 2

        wait_for(handled, 30, "the success handled")
        found = wait_transcript(nvim, "not a regular file")
        saved = [
            line.split("kept in ", 1)[1].split()[0].strip("'\".,;:()")
            for line in found.splitlines()
            if "kept in " in line
        ]
        assert saved and Path(saved[0]).read_text() == "kept for the user\n"
        assert os.stat(saved[0]).st_mode & 0o077 == 0
    finally:
        # Release a writer that blocked on the FIFO (the old behaviour).
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    assert PROPOSAL  # the agent wrote nothing else
