"""The agent panel over ACP in the setup its users have: IDE mode on (issue 22 item 1).

A user of this plugin has run ``/ide enable`` once, so ``ide.enabled`` is true in
their Gemini settings; ``gemini --acp``, started with the terminals' environment,
is then also an IDE client of the companion and asks for each edit twice: the ACP
``session/request_permission`` and IDE mode's ``openDiff``. Both belong to one
edit: one diff tab, and the user's answer there answers both.

Real parts: a headless Neovim with the plugin, the real ``gemini`` 0.61.0 in
``--acp`` mode against the fake Gemini API on loopback (tests/fake_gemini.py, the
model being the one fake), which records the model's requests. Every test runs
with ``ide.enabled`` true and false.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_setup import GEMINI_JS
from fake_gemini import FakeGemini, call_turn, text_turn
from fake_model import gemini_home
from harness import Nvim, wait_for

AGENT_WAIT = 90

pytestmark = pytest.mark.usefixtures("interop")


class Agent:
    def __init__(self, nvim: Nvim, work: Path, fake: FakeGemini) -> None:
        self.nvim = nvim
        self.work = work
        self.fake = fake

    def transcript(self) -> str:
        return "\n".join(self.nvim.lua("return require('gemini_companion.agent').transcript()"))

    def state(self) -> dict[str, Any]:
        return dict(self.nvim.lua("return require('gemini_companion.agent').state()"))

    def wait_state(self, what: str, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            state = self.state()
            return state if check(state) else None

        try:
            return wait_for(probe, AGENT_WAIT, what)
        except AssertionError as exc:
            messages = self.nvim.lua(
                "return vim.api.nvim_exec2('messages', {output = true}).output"
            )
            raise AssertionError(
                f"{exc}\n--- state ---\n{self.state()}\n--- transcript ---\n{self.transcript()}"
                f"\n--- views ---\n{self.views()}"
                f"\n--- messages ---\n{messages}"
            ) from None

    def wait_transcript(self, needle: str) -> None:
        self.wait_state(f"{needle!r} in the transcript", lambda _: needle in self.transcript())

    def views(self) -> list[dict[str, Any]]:
        return list(self.nvim.lua("return require('gemini_companion.diff').views()"))

    def tabs(self) -> int:
        """Tab pages opened since the agent started."""
        return int(self.nvim.lua("return vim.g.test_tabs_opened or 0"))

    def wait_view(self) -> dict[str, Any]:
        self.wait_state("a pending edit", lambda s: bool(s["pending"]))
        views = wait_for(lambda: self.views() or None, 30, "the diff tab")
        return dict(views[0])

    def ide_sessions(self) -> list[Any]:
        return list(self.nvim.lua("return require('gemini_companion').status().sessions or {}"))

    def model_saw(self, needle: str) -> bool:
        return any(needle in json.dumps(r["body"]) for r in self.fake.stream_requests())


@pytest.fixture(params=[True, False], ids=["ide-enabled", "ide-disabled"])
def start_agent(
    request: pytest.FixtureRequest,
    nvim_factory: Callable[..., Nvim],
    tmp_path: Path,
    fake: FakeGemini,
) -> Callable[..., Agent]:
    ide: bool = request.param

    def start(**kwargs: Any) -> Agent:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        home = gemini_home(tmp_path, ide)
        cmd = ["node", str(GEMINI_JS), "--acp"]
        nvim = nvim_factory(
            cwd=work,
            setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}},
            env={
                "HOME": str(home),
                "GEMINI_API_KEY": "offline-test-key",
                "GOOGLE_GEMINI_BASE_URL": fake.url,
            },
            **kwargs,
        )
        nvim.wait_running()
        agent = Agent(nvim, work, fake)
        nvim.lua(
            "vim.api.nvim_create_autocmd('TabNew', {callback = function()"
            " vim.g.test_tabs_opened = (vim.g.test_tabs_opened or 0) + 1 end})"
        )
        nvim.api.command("GeminiAgent")
        agent.wait_state("the agent to start", lambda s: s["state"] == "idle")
        if ide:
            # The setup under test: the agent is also an IDE client of the companion.
            wait_for(lambda: agent.ide_sessions() or None, AGENT_WAIT, "the agent's IDE session")
        return agent

    return start


def test_a_write_accepted_with_the_users_edit_lands_as_the_users_version_and_the_model_reads_it(
    start_agent: Callable[..., Agent],
) -> None:
    agent = start_agent()
    target = agent.work / "notes.txt"
    target.write_text("old line\n")
    agent.fake.add(
        call_turn("write_file", {"file_path": str(target), "content": "new line\n"}),
        text_turn("Written."),
        text_turn("Noted."),
    )
    tabs = agent.tabs()
    agent.nvim.api.command("GeminiAgent update notes.txt")
    view = agent.wait_view()
    nvim = agent.nvim
    nvim.api.buffers[view["proposal"]][:] = ["new line", "# reviewed in Neovim"]
    # One edit, one diff tab.
    assert len(agent.views()) == 1, agent.views()
    assert agent.tabs() == tabs + 1
    nvim.api.command("GeminiAccept")
    agent.wait_transcript("Written.")
    agent.wait_state("the turn to end", lambda s: s["state"] == "idle")
    assert target.read_text() == "new line\n# reviewed in Neovim\n"
    assert agent.views() == []
    assert agent.tabs() == tabs + 1  # no second view came later either
    # The model learns what was written: at once (IDE mode), else with the next prompt.
    nvim.api.command("GeminiAgent thanks")
    agent.wait_transcript("Noted.")
    assert agent.model_saw("# reviewed in Neovim"), agent.fake.stream_requests()[-1]
    # The transcript's tool block shows what was written, not the proposal.
    assert "# reviewed in Neovim" in agent.transcript()


def test_a_replace_on_a_buffer_with_unsaved_changes_keeps_them(
    start_agent: Callable[..., Agent],
) -> None:
    agent = start_agent()
    target = agent.work / "list.txt"
    target.write_text("alpha\nbeta\ngamma\n")
    agent.fake.add(
        call_turn(
            "replace",
            {
                "file_path": str(target),
                "instruction": "Capitalise beta",
                "old_string": "beta",
                "new_string": "BETA",
            },
        ),
        text_turn("Replaced."),
    )
    nvim = agent.nvim
    nvim.api.command(f"edit {target}")
    nvim.api.current.buffer[2:3] = ["gamma (unsaved)"]
    tabs = agent.tabs()
    nvim.api.command("GeminiAgent capitalise beta")
    view = agent.wait_view()
    assert nvim.api.buffers[view["proposal"]][:] == ["alpha", "BETA", "gamma (unsaved)"]
    assert len(agent.views()) == 1 and agent.tabs() == tabs + 1
    nvim.api.command("GeminiAccept")
    agent.wait_transcript("Replaced.")
    agent.wait_state("the turn to end", lambda s: s["state"] == "idle")
    lines = nvim.lua(
        "return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)", str(target)
    )
    assert lines == ["alpha", "BETA", "gamma (unsaved)"]
    assert target.read_text() == "alpha\nBETA\ngamma (unsaved)\n"
    assert agent.tabs() == tabs + 1


def test_a_rejected_edit_answers_every_request_and_the_turn_goes_on(
    start_agent: Callable[..., Agent],
) -> None:
    agent = start_agent()
    target = agent.work / "keep.txt"
    target.write_text("keep me\n")
    agent.fake.add(
        call_turn("write_file", {"file_path": str(target), "content": "gone\n"}),
        text_turn("Understood."),
    )
    agent.nvim.api.command("GeminiAgent overwrite keep.txt")
    agent.wait_view()
    agent.nvim.api.command("GeminiReject")
    agent.wait_state("the turn to end", lambda s: s["state"] == "idle" and not s["pending"])
    assert target.read_text() == "keep me\n"
    assert agent.views() == []
    assert agent.tabs() == 1


def test_a_shell_commands_output_is_shown_or_said_to_have_gone_to_the_model_only(
    start_agent: Callable[..., Agent],
) -> None:
    """Gemini CLI 0.61.0 sends a command's output in the tool's result to the model,
    not in ``tool_call_update`` content (its returnDisplay is terminal cells, or
    empty): the block says so rather than a bare "(done)"."""
    agent = start_agent()
    agent.fake.add(
        call_turn("run_shell_command", {"command": "echo shell-output-42", "description": "echo"}),
        text_turn("Ran it."),
    )
    agent.nvim.api.command("GeminiAgent run echo")
    agent.wait_transcript("Ran it.")
    shown = agent.transcript()
    assert agent.model_saw("shell-output-42")
    assert "shell-output-42" in shown or "went to the model only" in shown, shown


def test_the_panels_accept_takes_the_users_edits_in_the_diff_tab(
    start_agent: Callable[..., Agent],
) -> None:
    agent = start_agent()
    target = agent.work / "panel.txt"
    target.write_text("old\n")
    agent.fake.add(
        call_turn("write_file", {"file_path": str(target), "content": "new\n"}),
        text_turn("Done."),
    )
    agent.nvim.api.command("GeminiAgent update panel.txt")
    view = agent.wait_view()
    agent.nvim.api.buffers[view["proposal"]][:] = ["new", "# kept from the tab"]
    # The panel's accept key (as <LocalLeader>a calls it), from outside the tab.
    agent.nvim.api.command("tabprevious")
    agent.wait_state("the edit shown", lambda _: "panel.txt" in agent.transcript())
    agent.nvim.lua("require('gemini_companion.agent').accept()")
    agent.wait_transcript("Done.")
    agent.wait_state("the turn to end", lambda s: s["state"] == "idle")
    assert target.read_text() == "new\n# kept from the tab\n"
    assert agent.views() == []
