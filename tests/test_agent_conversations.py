"""Several conversations at once (issue 30, requirement 1): ``:GeminiAgentNew``
starts one and keeps the current one; each has its own transcript, prompt draft
and history, and pending requests; a turn goes on in one while the user works in
another; the status lines name a conversation that waits for the user; over ACP
all share one agent process, one session each.

Real parts: a headless Neovim with the plugin and its Python host; the scripted
ACP agent (tests/agent_fakes/acp_agent.py), which logs the sessions it serves
with its pid; and the real ``gemini --acp`` offline on canned answers, with IDE
mode on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import (
    START,
    acp_setup,
    agent_state,
    panel_window,
    status_row,
    transcript,
    wait_agent,
    wait_transcript,
)
from conversation_helpers import (
    RECORD_EVENTS,
    WAIT,
    agent,
    assert_one_agent_both_working,
    conversations,
    scripted_panel,
    statusline,
    text_of,
    wait_conversation,
    wait_text,
)
from fake_gemini import FakeGemini, text_turn
from fake_model import call, gemini_home, text, write_responses
from harness import Nvim, wait_for


def test_a_turn_streams_in_one_conversation_while_the_user_prompts_in_another_on_one_agent(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions.jsonl"
    release = tmp_path / "release"
    nvim = scripted_panel(nvim_factory, tmp_path, "--session-log", str(sessions))
    nvim.api.command(f"GeminiAgent until {release}")
    wait_transcript(nvim, "tick 2", WAIT)
    first = int(wait_agent(nvim, "working", lambda s: s["state"] == "working")["conversation"])

    second = int(agent(nvim, "new()"))
    assert second != first
    assert transcript(nvim) == "", "the new conversation's transcript is shown, empty"
    nvim.api.command("GeminiAgent hello from two")
    wait_transcript(nvim, "echo: hello from two", WAIT)
    state = wait_agent(nvim, "#2 idle", lambda s: s["state"] == "idle")
    assert state["conversation"] == second
    listed = conversations(nvim)
    assert list(listed) == [second, first], "newest first"
    # The first one's turn goes on meanwhile.
    assert listed[first]["state"] == "working" and listed[first]["live"]
    assert listed[first]["title"] == f"until {release}"
    assert listed[second]["title"] == "hello from two"
    assert listed[first]["session_id"] != listed[second]["session_id"]
    ticks_before = text_of(nvim, first).count("tick")
    wait_text(nvim, first, f"tick {ticks_before + 2}")

    release.write_text("")
    wait_text(nvim, first, "released")
    wait_conversation(nvim, first, "idle", lambda c: c["state"] == "idle")
    # Each transcript holds only its own text.
    one, two = text_of(nvim, first), text_of(nvim, second)
    assert "hello from two" not in one and "tick" in one
    assert "tick" not in two and "released" not in two and "hello from two" in two
    # state() describes the conversation shown; the event named the one it was about.
    assert agent_state(nvim)["conversation"] == second
    events = nvim.lua("return _G.test_events")
    assert {"id": first, "state": "idle"} in events
    assert {"id": second, "state": "idle"} in events
    assert {e["id"] for e in events} == {first, second}

    # Switching shows the other transcript in the panel's window.
    assert agent(nvim, "switch(...)", first) is True
    win = panel_window(nvim)
    shown = nvim.lua("return vim.api.nvim_win_get_buf(...)", win)
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", shown) == agent(
        nvim, "transcript(...)", first
    )
    assert agent_state(nvim)["conversation"] == first
    assert agent(nvim, "switch(...)", 999) is False

    # One agent process served both conversations, one ACP session each.
    entries = [json.loads(line) for line in sessions.read_text().splitlines()]
    assert len({e["pid"] for e in entries}) == 1, entries
    created = [e["session"] for e in entries if "text" not in e]
    assert len(created) == 2 and len(set(created)) == 2
    prompted = {e["text"]: e["session"] for e in entries if "text" in e}
    assert prompted[f"until {release}"] == listed[first]["session_id"]
    assert prompted["hello from two"] == listed[second]["session_id"]


def test_each_conversation_answers_its_own_requests_and_the_status_names_one_that_waits(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = scripted_panel(nvim_factory, tmp_path)
    nvim.api.command("GeminiAgent ask touch one")
    first = int(wait_agent(nvim, "#1's request", lambda s: bool(s["pending"]))["conversation"])
    prompt_buf = nvim.lua("return require('gemini_companion.agent.panel').prompt_buffer()")
    nvim.lua("vim.api.nvim_buf_set_lines(..., 0, -1, false, { 'a draft of one' })", prompt_buf)

    second = int(agent(nvim, "new()"))
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", prompt_buf) == [""]
    nvim.api.command("GeminiAgent ask touch two")
    wait_agent(nvim, "#2's request", lambda s: s["conversation"] == second and bool(s["pending"]))
    wait_transcript(nvim, "Waiting for you", WAIT)
    # The status lines name the other conversation that waits.
    wait_for(lambda: f"#{first} waits for you" in statusline(nvim), WAIT, "the statusline")
    nvim.lua("vim.api.nvim_set_current_win(...)", panel_window(nvim))
    nvim.api.command("only")
    assert f"#{first} waits for you" in status_row(nvim, panel_window(nvim))

    nvim.api.command("GeminiAccept")  # the shown conversation's request
    wait_transcript(nvim, "allowed touch two", WAIT)
    assert conversations(nvim)[first]["state"] == "waiting"
    assert "touch two" not in text_of(nvim, first)

    assert agent(nvim, "switch(...)", first) is True
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", prompt_buf) == [
        "a draft of one"
    ]
    nvim.api.command("GeminiReject")
    wait_transcript(nvim, "rejected touch one", WAIT)
    assert "allowed touch two" not in transcript(nvim)
    wait_for(lambda: "waits for you" not in statusline(nvim), WAIT, "no one waits")

    # :GeminiAgentStop stops every conversation: they stay listed, not live.
    nvim.api.command("GeminiAgentStop")
    listed = conversations(nvim)
    assert set(listed) == {first, second}
    assert not any(c["live"] for c in listed.values())


@pytest.mark.usefixtures("interop")
def test_two_conversations_go_on_at_once_on_one_real_gemini_acp_in_ide_mode(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    marker = work / "ran.txt"
    answer = " ".join(f"papaya{i}" for i in range(300))
    # Each ACP session of gemini 0.61.0 plays the canned answers from the first:
    # a shell command, which waits for the user's answer, then a long answer.
    answers = [
        [[call("run_shell_command", command=f"touch {marker}", description="make a file")]],
        [[text(answer[i : i + 60])] for i in range(0, len(answer), 60)],
    ]
    fake = write_responses(tmp_path / "fake-responses.jsonl", answers)
    nvim = nvim_factory(cwd=work, **acp_setup(fake, gemini_home(tmp_path, ide=True)))
    nvim.wait_running()
    nvim.lua(RECORD_EVENTS)
    log = Path(nvim.lua("return require('gemini_companion.config').log_file()"))
    nvim.api.command("GeminiAgent make a file")
    first = int(wait_agent(nvim, "#1's request", lambda s: bool(s["pending"]), 180)["conversation"])

    second = int(agent(nvim, "new()"))
    nvim.api.command("GeminiAgent tell me two")
    wait_conversation(nvim, second, "its request", lambda c: c["state"] == "waiting")
    assert f"#{first} waits for you" in statusline(nvim)
    # Both turns go on: answered one after the other, both answers stream at once.
    nvim.api.command("GeminiAccept")
    assert agent(nvim, "switch(...)", first) is True
    nvim.api.command("GeminiAccept")
    for conversation in (first, second):
        wait_text(nvim, conversation, "papaya299")
        wait_conversation(nvim, conversation, "over", lambda c: c["state"] == "idle")
    assert marker.exists()
    one, two = text_of(nvim, first), text_of(nvim, second)
    # Each transcript holds its own turn, whole, once, and nothing of the other's.
    assert one.count("papaya299") == 1 and two.count("papaya299") == 1, (one, two)
    assert "make a file" in one and "tell me two" not in one
    assert "tell me two" in two and "\nmake a file\n" not in two.split("▍ Gemini")[0]
    listed = conversations(nvim)
    assert listed[first]["session_id"] and listed[second]["session_id"]
    assert listed[first]["session_id"] != listed[second]["session_id"]
    assert_one_agent_both_working(nvim, log, first, second)


def test_over_a2a_each_conversation_is_a_task_of_its_own_on_one_server(
    agent_nvim: Nvim, fake: FakeGemini
) -> None:
    nvim = agent_nvim
    fake.add(text_turn("Answer ", "one."))
    nvim.api.command("GeminiAgent first question")
    wait_transcript(nvim, "Answer one.", START)
    one = wait_agent(nvim, "#1 idle", lambda s: s["state"] == "idle")
    second = int(agent(nvim, "new()"))
    fake.add(text_turn("Answer ", "two."))
    nvim.api.command("GeminiAgent second question")
    wait_transcript(nvim, "Answer two.", START)
    two = wait_agent(nvim, "#2 idle", lambda s: s["state"] == "idle")
    assert two["conversation"] == second != one["conversation"]
    assert two["task_id"] and two["task_id"] != one["task_id"]
    assert two["pid"] == one["pid"] and two["url"] == one["url"], "one server"
    assert "Answer one." not in transcript(nvim)
    assert "Answer two." not in text_of(nvim, one["conversation"])
    # The second task's model request holds its own prompt, not the first's.
    last = str(fake.stream_requests()[-1]["body"]["contents"])
    assert "second question" in last and "first question" not in last
    listed = conversations(nvim)
    assert listed[second]["session_id"] == two["task_id"]
