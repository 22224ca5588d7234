"""What each conversation keeps of its own (issue 30, requirement 1): the images
attached in it, its transcript's cursor and scroll, and its place on the one agent
process when a cancel in it times out.

Real parts: a headless Neovim with the plugin and its Python host, driving the
scripted ACP agent (tests/agent_fakes/acp_agent.py), which logs the sessions it
serves with its pid and the content blocks of each prompt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_setup import panel_window, transcript
from conversation_helpers import (
    WAIT,
    agent,
    conversations,
    scripted_panel,
    text_of,
    wait_conversation,
    wait_text,
)
from harness import Nvim, wait_for
from test_agent_image import X, png, told


def _log(path: Path) -> list[Any]:
    """The JSON lines the scripted agent appended to ``path`` (none yet: [])."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_cancel_that_times_out_leaves_the_conversation_on_the_shared_agent(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    sessions, release = tmp_path / "sessions.jsonl", tmp_path / "release"
    late = tmp_path / "work" / "late.txt"  # in the workspace: a file any session may read
    nvim = scripted_panel(nvim_factory, tmp_path, "--session-log", str(sessions), cancel_timeout=1)
    nvim.api.command(f"GeminiAgent until {release}")
    first = int(agent(nvim, "conversations()")[0]["id"])
    wait_text(nvim, first, "tick 2")
    second = int(agent(nvim, "new()"))
    nvim.api.command(f"GeminiAgent deaf {late}")
    wait_for(
        lambda: any(e.get("text", "").startswith("deaf") for e in _log(sessions)),
        WAIT,
        "the prompt at the agent",
    )

    # The agent ignores the cancel: the conversation is told so and is over its turn.
    nvim.api.command("GeminiAgentCancel")
    wait_text(nvim, second, "did not stop within 1 s")
    wait_conversation(nvim, second, "over its turn", lambda c: c["state"] in ("idle", "error"))
    # The other conversation's turn goes on, on the same agent.
    ticks = text_of(nvim, first).count("tick")
    wait_text(nvim, first, f"tick {ticks + 2}")
    # This conversation's next prompt works, on the same agent process.
    nvim.api.command("GeminiAgent hello again")
    wait_text(nvim, second, "echo: hello again")
    wait_conversation(nvim, second, "idle", lambda c: c["state"] == "idle")

    # What the agent still sends of the cancelled turn goes to no conversation; the
    # permission it asks is answered "cancelled", a file it asks for is refused.
    late.write_text("")
    said = wait_for(
        lambda: [e for e in _log(sessions) if e.get("late")], WAIT, "the late words sent"
    )
    assert said[0]["read"] == "refused", "no other conversation reads a file for it"
    release.write_text("")
    wait_text(nvim, first, "released")
    wait_conversation(nvim, first, "idle", lambda c: c["state"] == "idle")
    nvim.api.command("GeminiAgent two goes on")  # after the late words, on the same pipe
    wait_text(nvim, second, "echo: two goes on")
    assert agent(nvim, "switch(...)", first) is True
    nvim.api.command("GeminiAgent one goes on")
    wait_text(nvim, first, "echo: one goes on")
    one, two = text_of(nvim, first), text_of(nvim, second)
    assert "late words" not in one and "late words" not in two, (one, two)
    assert "late request" not in one and "late request" not in two, (one, two)
    assert {c["state"] for c in conversations(nvim).values()} == {"idle"}
    assert "hello again" not in one and "tick" not in two

    entries = _log(sessions)
    assert len({e["pid"] for e in entries}) == 1, entries
    listed = conversations(nvim)
    assert listed[first]["live"] and listed[second]["live"]
    prompted = {e["text"]: e["session"] for e in entries if "text" in e}
    assert prompted["one goes on"] == listed[first]["session_id"]
    assert prompted["two goes on"] == listed[second]["session_id"]
    assert "echo: one goes on" in transcript(nvim)


