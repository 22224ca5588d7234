"""What the agent panel shows on the screen of a real Neovim, read cell by cell
after `:redraw` (`screenstring()`): how its lines wrap in narrow windows (issue 22,
item 5). The panel is driven through the real Python host with the scripted
transport (tests/agent_fakes) in place of a protocol."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import panel_window, screen_rows, status_row, wait_transcript
from harness import ROOT, Nvim, wait_for

SCRIPTED = f"{ROOT / 'tests' / 'agent_fakes' / 'scripted_transport.py'}:ScriptedTransport"


def transcript_rows(nvim: Nvim) -> list[str]:
    return screen_rows(nvim, panel_window(nvim))


def panel_nvim(nvim_factory: Callable[..., Nvim], tmp_path: Path, columns: int) -> Nvim:
    work = tmp_path / "work"
    work.mkdir()
    nvim = nvim_factory(
        cwd=work,
        env={"GEMINI_COMPANION_TEST_TRANSPORT": SCRIPTED},
        extra_init=f"vim.o.columns = {columns}; vim.o.lines = 40",
    )
    nvim.wait_running()
    return nvim


def transcript_status(nvim: Nvim) -> str:
    """The transcript window's status line as the screen shows it."""
    return status_row(nvim, panel_window(nvim))


@pytest.mark.parametrize("columns", [80, 60, 50])
def test_a_confirmations_options_wrap_under_their_indent_in_a_narrow_panel(
    nvim_factory: Callable[..., Nvim], tmp_path: Path, columns: int
) -> None:
    """At 80 columns the panel is 32 wide, at 50 it is 20 (its narrowest): each
    screen row the options line wraps onto starts under its indent, not at the
    window's first column."""
    nvim = panel_nvim(nvim_factory, tmp_path, columns)
    nvim.api.command("GeminiAgent shell")
    wait_transcript(nvim, ":GeminiAccept [option] or :GeminiReject")
    rows = transcript_rows(nvim)
    shown = "\n".join(rows)
    start = next(i for i, row in enumerate(rows) if row.startswith("    options: "))
    end = next(i for i, row in enumerate(rows) if row.startswith("    :GeminiAccept"))
    continued = rows[start + 1 : end]
    assert continued, f"the options line fits: nothing to check\n{shown}"
    for row in continued:
        assert row.startswith("      ") and row.strip(), f"{row!r} is not indented\n{shown}"
    assert "[proceed_once]" in "".join(rows[start:end])
    assert "Reject" in "".join(rows[start:end])
    # The question itself wraps under its own indent too.
    ask = next(i for i, row in enumerate(rows) if row.startswith("  ? Waiting"))
    assert rows[ask + 1].startswith("    "), shown
    # The status line says first that the agent waits (a narrow panel cuts its end).
    assert transcript_status(nvim).startswith(" agent: waiting"), shown


def test_the_prompts_status_line_starts_with_the_help_key_in_a_narrow_panel(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = panel_nvim(nvim_factory, tmp_path, 80)
    nvim.api.command("GeminiAgent")
    status = status_row(nvim, panel_window(nvim, 2))
    # 32 columns: the context words go, the keys that send are said short, and
    # nothing is cut mid-word (issue 32).
    assert status.rstrip() == " ? keys  <CR>/<C-s> sends", status


# The transcript window's status line with the state an ACP agent publishes.
ACP_STATE = """
require('gemini_companion.agent.state')._update({
  state = 'working', protocol = 'acp', mode = 'default', model = 'gemini-2.5-pro',
})
"""


@pytest.mark.parametrize(
    ("columns", "shown"),
    [
        (200, " agent: working  Gemini agent  (acp)  mode: default  model: gemini-2.5-pro"),
        (120, " agent: working  Gemini agent  mode: default"),
        (100, " agent: working  Gemini agent  (acp)"),
        (50, " agent: working"),
    ],
)
def test_the_transcripts_status_line_drops_its_least_important_parts_first(
    nvim_factory: Callable[..., Nvim], tmp_path: Path, columns: int, shown: str
) -> None:
    """The panel is 40 % of the screen: 80, 48, 40 and 20 columns (issue 32)."""
    nvim = panel_nvim(nvim_factory, tmp_path, columns)
    nvim.lua("require('gemini_companion.agent.panel').open({ enter = false })")
    nvim.lua(ACP_STATE)
    assert transcript_status(nvim).rstrip() == shown


def test_the_statusline_component_drops_its_least_important_parts_first(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    """An agent's edit waits in its diff tab: the component says the agent waits
    and a diff does; in fewer columns the agent's state goes first (issue 32)."""
    nvim = panel_nvim(nvim_factory, tmp_path, 80)
    nvim.api.command("GeminiAgent edit")
    render = "return require('gemini_companion').statusline({ highlight = false, max_width = ... })"
    full = "Gemini agent: waiting for you diff"
    plain = "return require('gemini_companion').statusline({ highlight = false })"
    wait_for(lambda: nvim.lua(plain) == full, 15, "the edit waiting in its diff tab")
    assert nvim.lua(render, len(full)) == full
    assert nvim.lua(render, 20) == "Gemini diff"
    assert nvim.lua(render, 6) == "Gemini"
