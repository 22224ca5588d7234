"""One owner per conversation (issue 30, requirement 3, and its four defects): a
restart keeps the transcript before it, an answer that fails leaves the panel
idle, a stopped agent's late end changes nothing of the next conversation, and
the status never says "working" with no task behind it.

Real parts: a headless Neovim with the plugin and its Python host, and the
scripted ACP agent (tests/agent_fakes/acp_agent.py) the plugin starts as a child;
the core's own cases (agent/conversation.py, session.py) run the scripted
transport without Neovim, as test_agent_core.py does."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_setup import transcript, wait_agent, wait_transcript
from gemini_companion.agent.session import AgentSession
from gemini_companion.agent.transport import TransportContext
from gemini_companion.agent.view import PanelView
from harness import Nvim, wait_for
from test_agent_core import FakeEditor, Recorder, received
from test_agent_core import settle as drawn

FAKE_AGENT = Path(__file__).parent / "agent_fakes" / "acp_agent.py"
WAIT = 60


def _panel(
    nvim_factory: Callable[..., Nvim],
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
) -> Nvim:
    work = tmp_path / "work"
    work.mkdir()
    cmd = [sys.executable, str(FAKE_AGENT), *args]
    nvim = nvim_factory(
        cwd=work, env=env or {}, setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}}
    )
    nvim.wait_running()
    return nvim


def _idle(nvim: Nvim) -> dict[str, Any]:
    return wait_agent(nvim, "the turn to end", lambda s: s["state"] == "idle", WAIT)


def _lines(nvim: Nvim) -> list[str]:
    return list(nvim.lua("return require('gemini_companion.agent').transcript()"))


def test_a_restart_keeps_the_transcript_before_it_and_says_the_agent_stopped(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    nvim.api.command("GeminiAgent ANSWER-A alpha")
    wait_transcript(nvim, "echo: ANSWER-A alpha", WAIT)
    first = _idle(nvim)
    before = _lines(nvim)
    nvim.api.command("GeminiAgentStop")
    nvim.api.command("GeminiAgent ANSWER-B beta")
    wait_transcript(nvim, "echo: ANSWER-B beta", WAIT)
    second = _idle(nvim)
    after = _lines(nvim)
    # Nothing of the first conversation was drawn over.
    assert after[: len(before)] == before, "\n".join(after)
    rest = after[len(before) :]
    stopped = next(i for i, line in enumerate(rest) if "The agent stopped." in line)
    prompt = rest.index("ANSWER-B beta")
    assert stopped < prompt
    assert "echo: ANSWER-B beta" in rest[prompt:]
    # A permission request of the new session is drawn at the end, below answer B.
    nvim.api.command("GeminiAgent ask touch x")
    wait_agent(nvim, "the request", lambda s: bool(s["pending"]), WAIT)
    lines = wait_for(
        lambda: (found := _lines(nvim)) and any("Waiting for you" in x for x in found) and found,
        WAIT,
        "the request drawn",
    )
    waiting = next(i for i, line in enumerate(lines) if "Waiting for you" in line)
    assert lines[: len(after)] == after
    assert waiting > lines.index("echo: ANSWER-B beta")
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "allowed touch x", WAIT)
    assert second["conversation"] != first["conversation"]


def test_the_stop_notice_is_drawn_when_neovim_is_busy_as_the_agent_ends(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    """The host closes its own connection to Neovim after a stop: what it sent over
    it just before ("The agent stopped.") is drawn even if Neovim reads it only
    after the close (busy meanwhile, as under a long command). Neovim drops the
    requests of a closed channel: the host waits for the answer first."""
    nvim = _panel(nvim_factory, tmp_path)
    nvim.api.command("GeminiAgent hello")
    wait_transcript(nvim, "echo: hello", WAIT)
    _idle(nvim)
    log = nvim.lua("return require('gemini_companion.config').log_file()")
    nvim.lua(
        """
        local log = ...
        vim.cmd.GeminiAgentStop()
        -- Busy: no channel is read until the agent is gone and a moment more.
        local function ended()
          local f = io.open(log)
          local text = f and f:read('*a') or ''
          if f then f:close() end
          return text:find('agent stopped (code', 1, true) ~= nil
        end
        local give_up = vim.uv.hrtime() + 60e9
        while not ended() and vim.uv.hrtime() < give_up do end
        local after = vim.uv.hrtime() + 0.5e9
        while vim.uv.hrtime() < after do end
        """,
        log,
    )
    wait_transcript(nvim, "The agent stopped.", WAIT)


def test_an_answer_the_agent_fails_leaves_the_panel_ready_for_the_next_prompt(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    nvim.api.command("GeminiAgent ask-fail rm it")
    wait_agent(nvim, "the request", lambda s: bool(s["pending"]), WAIT)
    nvim.api.command("GeminiAccept")
    state = wait_agent(
        nvim, "the turn over", lambda s: s["state"] in ("idle", "error") and not s["pending"], WAIT
    )
    assert "the model failed" in state.get("detail", "") + transcript(nvim)
    nvim.api.command("GeminiAgent next one")
    wait_transcript(nvim, "echo: next one", WAIT)
    assert _idle(nvim)["pending"] == []


def test_a_stopped_agent_that_ends_late_changes_nothing_of_the_next_conversation(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    nvim = _panel(nvim_factory, tmp_path, "--ignore-sigterm", "--pid-file", str(pids))
    nvim.api.command("GeminiAgent hello")
    wait_transcript(nvim, "echo: hello", WAIT)
    _idle(nvim)
    log = Path(nvim.lua("return require('gemini_companion.config').log_file()"))
    nvim.api.command("GeminiAgentStop")
    nvim.api.command("GeminiAgent ask write y")
    wait_agent(nvim, "the new request", lambda s: bool(s["pending"]), WAIT)
    # The old agent ignores SIGTERM: it is killed after the grace time, and its
    # session's stop ends then.
    wait_for(lambda: "agent stopped (code -9)" in log.read_text(), WAIT, "the old agent killed")
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "allowed write y", WAIT)
    state = _idle(nvim)
    assert state["pending"] == []
    first, second = (int(pid) for pid in pids.read_text().split())
    assert not os.path.exists(f"/proc/{first}")
    nvim.api.command("GeminiAgentStop")  # the second is killed the same way
    wait_for(lambda: not os.path.exists(f"/proc/{second}"), WAIT, "the new agent killed")


# -- the core, without Neovim --------------------------------------------------------------


class _HeldReview(Recorder):
    """A review whose IDE twin takes its time to answer: settle() waits for ``go``."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()

    async def settle(self, call_id: str, accepted: bool, content: str | None) -> bool:
        await self.go.wait()
        return False


