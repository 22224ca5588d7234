"""Issue 21 item 11, beyond the build: the Gemini CLIs the plugin starts on its own
(the agent panel's ``gemini --acp`` and A2A server, ``:checkhealth``'s version
probe) leave the user's trust decisions and settings as they were:
``trustedFolders.json`` and ``settings.json`` unchanged (absent when they were
absent), with folder trust at the CLI's default (on), Neovim in a fresh project
folder. (The build is in test_build.py; the CLI the user starts with ``:Gemini``
is theirs to answer, test_first_gemini.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import SERVER_BIN, a2a_setup, acp_setup, transcript
from fake_gemini import fake_gemini, text_turn
from fake_model import text, write_responses
from harness import INTEROP, Nvim, wait_for

GEMINI = INTEROP / "node_modules" / ".bin" / "gemini"
WATCHED = ("trustedFolders.json", "settings.json")

# Logged in with a key; nothing about folder trust (so it is on), nothing the CLI
# would migrate on start.
SETTINGS = json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}, indent=2)


def _home(root: Path, with_trust_file: bool) -> Path:
    home = root / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(SETTINGS)
    if with_trust_file:
        (home / ".gemini" / "trustedFolders.json").write_text('{"/srv/other": "DO_NOT_TRUST"}')
    return home


def _watched(home: Path) -> dict[str, str | None]:
    files = {name: home / ".gemini" / name for name in WATCHED}
    return {name: path.read_text() if path.exists() else None for name, path in files.items()}


@pytest.mark.usefixtures("interop")
def test_the_agent_panels_gemini_acp_leaves_trust_and_settings_as_they_were(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    project = tmp_path / "freshly-cloned"
    project.mkdir()
    home = _home(tmp_path, with_trust_file=False)
    before = _watched(home)
    fake = write_responses(tmp_path / "fake.jsonl", [[[text("Hello from ACP.")]]])
    nvim = nvim_factory(cwd=project, **acp_setup(fake, home))
    nvim.wait_running()
    nvim.api.command("GeminiAgent say hello")
    wait_for(lambda: "Hello from ACP." in transcript(nvim), 120, "the agent's answer")
    nvim.api.command("GeminiAgentStop")
    assert _watched(home) == before


@pytest.mark.skipif(not SERVER_BIN.exists(), reason="scripts/setup installs the A2A server")
def test_the_agent_panels_a2a_server_leaves_trust_and_settings_as_they_were(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    project = tmp_path / "freshly-cloned"
    project.mkdir()
    home = _home(tmp_path, with_trust_file=True)
    before = _watched(home)
    with fake_gemini() as fake:
        fake.add(text_turn("Hello from A2A."))
        nvim = nvim_factory(cwd=project, setup=a2a_setup(fake, home))
        nvim.wait_running()
        nvim.api.command("GeminiAgent say hello")
        wait_for(lambda: "Hello from A2A." in transcript(nvim), 180, "the agent's answer")
        nvim.api.command("GeminiAgentStop")
    assert _watched(home) == before


@pytest.mark.usefixtures("interop")
def test_checkhealth_runs_no_gemini_that_writes_the_home(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    """``:checkhealth`` tells the CLI's version without running it (a ``gemini
    --version`` leaves project-registry files in the home), and writes nothing."""
    project = tmp_path / "freshly-cloned"
    project.mkdir()
    home = _home(tmp_path, with_trust_file=False)
    before = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    nvim = nvim_factory(
        cwd=project,
        setup={"auto_start": False, "terminal": {"cmd": str(GEMINI), "env": {"HOME": str(home)}}},
        env={"HOME": str(home)},
    )
    nvim.api.command("checkhealth gemini_companion")
    report = "\n".join(nvim.api.current.buffer[:])
    assert "Gemini CLI 0.61.0" in report, report
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == before
    assert json.loads((home / ".gemini" / "settings.json").read_text())
