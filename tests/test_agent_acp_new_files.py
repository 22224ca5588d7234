"""An agent creates files through the panel over ACP, with the real ``gemini`` 0.61.0.

Before writing, the CLI's ``write_file`` (and ``replace``) reads the file through
the client's ``fs/read_text_file`` to tell a creation from an overwrite. 0.61.0
recognises "not found" only from an ``Error``'s message, but its ACP SDK rejects
with the plain JSON-RPC error object, so no error a client answers can mean
"absent" and the tool failed with "Error checking existing file". The plugin
answers a missing file the policy allows with empty text (README, "Agent panel").

Real parts: a headless Neovim with the plugin, the real ``gemini --acp`` against
the fake Gemini API on loopback, with ``ide.enabled`` true and false in its
settings (test_agent_ide_mode.py's fixtures).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fake_gemini import call_turn, text_turn
from test_agent_ide_mode import Agent, start_agent  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("interop")


@pytest.mark.parametrize("name", ["new.txt", "sub/dir/new.txt"], ids=["file", "in-new-folders"])
def test_a_new_file_the_agent_writes_lands_on_disk_as_the_user_accepted_it(
    start_agent: Callable[..., Agent],  # noqa: F811
    name: str,
) -> None:
    agent = start_agent()
    target = agent.work / name
    agent.fake.add(
        call_turn("write_file", {"file_path": str(target), "content": "created\n"}),
        text_turn("Created."),
    )
    agent.nvim.api.command(f"GeminiAgent create {name}")
    view = agent.wait_view()
    assert view["file_path"] == str(target)
    assert not target.exists()  # nothing is written before the answer
    nvim = agent.nvim
    assert nvim.api.buffers[view["proposal"]][:] == ["created"]
    nvim.api.buffers[view["proposal"]][:] = ["created", "# by the user"]
    nvim.api.command("GeminiAccept")
    agent.wait_transcript("Created.")
    agent.wait_state("the turn to end", lambda s: s["state"] == "idle")
    assert target.read_text() == "created\n# by the user\n"
    assert "Error checking existing file" not in agent.transcript()


def test_a_new_file_outside_the_workspace_is_still_refused(
    start_agent: Callable[..., Agent],  # noqa: F811
    tmp_path: Path,
) -> None:
    agent = start_agent()
    target = tmp_path / "elsewhere" / "new.txt"
    agent.fake.add(
        call_turn("write_file", {"file_path": str(target), "content": "outside\n"}),
        text_turn("Gave up."),
    )
    agent.nvim.api.command("GeminiAgent create it")
    agent.wait_transcript("Gave up.")
    agent.wait_state("the turn to end", lambda s: s["state"] == "idle")
    assert not target.exists()
    assert agent.views() == []


def test_a_replace_creating_a_file_is_refused_by_the_cli_and_writes_nothing(
    start_agent: Callable[..., Agent],  # noqa: F811
) -> None:
    """The price of the decision: a missing file reads as empty, so the CLI's
    ``replace`` with an empty ``old_string`` (its way to create) takes the file
    for an existing one and fails with its own message; nothing is shown or
    written, and the turn goes on (the model then uses ``write_file``)."""
    agent = start_agent()
    target = agent.work / "made.txt"
    agent.fake.add(
        call_turn(
            "replace",
            {
                "file_path": str(target),
                "instruction": "Create it",
                "old_string": "",
                "new_string": "made\n",
            },
        ),
        text_turn("Tried."),
    )
    agent.nvim.api.command("GeminiAgent make made.txt")
    agent.wait_transcript("Tried.")
    agent.wait_state("the turn to end", lambda s: s["state"] == "idle")
    assert not target.exists()
    assert agent.views() == []
    assert "already exists" in agent.transcript(), agent.transcript()