def test_an_answer_waiting_for_its_ide_twin_is_the_turn_and_a_prompt_is_refused_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_fakes.scripted_transport import ScriptedTransport

    log_file = tmp_path / "transport.jsonl"
    monkeypatch.setenv("SCRIPTED_TRANSPORT_LOG", str(log_file))

    async def main() -> None:
        editor = FakeEditor()
        context = TransportContext(workspace=str(tmp_path), env={}, editor=editor)
        review = _HeldReview()
        session = AgentSession(ScriptedTransport(context), PanelView(editor), review)
        session.request("prompt", {"text": "edit"})
        await drawn(session)
        assert session.state()["state"] == "waiting"
        session.request("answer", {})
        await drawn(session)
        assert session.state()["state"] == "working"
        assert session.busy()  # a task is behind "working"
        session.request("prompt", {"text": "hi"})
        await drawn(session)
        assert any("still busy" in op.get("text", "") for op in editor.ops())
        review.go.set()
        await drawn(session)
        assert session.state()["state"] == "idle"
        assert [r["call"] for r in received(log_file)] == ["start", "prompt", "answer"]

    asyncio.run(main())


def test_a_stopped_conversation_never_moves_and_a_forbidden_change_is_logged_not_made(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from gemini_companion.agent.conversation import Conversation

    async def main() -> None:
        conversation = Conversation()
        assert conversation.status == "stopped"
        conversation.started = conversation.starting = True
        assert conversation.settle() and conversation.status == "starting"
        conversation.starting = False
        assert conversation.settle() and conversation.status == "idle"
        conversation.transcript.pending.append("call-1")
        conversation.settle()
        assert conversation.status == "waiting"
        conversation.halt()
        conversation.transcript.pending.clear()
        conversation.fail("late")
        assert conversation.status == "stopped"
        assert Conversation().id != conversation.id

        working = Conversation()
        working.started = working.starting = True
        working.settle()
        working.starting = False

        async def turn() -> None:
            async with working.activity():
                assert working.settle() and working.status == "working"
                working.starting = True  # a start under a running turn: not a move
                with caplog.at_level(logging.ERROR):
                    assert not working.settle()
                assert working.status == "working"
                assert "illegal status change working -> starting" in caplog.text
                working.starting = False

        await turn()
        assert working.status == "idle"

    asyncio.run(main())


def test_a_slash_command_while_a_request_waits_is_refused_and_starts_no_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_fakes.scripted_transport import ScriptedTransport

    log_file = tmp_path / "transport.jsonl"
    monkeypatch.setenv("SCRIPTED_TRANSPORT_LOG", str(log_file))

    async def main() -> None:
        editor = FakeEditor()
        context = TransportContext(workspace=str(tmp_path), env={}, editor=editor)
        session = AgentSession(ScriptedTransport(context), PanelView(editor), Recorder())
        session.request("prompt", {"text": "edit"})
        await drawn(session)
        assert session.state()["state"] == "waiting"
        session.request("command", {"name": "help", "args": ""})
        await drawn(session)
        assert any("still busy" in op.get("text", "") for op in editor.ops())
        assert session.state()["state"] == "waiting"
        assert [r["call"] for r in received(log_file)] == ["start", "prompt"]

    asyncio.run(main())


def test_a_cancel_is_the_turn_until_the_agents_turn_has_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel answered late by the agent (a loaded machine): the panel says idle
    only once the agent's turn is over, and a prompt meanwhile waits for that
    instead of reaching an agent still busy with the cancelled turn."""
    from agent_fakes.scripted_transport import ScriptedTransport

    log_file = tmp_path / "transport.jsonl"
    monkeypatch.setenv("SCRIPTED_TRANSPORT_LOG", str(log_file))

    class SlowCancel(ScriptedTransport):
        go: asyncio.Event

        async def cancel(self) -> None:
            await super().cancel()
            await self.go.wait()  # the agent's cancelled turn ends only now

    async def main() -> None:
        editor = FakeEditor()
        context = TransportContext(workspace=str(tmp_path), env={}, editor=editor)
        transport = SlowCancel(context)
        transport.go = asyncio.Event()
        session = AgentSession(transport, PanelView(editor), Recorder())
        session.request("prompt", {"text": "edit"})
        await drawn(session)
        assert session.state()["state"] == "waiting"
        session.request("cancel", {})
        await drawn(session)
        assert session.state()["state"] == "working"
        assert session.state()["pending"] == []
        session.request("prompt", {"text": "hi"})
        await drawn(session)
        assert any("still busy" in op.get("text", "") for op in editor.ops())
        transport.go.set()
        await drawn(session)
        state = session.state()
        assert (state["state"], state.get("detail")) == ("idle", "cancelled")
        assert [r["call"] for r in received(log_file)] == ["start", "prompt", "cancel"]

    asyncio.run(main())


def test_a_cancel_while_the_agent_starts_drops_the_prompt_not_the_start(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    """`:GeminiAgentCancel` while the agent is still starting: the prompt that waits
    for it is never sent (the user said stop), the panel says so, and the agent
    goes on starting for the next prompt."""
    gate, prompts = tmp_path / "initialize", tmp_path / "prompts.jsonl"
    nvim = _panel(
        nvim_factory,
        tmp_path,
        "--hold-initialize",
        str(gate),
        env={"FAKE_ACP_PROMPTS": str(prompts)},
    )
    nvim.api.command("GeminiAgent first words")
    wait_agent(nvim, "the agent starting", lambda s: s["state"] == "starting", WAIT)
    nvim.api.command("GeminiAgentCancel")
    wait_transcript(nvim, "Cancelled: the prompt was not sent.", WAIT)
    gate.write_text("")
    _idle(nvim)
    nvim.api.command("GeminiAgent second words")
    wait_transcript(nvim, "echo: second words", WAIT)
    sent = [json.loads(line) for line in prompts.read_text().splitlines()]
    assert [block["text"] for blocks in sent for block in blocks] == ["second words"]
    assert "echo: first words" not in transcript(nvim)
