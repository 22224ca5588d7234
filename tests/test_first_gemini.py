"""The first ``:Gemini`` with Gemini CLI's IDE mode never chosen (issue 22 item 7).

The real CLI 0.61.0 then asks "Do you want to connect Neovim to Gemini CLI?", and
its "Yes" runs ``/ide install``, which ends in "No installer is available for
Neovim": IDE mode stays off. The plugin asks first, in Neovim, and on "Yes" starts
the CLI with ``-i "/ide enable"``: the CLI's own command turns IDE mode on, at the
user's word, and the CLI connects without that question. On "No" the CLI starts as
it is and the user is told how to connect later. The plugin never writes the
settings itself, and asks nothing when IDE mode is set either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness import INTEROP, Nvim, wait_for

GEMINI = INTEROP / "node_modules" / ".bin" / "gemini"
QUESTION = "Do you want to connect"
DEAD_END = "No installer is available"

# vim.ui.select answered by the test: the question is recorded, the answer is the
# item numbered _G.answer.
ANSWER = """
_G.asked = {}
_G.notes = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(_G.asked, { items = items, prompt = opts.prompt })
  on_choice(items[_G.answer], _G.answer)
end
vim.notify = function(msg) table.insert(_G.notes, msg) end
"""


def _home(root: Path, settings: dict[str, Any]) -> Path:
    """A Gemini home as a new user has it: logged in, folder trust at its default."""
    home = root / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2))
    return home


def _screen(nvim: Nvim, buf: int) -> str:
    return "\n".join(line.rstrip() for line in nvim.api.buffers[buf][:] if line.strip())


def _stop(nvim: Nvim, job: int) -> None:
    nvim.lua("vim.fn.jobstop(...)", job)
    wait_for(
        lambda: nvim.lua("return vim.fn.jobwait({...}, 0)[1]", job) != -1, 15, "the CLI to exit"
    )


LOGGED_IN = {"security": {"auth": {"selectedType": "gemini-api-key"}}}


@pytest.mark.usefixtures("interop")
def test_the_first_gemini_asks_in_neovim_and_yes_connects_without_the_clis_dead_end(
    nvim_factory: Any, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    home = _home(tmp_path, LOGGED_IN)
    settings = home / ".gemini" / "settings.json"
    nvim = nvim_factory(
        cwd=project,
        setup={"terminal": {"cmd": str(GEMINI), "env": {"HOME": str(home), "GEMINI_API_KEY": "k"}}},
        extra_init=ANSWER + "_G.answer = 1",
    )
    nvim.wait_running()
    nvim.api.command("Gemini")
    term = wait_for(
        lambda: nvim.lua("return require('gemini_companion.terminal').get()"), 15, "the terminal"
    )
    try:
        nvim.wait_state(lambda s: len(s["sessions"]) >= 1, 90, "the CLI to connect to Neovim")
        asked = nvim.lua("return _G.asked")
        assert len(asked) == 1, asked
        assert f"no ide.enabled in {settings}" in asked[0]["prompt"], asked
        assert asked[0]["items"][0].startswith("Yes: run /ide enable"), asked
        screen = _screen(nvim, term["buf"])
        assert "Connected to Neovim" in screen or "> /ide enable" in screen, screen
        assert QUESTION not in screen and DEAD_END not in screen, screen
        # The CLI's own /ide enable wrote it, at the user's "Yes".
        assert json.loads(settings.read_text())["ide"]["enabled"] is True
        # Folder trust is still the user's to decide: nothing trusted for them.
        assert not (home / ".gemini" / "trustedFolders.json").exists()
    finally:
        _stop(nvim, term["job"])
    # Asked once a session: the next CLI starts at once (IDE mode is on now anyway).
    nvim.api.command("Gemini")
    wait_for(
        lambda: (
            (t := nvim.lua("return require('gemini_companion.terminal').get()"))
            and t["job"] != term["job"]
            and t
        ),
        15,
        "a second CLI",
    )
    assert len(nvim.lua("return _G.asked")) == 1


@pytest.mark.usefixtures("interop")
def test_no_starts_the_cli_as_it_is_and_says_how_to_connect_later(
    nvim_factory: Any, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    home = _home(tmp_path, LOGGED_IN)
    settings = home / ".gemini" / "settings.json"
    before = settings.read_text()
    nvim = nvim_factory(
        cwd=project,
        setup={"terminal": {"cmd": str(GEMINI), "env": {"HOME": str(home), "GEMINI_API_KEY": "k"}}},
        extra_init=ANSWER + "_G.answer = 2",
    )
    nvim.wait_running()
    nvim.api.command("Gemini")
    term = wait_for(
        lambda: nvim.lua("return require('gemini_companion.terminal').get()"), 15, "the terminal"
    )
    try:
        notes = nvim.lua("return _G.notes")
        assert any("type /ide enable in it" in n and "answer No" in n for n in notes), notes
        # The CLI asks its own question, as without the plugin; nothing was written.
        wait_for(lambda: QUESTION in _screen(nvim, term["buf"]), 60, "the CLI's own question")
        assert settings.read_text() == before
        assert nvim.state()["sessions"] == []
    finally:
        _stop(nvim, term["job"])


@pytest.mark.parametrize("enabled", [True, False])
def test_nothing_is_asked_when_ide_mode_is_set_either_way(
    nvim_factory: Any, tmp_path: Path, enabled: bool
) -> None:
    """A stand-in named ``gemini`` records its arguments: started as configured."""
    home = _home(tmp_path, {"ide": {"enabled": enabled}})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv = tmp_path / "argv"
    cli = bin_dir / "gemini"
    cli.write_text(f'#!/bin/sh\necho "$@" > {argv}\nexec sleep 60\n')
    cli.chmod(0o755)
    nvim = nvim_factory(
        setup={"terminal": {"cmd": str(cli), "args": ["--x"], "env": {"HOME": str(home)}}},
        extra_init=ANSWER + "_G.answer = 1",
    )
    nvim.wait_running()
    nvim.api.command("Gemini")
    wait_for(argv.exists, 60, "the stand-in to start")
    assert argv.read_text().strip() == "--x"
    assert nvim.lua("return _G.asked") == []


def test_checkhealth_says_whether_ide_mode_is_on_and_how_to_avoid_the_dead_end(
    nvim_factory: Any, tmp_path: Path
) -> None:
    home = _home(tmp_path, LOGGED_IN)
    settings = home / ".gemini" / "settings.json"
    nvim = nvim_factory(setup={"auto_start": False, "terminal": {"env": {"HOME": str(home)}}})

    def report() -> str:
        nvim.api.command("checkhealth gemini_companion")
        text = "\n".join(nvim.api.current.buffer[:])
        nvim.api.command("bwipeout!")
        return text

    text = report()
    assert f"IDE mode was never turned on (no ide.enabled in {settings})" in text, text
    assert "The first :Gemini of a session asks whether to run the CLI's /ide enable" in text
    assert 'answer No: its Yes looks for an installer and ends in "No installer' in text
    settings.write_text('// mine\n{"ide": {"enabled": true}}\n')
    assert f"IDE mode is on (ide.enabled in {settings})" in report()
    settings.write_text('{"ide": {"enabled": false}}')
    assert "IDE mode is off (ide.enabled: false in" in report()
