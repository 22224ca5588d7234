"""The agent panel over A2A against the real ``@google/gemini-cli-a2a-server``
0.25.2 (installed by scripts/setup into tests/a2a_server), run offline against a
fake Gemini API on loopback (tests/fake_gemini.py: the model is the one fake),
driven through a real Neovim's commands."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import (
    SERVER_BIN,
    START,
    a2a_setup,
    transcript,
    wait_agent,
    wait_transcript,
)
from fake_gemini import FakeGemini, call_turn, text_turn
from harness import Nvim, wait_for

pytestmark = pytest.mark.skipif(
    not SERVER_BIN.exists(), reason="scripts/setup installs the A2A server (npm)"
)


def non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: only a route is chosen
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") else address


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def test_a_prompt_streams_follow_ups_stay_on_the_task_and_the_server_is_loopback_only(
    agent_nvim: Nvim, fake: FakeGemini
) -> None:
    nvim = agent_nvim
    fake.add(text_turn("Hello ", "from the ", "fake model."))
    nvim.api.command("GeminiAgent say hello")
    wait_transcript(nvim, "Hello from the fake model.", START)
    state = wait_agent(nvim, "idle", lambda s: s["state"] == "idle")
    assert state["protocol"] == "a2a"
    assert state["dialect"] == "coder-agent"
    task, context = state["task_id"], state["context_id"]
    assert task and context
    # The first message carried the workspace; the model saw the prompt.
    first = fake.stream_requests()[0]["body"]
    assert "say hello" in str(first["contents"])

    fake.add(text_turn("Second answer."))
    nvim.api.command("GeminiAgent and again")
    wait_transcript(nvim, "Second answer.")
    state = wait_agent(nvim, "idle", lambda s: s["state"] == "idle")
    assert (state["task_id"], state["context_id"]) == (task, context)
    second = fake.stream_requests()[-1]["body"]
    assert "say hello" in str(second["contents"])  # same conversation: history kept
    assert transcript(nvim).count("▍ You") == 2

    # Loopback only: reachable on 127.0.0.1, not on this machine's other address.
    port = int(state["url"].rsplit(":", 1)[1])
    assert reachable("127.0.0.1", port)
    address = non_loopback_address()
    if address is not None:
        assert not reachable(address, port), f"the A2A server answers on {address}:{port}"

    # The server goes with Neovim.
    pid = state["pid"]
    nvim.close()
    wait_for(lambda: not alive(pid), 30, "the A2A server to stop with Neovim")
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to check")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for the user
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_slash_commands_are_listed_completed_and_run(agent_nvim: Nvim) -> None:
    nvim = agent_nvim
    nvim.api.command("GeminiAgent")
    state = wait_agent(nvim, "the commands", lambda s: bool(s["commands"]), START)
    assert "memory" in state["commands"]
    assert "memory show" in state["commands"]
    assert nvim.api.eval("getcompletion('GeminiAgent /mem', 'cmdline')") == ["/memory"]
    assert "show" in nvim.api.eval("getcompletion('GeminiAgent /memory ', 'cmdline')")
    nvim.api.command("GeminiAgent /memory show")
    wait_transcript(nvim, "▍ You\n/memory show")
    # Its answer, not only the prompt: the state drawn with the prompt may still be
    # the last turn's "idle" (the command's "working" can come a frame later).
    wait_agent(
        nvim,
        "the command to end with its answer",
        lambda s: (
            s["state"] == "idle"
            and transcript(nvim).split("/memory show", 1)[1].strip() != "▍ Gemini"
        ),
    )
    assert "[Error]" not in transcript(nvim)


def test_write_file_is_reviewed_in_the_diff_tab_and_the_users_edit_ends_on_disk(
    agent_nvim: Nvim, fake: FakeGemini, workspace: Path
) -> None:
    nvim = agent_nvim
    target = workspace / "notes.txt"
    fake.add(
        call_turn("write_file", {"file_path": str(target), "content": "agent line\n"}),
        text_turn("I wrote the notes."),
    )
    nvim.api.command("GeminiAgent write the notes")
    views = wait_for(
        lambda: nvim.lua("return require('gemini_companion.diff').views()"),
        START,
        "the diff view",
    )
    view = views[0]
    assert view["file_path"] == str(target)
    state = wait_agent(nvim, "the edit pending", lambda s: bool(s["pending"]))
    assert [p["kind"] for p in state["pending"]] == ["edit"]
    assert not target.exists()  # nothing runs before the answer
    nvim.api.buffers[view["proposal"]][:] = ["agent line", "user's own line"]
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "I wrote the notes.")
    wait_for(
        lambda: target.exists() and target.read_text() == "agent line\nuser's own line\n",
        30,
        "the user's version on disk",
    )
    # Told once the write is done (the notice follows the file on disk).
    wait_transcript(nvim, "Wrote your edited version")


def test_a_rejected_shell_command_does_not_run(
    agent_nvim: Nvim, fake: FakeGemini, workspace: Path
) -> None:
    nvim = agent_nvim
    marker = workspace / "it-ran"
    fake.add(
        call_turn("run_shell_command", {"command": f"touch {marker}", "description": "mark"}),
        text_turn("Understood, not running it."),
    )
    nvim.api.command("GeminiAgent run it")
    state = wait_agent(nvim, "the shell confirmation", lambda s: bool(s["pending"]), START)
    pending = state["pending"][0]
    assert pending["kind"] == "exec"
    assert pending["command"] == f"touch {marker}"
    assert [o["id"] for o in pending["options"]] == ["proceed_once", "proceed_always", "cancel"]
    assert f"$ touch {marker}" in transcript(nvim)
    nvim.api.command("GeminiReject")
    wait_transcript(nvim, "(cancelled)")
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle" and not s["pending"])
    assert not marker.exists()


def test_cancel_mid_answer_then_a_killed_server_restarts_on_the_next_prompt(
    agent_nvim: Nvim, fake: FakeGemini
) -> None:
    nvim = agent_nvim
    fake.add([[{"text": "Partial answer"}], {"wait": "held"}, [{"text": " never shown"}]])
    nvim.api.command("GeminiAgent tell me a long story")
    wait_transcript(nvim, "Partial answer", START)
    nvim.api.command("GeminiAgentCancel")
    wait_agent(nvim, "idle after cancel", lambda s: s["state"] == "idle")
    fake.release("held")
    fake.add(text_turn("After the cancel."))
    nvim.api.command("GeminiAgent next")
    wait_transcript(nvim, "After the cancel.")
    assert "never shown" not in transcript(nvim)

    pid = wait_agent(nvim, "the server's pid", lambda s: bool(s.get("pid")))["pid"]
    os.kill(pid, signal.SIGKILL)
    state = wait_agent(nvim, "the dead server shown", lambda s: s["state"] == "error")
    assert "A2A server stopped" in state.get("detail", "")
    wait_transcript(nvim, "A2A server stopped")  # its notice may come a frame later
    fake.add(text_turn("Back again."))
    nvim.api.command("GeminiAgent are you there")
    wait_transcript(nvim, "Back again.", START)

    # :GeminiAgentStop stops the server the plugin started.
    restarted = wait_agent(nvim, "the new pid", lambda s: bool(s.get("pid")) and s["pid"] != pid)
    nvim.api.command("GeminiAgentStop")
    wait_for(lambda: not alive(restarted["pid"]), 30, "the A2A server to stop")
    wait_agent(nvim, "the stopped state", lambda s: s["state"] == "stopped")


def test_a_missing_server_command_or_credentials_get_a_clear_message(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, workspace: Path, tmp_path: Path
) -> None:
    setup = a2a_setup(fake, tmp_path / "home")
    setup["agent"]["a2a"]["cmd"] = ["no-such-a2a-server"]
    nvim = nvim_factory(cwd=workspace, setup=setup)
    nvim.wait_running()
    nvim.api.command("GeminiAgent hi")
    state = wait_agent(nvim, "the error", lambda s: s["state"] == "error")
    assert "'no-such-a2a-server' was not found" in state["detail"]
    assert "npm install -g @google/gemini-cli-a2a-server" in state["detail"]

    setup = a2a_setup(fake, tmp_path / "home", GEMINI_API_KEY="")
    nvim = nvim_factory(cwd=workspace, setup=setup, env={"GEMINI_API_KEY": ""})
    nvim.wait_running()
    nvim.api.command("GeminiAgent hi")
    state = wait_agent(nvim, "the error", lambda s: s["state"] == "error")
    assert "needs credentials: set GEMINI_API_KEY" in state["detail"]


def test_neovims_tools_reach_the_agent_after_an_mcp_confirmation(
    agent_nvim: Nvim, fake: FakeGemini, workspace: Path, tmp_path: Path
) -> None:
    nvim = agent_nvim
    source = workspace / "code.txt"
    source.write_text("saved text\n")
    nvim.api.command(f"edit {source}")
    nvim.api.current.buffer[:] = ["unsaved text only Neovim knows"]
    fake.add(
        call_turn("readBuffer", {"filePath": str(source)}),
        text_turn("I read your buffer."),
    )
    nvim.api.command("GeminiAgent read my buffer")
    state = wait_agent(nvim, "the MCP confirmation", lambda s: bool(s["pending"]), START)
    # The model was offered Neovim's tools by the real server.
    declared = str(fake.stream_requests()[0]["body"].get("tools"))
    for tool in ("readBuffer", "getDiagnostics", "listOpenBuffers"):
        assert tool in declared, f"{tool} not offered to the model"
    pending = state["pending"][0]
    assert pending["kind"] == "mcp"
    assert (pending["server"], pending["tool"]) == ("nvim", "readBuffer")
    assert [o["id"] for o in pending["options"]] == [
        "proceed_once",
        "proceed_always_tool",
        "proceed_always_server",
        "cancel",
    ]
    shown = transcript(nvim)
    assert "MCP server nvim, tool readBuffer" in shown
    assert "[proceed_always_server]" in shown
    # Nothing runs before the answer: the model has not been given the buffer.
    assert len(fake.stream_requests()) == 1
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "I read your buffer.")
    result = str(fake.stream_requests()[1]["body"]["contents"])
    assert "functionResponse" in result
    assert "unsaved text only Neovim knows" in result
    # The user's own Gemini home is untouched: the server's home was private.
    assert not (tmp_path / "home" / ".gemini" / "extensions").exists()


def test_the_servers_stderr_lands_in_the_plugins_log(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, workspace: Path, tmp_path: Path
) -> None:
    # A broken user settings file: the real server reports it on stderr at start
    # (read through the private home, which links the user's settings).
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text("{ this is not json")
    nvim = nvim_factory(cwd=workspace, setup=a2a_setup(fake, home))
    nvim.wait_running()
    fake.add(text_turn("Started anyway."))
    nvim.api.command("GeminiAgent hi")
    wait_transcript(nvim, "Started anyway.", START)

    def logged() -> str | None:
        text = nvim.sandbox.log_file.read_text(errors="replace")
        lines = [
            line
            for line in text.splitlines()
            if "gemini_companion.agent.a2a.server: stderr: " in line
            and "Errors loading settings" in line
        ]
        return lines[0] if lines else None

    wait_for(logged, 30, "the server's stderr line in the plugin's log")
    assert "settings.json" in nvim.sandbox.log_file.read_text(errors="replace")


def test_accept_proceed_always_in_the_diff_tab_reaches_the_real_server(
    agent_nvim: Nvim, fake: FakeGemini, workspace: Path
) -> None:
    nvim = agent_nvim
    first, second = workspace / "one.txt", workspace / "two.txt"
    fake.add(
        call_turn("write_file", {"file_path": str(first), "content": "one\n"}),
        [
            {"wait": "held"},  # the agent's turn goes on after the answer
            [
                {
                    "functionCall": {
                        "name": "write_file",
                        "args": {"file_path": str(second), "content": "two\n"},
                    }
                }
            ],
        ],
        text_turn("Both written."),
    )
    nvim.api.command("GeminiAgent write two files")
    [view] = wait_for(
        lambda: nvim.lua("return require('gemini_companion.diff').views()"), START, "the diff"
    )
    assert view["file_path"] == str(first)
    nvim.api.buffers[view["proposal"]][:] = ["one, as the user wants it"]
    nvim.api.command("GeminiAccept proceed_always")
    # The tab closes with the answer, not at the end of the agent's turn.
    wait_for(
        lambda: not nvim.lua("return require('gemini_companion.diff').views()"),
        30,
        "the diff tab closed while the turn goes on",
    )
    # The answer is recorded as the tab closes: the turn goes on.
    wait_agent(nvim, "the turn going on", lambda s: s["state"] == "working")
    fake.release("held")
    # "Always" for edits: the second write needs no confirmation from the server.
    wait_transcript(nvim, "Both written.")
    wait_for(second.exists, 30, "the second file written without asking")
    assert second.read_text() == "two\n"
    wait_for(
        lambda: first.read_text() == "one, as the user wants it\n",
        30,
        "the user's version of the first file",
    )
