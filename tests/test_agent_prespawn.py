"""The ACP agent started first (issue 31 item 3): the panel's ``open`` forks the
agent and writes it ``initialize`` before the panel's session is built
(agent/acp/prespawn.py); the transport adopts that process, and its connection
does not send ``initialize`` again.

Real parts: a headless Neovim with the plugin and its Python host, the scripted ACP
agent of tests/agent_fakes behind bench/acp_tap.py, which logs every request the
agent is sent."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from agent_setup import wait_agent, wait_transcript
from harness import ROOT, Nvim, json_lines

FAKE_AGENT = Path(__file__).parent / "agent_fakes" / "acp_agent.py"
TAP = ROOT / "bench" / "acp_tap.py"


def requests(log: Path) -> list[str]:
    return [r["request"] for r in json_lines(log) if "request" in r]


def test_the_agent_started_first_is_sent_initialize_once_and_answers(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    log = tmp_path / "tap.jsonl"
    cmd = [sys.executable, str(TAP), str(log), "--", sys.executable, str(FAKE_AGENT)]
    nvim = nvim_factory(cwd=tmp_path, setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}})
    nvim.wait_running()
    # The prompt comes with the open: it waits behind it, in order.
    nvim.api.command("GeminiAgent hello there")
    wait_transcript(nvim, "echo: hello there")
    wait_agent(nvim, "the turn to end", lambda s: s["state"] == "idle")
    assert requests(log) == ["initialize", "session/new", "session/prompt"]
    # A second open after a stop starts a new agent the same way.
    nvim.api.command("GeminiAgentStop")
    wait_agent(nvim, "the agent stopped", lambda s: s["state"] == "stopped")
    nvim.api.command("GeminiAgent again")
    wait_transcript(nvim, "echo: again")
    assert requests(log)[3:] == ["initialize", "session/new", "session/prompt"]


def test_the_panel_talks_to_the_agent_started_first_none_other_is_started(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    # Each start of the agent's command leaves a line: the one started as the open
    # came must be the one the transport adopts (same command, folder and
    # environment, the agent's own IDE variables included), not one started again.
    starts = tmp_path / "starts.txt"
    cmd = ["sh", "-c", f'echo $$ >> "{starts}"; exec "$0" "$@"', sys.executable, str(FAKE_AGENT)]
    nvim = nvim_factory(cwd=tmp_path, setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}})
    nvim.wait_running()
    nvim.api.command("GeminiAgent hello")
    wait_transcript(nvim, "echo: hello")
    wait_agent(nvim, "the turn to end", lambda s: s["state"] == "idle")
    assert len(starts.read_text().split()) == 1
