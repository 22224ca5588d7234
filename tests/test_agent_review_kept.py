"""A review that ends without the user's answer keeps what the user typed in its
diff tab (the user's text is never lost): over ACP with the scripted agent of
tests/agent_fakes/hostile_acp.py (the A2A side: test_agent_a2a_paths.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from harness import wait_for
from test_agent_consent import WAIT, Hostile, edit_request, hostile, say  # noqa: F401


def test_cancelling_a_turn_keeps_the_users_edits_of_its_pending_edit_in_a_private_file(
    hostile: Callable[..., Hostile],  # noqa: F811
    tmp_path: Path,
) -> None:
    target = tmp_path / "work" / "shown.txt"
    target.parent.mkdir()
    target.write_text("old\n")
    agent = hostile([[edit_request(target), say("after")]])
    nvim = agent.nvim
    nvim.lua(
        "vim.g.test_notes = {}; local notify = vim.notify;"
        " vim.notify = function(m, ...) local t = vim.g.test_notes; t[#t + 1] = m;"
        " vim.g.test_notes = t; return notify(m, ...) end"
    )
    agent.prompt()
    agent.wait_pending()
    [view] = wait_for(agent.views, WAIT, "the diff tab")
    nvim.api.buffers[view["proposal"]][:] = ["new", "typed by the user"]
    nvim.api.command("GeminiAgentCancel")
    agent.wait_answers("session/request_permission", 1)
    wait_for(lambda: not agent.views(), WAIT, "the diff tab closed")

    def kept() -> list[str]:
        notes = [str(n) for n in nvim.lua("return vim.g.test_notes")]
        return [n.split("kept in ", 1)[1].split()[0] for n in notes if "kept in " in n]

    [saved] = wait_for(kept, WAIT, "the message naming the kept text")
    assert Path(saved).read_text() == "new\ntyped by the user\n"
    assert os.stat(saved).st_mode & 0o777 == 0o600
    assert target.read_text() == "old\n"
    os.unlink(saved)


def test_a_users_version_the_agent_never_wrote_is_forgotten_when_its_turn_ends(
    hostile: Callable[..., Hostile],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Accepted with the user's change, the edit is never written in its turn; the next
    turn's edit of the same proposal, accepted as it is, writes the proposal, not the
    user's older version."""
    target = tmp_path / "work" / "shown.txt"
    target.parent.mkdir()
    target.write_text("old\n")
    agent = hostile(
        [
            [edit_request(target, new="new\n"), say("changed my mind")],
            [
                edit_request(target, call_id="edit-2", new="new\n"),
                {
                    "call": "fs/write_text_file",
                    "params": {"sessionId": "$SESSION", "path": str(target), "content": "new\n"},
                },
                say("written"),
            ],
        ]
    )
    nvim = agent.nvim
    agent.prompt()
    agent.wait_pending()
    [view] = wait_for(agent.views, WAIT, "the first diff tab")
    nvim.api.buffers[view["proposal"]][:] = ["the user's version"]
    nvim.api.command("GeminiAccept")
    agent.wait_answers("session/request_permission", 1)
    agent.wait_transcript("changed my mind")
    agent.wait_idle()
    assert target.read_text() == "old\n"

    agent.prompt()
    agent.wait_pending()
    wait_for(agent.views, WAIT, "the second diff tab")
    nvim.api.command("GeminiAccept")
    [written] = agent.wait_answers("fs/write_text_file", 1)
    assert "result" in written, written
    assert target.read_text() == "new\n"
