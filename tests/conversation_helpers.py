"""Reading the panel's conversations in a test's Neovim (issue 30): the list, each
one's transcript, and waiting on either; a failed wait shows them all."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import Nvim, wait_for

FAKE_AGENT = Path(__file__).parent / "agent_fakes" / "acp_agent.py"
WAIT = 90

# Every User GeminiAgentUpdate's data, in order: which conversation, in which state.
RECORD_EVENTS = """
_G.test_events = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "GeminiAgentUpdate",
  callback = function(ev)
    table.insert(_G.test_events, { id = ev.data.conversation, state = ev.data.state })
  end,
})
"""


def scripted_panel(
    nvim_factory: Callable[..., Nvim],
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    **acp: Any,
) -> Nvim:
    """A Neovim (in ``tmp_path / "work"``, with ``env``) whose panel drives the
    scripted ACP agent (tests/agent_fakes/acp_agent.py) started with ``args``;
    ``acp``: more of ``agent.acp``'s options."""
    work = tmp_path / "work"
    work.mkdir()
    cmd = [sys.executable, str(FAKE_AGENT), *args]
    nvim = nvim_factory(
        cwd=work, env=env or {}, setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd, **acp}}}
    )
    nvim.wait_running()
    nvim.lua(RECORD_EVENTS)
    return nvim


def agent(nvim: Nvim, call: str, *args: Any) -> Any:
    """``require("gemini_companion.agent").<call>`` (``...`` in it: ``args``)."""
    return nvim.lua(f"return require('gemini_companion.agent').{call}", *args)


def conversations(nvim: Nvim) -> dict[int, dict[str, Any]]:
    return {int(c["id"]): dict(c) for c in agent(nvim, "conversations()")}


def text_of(nvim: Nvim, conversation: int) -> str:
    return "\n".join(agent(nvim, "transcript(...)", conversation))


def wait_text(nvim: Nvim, conversation: int, needle: str) -> str:
    def probe() -> str | None:
        found = text_of(nvim, conversation)
        return found if needle in found else None

    try:
        return str(wait_for(probe, WAIT, f"{needle!r} in conversation #{conversation}"))
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{context(nvim)}") from None


def wait_conversation(
    nvim: Nvim, conversation: int, what: str, check: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        found = conversations(nvim).get(conversation)
        return found if found and check(found) else None

    try:
        return dict(wait_for(probe, WAIT, f"conversation #{conversation}: {what}"))
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{context(nvim)}") from None


def context(nvim: Nvim) -> str:
    """What a failed wait shows: each conversation, its transcript (its start and
    end when long), the messages."""
    out = []
    for id_, c in conversations(nvim).items():
        lines = text_of(nvim, id_).splitlines()
        cut = len(lines) > 60
        shown = "\n".join((["...", *lines[:10], "..."] if cut else []) + lines[-50:])
        out.append(f"--- #{id_}: {c} ---\n{shown}")
    messages = nvim.lua("return vim.api.nvim_exec2('messages', {output = true}).output")
    return "\n".join([*out, f"--- messages ---\n{messages}"])


def statusline(nvim: Nvim) -> str:
    return str(nvim.lua("return require('gemini_companion').statusline({ highlight = false })"))


def assert_one_agent_both_working(nvim: Nvim, log: Path, first: int, second: int) -> None:
    """One agent process (started once, per the plugin's ``log``), so one IDE-mode
    client of the companion, and both conversations seen working."""
    assert log.read_text().count("started node") == 1, log.read_text()
    ide = wait_for(
        lambda: nvim.lua("return require('gemini_companion').status().sessions or {}") or None,
        WAIT,
        "the agent's IDE connection",
    )
    assert len(ide) == 1
    events = nvim.lua("return _G.test_events")
    assert {"id": first, "state": "working"} in events
    assert {"id": second, "state": "working"} in events
