"""Over A2A every file an agent's edit names is checked before anything of it is
shown (issue 21 items 1 and 9): a hostile agent in the real server's dialect
(tests/agent_fakes/coder_agent.py, a2a-sdk's server side, over real HTTP) drives a
real Neovim's panel; a path that fails ``openDiff``'s rules is refused, the agent
answered ``cancel``, and no diff tab opens."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_fakes.coder_agent import CoderAgent
from agent_setup import agent_state, transcript, wait_agent, wait_transcript
from harness import Nvim, wait_for
from test_agent_a2a_review import diff_views, fake, nvim  # noqa: F401 (fixtures)


def tabs_opened(nvim: Nvim) -> int:  # noqa: F811
    return int(nvim.lua("return vim.g.test_tabs_opened or 0"))


@pytest.mark.parametrize(
    "where",
    ["outside", "escape", "fifo", "directory"],
)
def test_an_edit_of_a_path_opendiff_would_refuse_is_refused_before_anything_shows(
    nvim: Nvim,  # noqa: F811
    fake: tuple[str, CoderAgent],  # noqa: F811
    workspace: Path,
    tmp_path: Path,
    where: str,
) -> None:
    _, agent = fake
    paths: dict[str, Callable[[], Path]] = {
        "outside": lambda: tmp_path / "outside.txt",
        "escape": lambda: workspace / "a\x1b]0;x\x07.txt",
        "fifo": lambda: workspace / "fifo.txt",
        "directory": lambda: workspace / "folder",
    }
    target = paths[where]()
    if where == "fifo":
        os.mkfifo(target)
    elif where == "directory":
        target.mkdir()
    elif where == "outside":
        target.write_text("not for the agent\n")
    nvim.lua(
        "vim.api.nvim_create_autocmd('TabNew', {callback = function()"
        " vim.g.test_tabs_opened = (vim.g.test_tabs_opened or 0) + 1 end})"
    )
    nvim.lua("require('gemini_companion.agent').open()")
    tabs = tabs_opened(nvim)
    nvim.lua("vim.cmd.GeminiAgent(...)", f"edit {target}")
    wait_for(lambda: agent.reported, 30, "the agent's answer")
    assert agent.answers == [{"callId": "edit-1", "outcome": "cancel"}]
    assert agent.reported == [("edit-1", "cancelled")]
    wait_transcript(nvim, "Not written.")
    text = transcript(nvim)
    assert "refused" in text, text
    assert "\x1b" not in text.split("Gemini", 1)[1]  # the prompt, the user's own, has it
    assert tabs_opened(nvim) == tabs and not diff_views(nvim)
    assert not agent_state(nvim)["pending"]
    if where == "outside":
        assert target.read_text() == "not for the agent\n"
    # The next prompt works once the turn is over (the panel refuses one while it
    # says "working"), and the agent is told why its edit was refused.
    wait_agent(nvim, "the turn's end", lambda s: s["state"] == "idle")
    nvim.api.command("GeminiAgent hello")
    wait_for(lambda: transcript(nvim).count("Hello.") == 1, 30, "the next answer")


def test_the_users_edits_in_a_tab_closed_by_a_refused_call_are_kept_in_a_private_file(
    nvim: Nvim,  # noqa: F811
    fake: tuple[str, CoderAgent],  # noqa: F811
    workspace: Path,
    tmp_path: Path,
) -> None:
    """Issue 21 item 5's follow-up: the agent re-sends the call with another path
    while the user edits in the diff tab; the call is refused and the tab closes,
    and what the user typed there is saved (0600), the message naming the file."""
    _, agent = fake
    shown, outside = workspace / "shown.txt", tmp_path / "outside.txt"
    nvim.lua(
        "vim.g.test_notes = {}; local notify = vim.notify;"
        " vim.notify = function(m, ...) local t = vim.g.test_notes; t[#t + 1] = m;"
        " vim.g.test_notes = t; return notify(m, ...) end"
    )
    nvim.api.command(f"GeminiAgent swap {shown} {outside}")
    [view] = wait_for(lambda: diff_views(nvim), 30, "the diff tab")
    nvim.api.buffers[view["proposal"]][:] = ["the user's own text", "second line"]
    agent.swap.set()
    wait_for(lambda: agent.reported, 30, "the agent's answer")
    assert agent.answers == [{"callId": "swap-1", "outcome": "cancel"}]
    assert not diff_views(nvim)

    def kept() -> list[str]:
        notes = [str(n) for n in nvim.lua("return vim.g.test_notes")]
        return [n.split("kept in ", 1)[1].split()[0] for n in notes if "kept in " in n]

    [saved] = wait_for(kept, 30, "the message naming the kept text")
    assert Path(saved).read_text() == "the user's own text\nsecond line\n"
    assert os.stat(saved).st_mode & 0o777 == 0o600
    assert not outside.exists()
    os.unlink(saved)


def test_a_lone_surrogate_and_invalid_utf8_from_the_agent_are_replaced_and_the_next_prompt_works(
    nvim: Nvim,  # noqa: F811
    fake: tuple[str, CoderAgent],  # noqa: F811
) -> None:
    """Issue 23 item 5, A2A's side: the agent's text holds ``"\\ud800"`` and bytes
    that are not UTF-8; the whole text shows, bad parts as U+FFFD, the user is told,
    and the next prompt is answered."""
    nvim.api.command("GeminiAgent garble")
    found = wait_transcript(nvim, "after")
    assert "before \ufffd middle \ufffd\ufffd after" in found, found
    wait_transcript(nvim, "not valid Unicode")
    wait_for(lambda: agent_state(nvim)["state"] == "idle", 30, "the turn to end")
    nvim.api.command("GeminiAgent hello")
    wait_transcript(nvim, "Hello.")


@pytest.mark.parametrize("where", ["escape", "fifo"])
def test_an_rfc_agents_edit_of_a_refused_path_is_rejected_before_anything_shows(
    tmp_path: Path, where: str
) -> None:
    """The RFC's encoding (tests/agent_fakes/rfc_agent.py): the edit is never shown
    as waiting, its title never carries the escape; the agent gets its reject
    option."""
    import asyncio

    from agent_fakes.rfc_agent import rfc_agent
    from gemini_companion.agent.model import Prompt, ToolCallUpdate
    from test_agent_rfc import Sink, transport

    target = tmp_path / ("a\x1b[2Jb.txt" if where == "escape" else "fifo.txt")
    if where == "fifo":
        os.mkfifo(target)

    async def main() -> None:
        with rfc_agent() as (url, agent):
            t, sink = transport(url, tmp_path), Sink()
            await t.start(sink)
            try:
                await t.prompt(Prompt(f"edit {target}"))
                calls = [e.call for e in sink.events if isinstance(e, ToolCallUpdate)]
                assert calls and all(c.confirmation is None for c in calls), calls
                assert all("\x1b" not in c.title for c in calls), calls
                # Answered with its reject option ("cancel", named "Reject").
                assert agent.confirmations == [
                    {"tool_call_id": "ed-1", "selected_option_id": "cancel"}
                ]
                assert "refused" in " ".join(str(e) for e in sink.events)
            finally:
                await t.stop()

    asyncio.run(main())
