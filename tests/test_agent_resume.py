"""Resuming a conversation (``:GeminiAgentResume``, issue 22 item 6) with the real
``gemini`` 0.61.0 in ``--acp`` mode, offline (fake_model.py): the conversation open
is not offered, a resumed one reads as a live one, ends in view and keeps the
model the user chose; over A2A nothing is offered that cannot be served.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fake_model import text
from harness import Nvim, wait_for
from test_agent_acp import Agent, start_agent  # noqa: F401  (start_agent: the fixture)

pytestmark = pytest.mark.usefixtures("interop")


def messages(nvim: Nvim) -> str:
    return str(nvim.lua("return vim.api.nvim_exec2('messages', {output = true}).output"))


def test_a_resumed_conversation_reads_as_a_live_one_ends_in_view_and_keeps_the_model(
    start_agent: Callable[..., Agent],  # noqa: F811
) -> None:
    agent = start_agent([[[text("Noted: apricot.")]]])
    nvim = agent.nvim
    nvim.api.command("GeminiAgent remember the word apricot")
    agent.wait_transcript("Noted: apricot.")
    first = agent.wait_idle()["session_id"]
    # The conversation open is not offered, and naming it changes nothing.
    assert first not in nvim.api.eval("getcompletion('GeminiAgentResume ', 'cmdline')")
    before = agent.transcript()
    nvim.api.command(f"GeminiAgentResume {first}")
    try:
        wait_for(lambda: "conversation is open already" in messages(nvim), 30, "the message")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{messages(nvim)}\n{agent.transcript()}") from None
    assert agent.transcript() == before
    # A new conversation, a model chosen, then the first one resumed.
    nvim.api.command("GeminiAgentStop")
    nvim.lua("require('gemini_companion.agent').open()")
    second = agent.wait_state(
        "a new session", lambda s: s["state"] == "idle" and s.get("session_id") not in (None, first)
    )["session_id"]
    assert first in nvim.api.eval("getcompletion('GeminiAgentResume ', 'cmdline')")
    assert second not in nvim.api.eval("getcompletion('GeminiAgentResume ', 'cmdline')")
    model = next(m for m in agent.state()["models"] if m != "auto")
    nvim.api.command(f"GeminiAgentModel {model}")
    agent.wait_state("the model chosen", lambda s: s["model"] == model)
    nvim.api.command("wincmd t")  # away from the transcript's end
    nvim.api.command(f"GeminiAgentResume {first}")
    agent.wait_state("the conversation loaded", lambda s: s.get("session_id") == first)
    agent.wait_transcript("Noted: apricot.")
    shown = agent.transcript()
    # As a live prompt is drawn: under the "You" heading, not as a note.
    assert "You: remember" not in shown
    lines = shown.split("\n")
    asked = lines.index("remember the word apricot")
    assert lines[asked - 1] == "▍ You", lines[asked - 3 : asked + 3]
    state = agent.wait_state("the model kept", lambda s: s["model"] == model)
    assert state["session_id"] == first
    # The transcript's windows show its end.
    ends = nvim.lua(
        "local b = require('gemini_companion.agent.transcript').buffer()"
        " local out = {}"
        " for _, w in ipairs(vim.fn.win_findbuf(b)) do"
        "   out[#out + 1] = vim.api.nvim_win_get_cursor(w)[1] == vim.api.nvim_buf_line_count(b)"
        " end return out"
    )
    assert ends and all(ends), ends
    # The conversation goes on (the agent restarted by the stop reads its canned
    # answers from the start again); the first conversation stays above the stop.
    nvim.api.command("GeminiAgent are you there?")
    agent.wait_state(
        "the answer",
        lambda _: "Noted: apricot." in agent.transcript().partition("are you there?")[2],
    )


def test_over_a2a_resume_offers_nothing_and_says_why(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = nvim_factory(setup={"agent": {"protocol": "a2a"}})
    nvim.wait_running()
    nvim.lua("_G.picked = 0 vim.ui.select = function() _G.picked = _G.picked + 1 end")
    assert nvim.api.eval("getcompletion('GeminiAgentResume ', 'cmdline')") == []
    nvim.api.command("GeminiAgentResume")
    assert 'needs agent.protocol = "acp"' in messages(nvim)
    assert nvim.lua("return _G.picked") == 0