def test_an_image_goes_with_the_next_prompt_of_the_conversation_it_was_attached_in(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    prompts = tmp_path / "prompts.jsonl"  # each prompt's content blocks, one line each
    nvim = scripted_panel(nvim_factory, tmp_path, "--image", env={"FAKE_ACP_PROMPTS": str(prompts)})
    (tmp_path / "work" / "square.png").write_bytes(png(4, 4))
    pending = "return require('gemini_companion.agent.images').pending()"

    nvim.api.command("GeminiAgent")  # the panel, in its first conversation
    first = int(agent(nvim, "conversations()")[0]["id"])
    nvim.api.command("GeminiAgentImage square.png")
    assert nvim.lua(pending) == ["square.png"]
    second = int(agent(nvim, "new()"))
    assert nvim.lua(pending) == [], "nothing attached in the new conversation"
    nvim.api.command("GeminiAgent look at nothing")
    wait_text(nvim, second, "echo: look at nothing")
    assert [b["type"] for b in _log(prompts)[-1]] == ["text"]
    assert "[image:" not in text_of(nvim, second)

    assert agent(nvim, "switch(...)", first) is True
    assert nvim.lua(pending) == ["square.png"], "still attached where it was attached"
    nvim.api.command("GeminiAgent look at the square")
    wait_text(nvim, first, "echo: look at the square")
    sent = _log(prompts)
    assert len(sent) == 2
    assert [b["type"] for b in sent[-1]] == ["text", "image"], sent[-1]
    assert f"[image: square.png, 4{X}4]" in text_of(nvim, first)
    assert nvim.lua(pending) == []


_VIEW = "return vim.api.nvim_win_call(..., vim.fn.winsaveview)"
# The cursor's row in a window, and the line count of its buffer.
_END = """
local w = ...
local count = vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(w))
return { vim.api.nvim_win_get_cursor(w)[1], count }
"""
_SCROLL = "vim.api.nvim_win_call(..., function() vim.fn.winrestview({topline = 40, lnum = 50}) end)"


def test_each_conversation_keeps_its_place_in_its_transcript_across_switches(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    release = tmp_path / "release"
    nvim = scripted_panel(nvim_factory, tmp_path)
    nvim.api.command("GeminiAgent stream 300 20 0")
    first = int(agent(nvim, "conversations()")[0]["id"])
    wait_for(lambda: text_of(nvim, first).count("<t=") == 300, WAIT, "the 300 lines")
    wait_conversation(nvim, first, "idle", lambda c: c["state"] == "idle")
    win = panel_window(nvim)
    # The user scrolls up in the first conversation's transcript.
    nvim.lua(_SCROLL, win)
    place = nvim.lua(_VIEW, win)
    assert (place["topline"], place["lnum"]) == (40, 50)

    second = int(agent(nvim, "new()"))
    nvim.api.command(f"GeminiAgent until {release}")
    wait_text(nvim, second, "tick 3")
    assert agent(nvim, "switch(...)", first) is True
    assert panel_window(nvim) == win
    assert nvim.lua(_VIEW, win) == place, "the same top line and cursor"

    # The second one followed its stream's end: it still does, ticks added meanwhile.
    ticks = text_of(nvim, second).count("tick")
    wait_text(nvim, second, f"tick {ticks + 3}")
    assert agent(nvim, "switch(...)", second) is True
    row, count = nvim.lua(_END, win)
    assert row == count, "at the end"
    wait_for(
        lambda: (end := nvim.lua(_END, win))[1] > count and end[0] == end[1], WAIT, "following"
    )

    assert agent(nvim, "switch(...)", first) is True
    assert nvim.lua(_VIEW, win) == place
    release.write_text("")
    wait_conversation(nvim, second, "idle", lambda c: c["state"] == "idle")


def test_a_refused_prompt_comes_back_to_the_conversation_it_was_sent_from(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    """The text and images of a prompt the plugin refuses (an attachment that is
    not an image) go back to the conversation they were sent from, even when the
    user switched to another before the refusal came back."""
    nvim = scripted_panel(nvim_factory, tmp_path, "--image")
    work = tmp_path / "work"
    (work / "square.png").write_bytes(png(4, 4))
    (work / "notes.png").write_text("not an image, whatever its name\n")
    pending = "return require('gemini_companion.agent.images').pending()"
    prompt = (
        "return vim.api.nvim_buf_get_lines("
        "require('gemini_companion.agent.panel').prompt_buffer(), 0, -1, false)"
    )
    nvim.lua(
        "require('gemini_companion.agent.messages').INTERVAL = 0;"
        " _G.told = {}; vim.notify = function(msg) table.insert(_G.told, msg) end"
    )
    nvim.api.command("GeminiAgent")
    first = int(agent(nvim, "conversations()")[0]["id"])
    nvim.api.command("GeminiAgentImage square.png")
    nvim.api.command("GeminiAgentImage notes.png")
    # Sent, and another conversation shown before the plugin's answer is read.
    second = nvim.lua(
        """
        local panel = require('gemini_companion.agent.panel')
        vim.api.nvim_buf_set_lines(panel.prompt_buffer(), 0, -1, false, { 'look at these' })
        panel.submit()
        return require('gemini_companion.agent').new()
        """
    )
    wait_for(lambda: any("cannot attach 'notes.png'" in m for m in told(nvim)), WAIT, "the refusal")
    assert nvim.lua(prompt) == [""], "nothing put in the other conversation's prompt"
    assert nvim.lua(pending) == []
    assert agent(nvim, "switch(...)", first) is True
    assert nvim.lua(prompt) == ["look at these"]
    assert nvim.lua(pending) == ["square.png"]
    assert int(second) != first
