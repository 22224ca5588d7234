"""The agent panel in a real Neovim against the RFC-conformant fake agent
(tests/agent_fakes/rfc_agent.py, a2a-sdk's server side, over real HTTP on
loopback): the extension's slash commands (``commands/get``, ``command/execute``),
MCP and info confirmations queued and answered oldest first, and a task whose
stream drops mid-way followed again. The fake checks what arrives."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_fakes.rfc_agent import RfcAgent, rfc_agent
from agent_setup import agent_state, transcript, wait_agent, wait_transcript
from harness import Nvim, wait_for


@pytest.fixture
def fake() -> Iterator[tuple[str, RfcAgent]]:
    with rfc_agent() as served:
        yield served


@pytest.fixture
def agent(fake: tuple[str, RfcAgent]) -> RfcAgent:
    return fake[1]


@pytest.fixture
def nvim(nvim_factory: Callable[..., Nvim], fake: tuple[str, RfcAgent], tmp_path: Path) -> Nvim:
    work = tmp_path / "work"
    work.mkdir()
    started = nvim_factory(cwd=work, setup={"agent": {"protocol": "a2a", "a2a": {"url": fake[0]}}})
    started.wait_running()
    return started


def messages(nvim: Nvim) -> str:
    return str(nvim.lua("return vim.api.nvim_exec2('messages', { output = true }).output"))


def pending_ids(state: dict[str, Any]) -> list[str]:
    return [p["id"] for p in state["pending"]]


def test_rfc_slash_commands_complete_run_and_ask_in_the_panel(nvim: Nvim, agent: RfcAgent) -> None:
    nvim.api.command("GeminiAgent")
    state = wait_agent(nvim, "the commands", lambda s: bool(s["commands"]))
    assert state["dialect"] == "rfc"
    assert state["commands"] == ["memory", "memory show", "memory add", "restore"]
    assert ("commands/get", {}) in agent.extension_calls
    assert nvim.api.eval("getcompletion('GeminiAgent /', 'cmdline')") == ["/memory", "/restore"]
    assert nvim.api.eval("getcompletion('GeminiAgent /mem', 'cmdline')") == ["/memory"]
    assert nvim.api.eval("getcompletion('GeminiAgent /memory ', 'cmdline')") == ["add", "show"]

    nvim.api.command("GeminiAgent /memory add tabs are wide")
    wait_transcript(nvim, "▍ You\n/memory add tabs are wide")
    wait_transcript(nvim, "Remembered: tabs are wide")
    assert agent.extension_calls[-1] == (
        "command/execute",
        {"command_path": ["memory", "add"], "args": "tabs are wide"},
    )
    wait_agent(nvim, "the command to end", lambda s: s["state"] == "idle")
    nvim.api.command("GeminiAgent /memory show")
    wait_transcript(nvim, "Memory:\n- tabs are wide")
    wait_agent(nvim, "the command to end", lambda s: s["state"] == "idle")

    # A command's confirmation streams into the transcript like a prompt's.
    nvim.api.command("GeminiAgent /restore v1")
    state = wait_agent(nvim, "the command's confirmation", lambda s: bool(s["pending"]))
    assert state["state"] == "waiting"
    assert state["pending"][0]["kind"] == "exec"
    assert state["pending"][0]["command"] == "git checkout v1"
    assert "$ git checkout v1" in transcript(nvim)
    assert agent.confirmations == []  # nothing answered without the user
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "→ done (proceed_once)")
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle" and not s["pending"])
    assert agent.confirmations == [
        {"tool_call_id": "restore-1", "selected_option_id": "proceed_once"}
    ]

    nvim.api.command("GeminiAgent /nope")
    wait_transcript(nvim, "[Error] /nope: unknown command /nope")


def test_mcp_and_info_confirmations_queue_and_are_answered_oldest_first(
    nvim: Nvim, agent: RfcAgent
) -> None:
    nvim.api.command("GeminiAgent several")
    state = wait_agent(nvim, "three confirmations", lambda s: len(s["pending"]) == 3)
    assert [(p["id"], p["kind"]) for p in state["pending"]] == [
        ("mcp-1", "mcp"),
        ("info-1", "info"),
        ("sh-1", "exec"),
    ]
    mcp, info = state["pending"][0], state["pending"][1]
    assert (mcp["server"], mcp["tool"]) == ("nvim", "getDiagnostics")
    assert [o["id"] for o in mcp["options"]] == [
        "proceed_always_server",
        "proceed_always_tool",
        "proceed_once",
        "cancel",
    ]
    assert info["description"] == "Fetch https://example.com/docs and summarise it"
    assert [o["id"] for o in info["options"]] == ["proceed_once", "cancel"]
    text = transcript(nvim)
    assert "Waiting for you: Read the diagnostics of main.py" in text
    assert "MCP server nvim, tool getDiagnostics" in text
    assert "[proceed_always_server] Always allow every tool of nvim" in text
    assert "Waiting for you: Fetch a page" in text
    assert "Fetch https://example.com/docs and summarise it" in text
    assert "Waiting for you" in text
    assert agent.confirmations == []
    assert nvim.api.eval("getcompletion('GeminiAccept ', 'cmdline')") == [
        "proceed_always_server",
        "proceed_always_tool",
        "proceed_once",
        "cancel",
    ]

    # An option the oldest does not offer: a clear message, nothing sent.
    nvim.api.command("GeminiAccept proceed_always")
    wait_for(lambda: "no option 'proceed_always'" in messages(nvim), 60, "the bad option refused")
    assert agent.confirmations == [] and pending_ids(agent_state(nvim)) == [
        "mcp-1",
        "info-1",
        "sh-1",
    ]

    nvim.api.command("GeminiAccept proceed_always_server")
    state = wait_agent(nvim, "two left", lambda s: pending_ids(s) == ["info-1", "sh-1"])
    assert agent.confirmations == [
        {"tool_call_id": "mcp-1", "selected_option_id": "proceed_always_server"}
    ]
    wait_transcript(nvim, "→ done (proceed_always_server)")
    wait_transcript(nvim, "Waiting for you: Fetch a page")

    nvim.api.command("GeminiReject")
    wait_agent(nvim, "one left", lambda s: pending_ids(s) == ["sh-1"])
    assert agent.confirmations[-1] == {"tool_call_id": "info-1", "selected_option_id": "cancel"}
    wait_transcript(nvim, "[tool] WebFetch: Fetch a page (cancelled)")

    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "After the tool.")
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle" and not s["pending"])
    assert agent.confirmations[-1] == {"tool_call_id": "sh-1", "selected_option_id": "proceed_once"}


def test_a_dropped_stream_is_shown_and_the_task_followed_again(nvim: Nvim, agent: RfcAgent) -> None:
    # The connection drops before the agent asks: the question comes back from the task.
    nvim.api.command("GeminiAgent drop asking")
    state = wait_agent(nvim, "the restored confirmation", lambda s: pending_ids(s) == ["sh-drop"])
    text = wait_transcript(nvim, "it is input-required.")
    assert "[Warning] The connection to the agent dropped while task" in text
    assert agent.drops == 1 and agent.subscriptions == [state["task_id"]]
    assert text.count("Let me run the tests.") == 1
    assert text.count("[tool] ShellTool") == 1
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "After the tool.")
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle" and not s["pending"])
    assert agent.confirmations == [
        {"tool_call_id": "sh-drop", "selected_option_id": "proceed_once"}
    ]
    assert transcript(nvim).count("[tool] ShellTool") == 1

    # The task ended while the connection was down: its end is shown, nothing twice.
    nvim.api.command("GeminiAgent drop ended")
    text = wait_transcript(nvim, "it is completed.")
    assert agent.drops == 2
    assert text.count("Before the drop.") == 1 and text.count("While you were away.") == 1
    wait_agent(nvim, "idle", lambda s: s["state"] == "idle")
    nvim.api.command("GeminiAgent hello")
    wait_transcript(nvim, "RFC hello")
