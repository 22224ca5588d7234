"""Issue 32 item 2: tests never touch the real home of the user who runs them, and a
test that writes there fails the run (home_guard.py, wired in conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import ROOT, Nvim, nvim_executable
from home_guard import REAL_HOME


def _run_guarded(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    """pytest on a test file of ``body`` with the guard as its plugin, the real home
    played by ``tmp_path / "real-home"``."""
    (tmp_path / "real-home" / ".config").mkdir(parents=True)
    tests = tmp_path / "inner"
    tests.mkdir()
    (tests / "test_inner.py").write_text(textwrap.dedent(body))
    env = {
        **os.environ,
        REAL_HOME: str(tmp_path / "real-home"),
        "PYTHONPATH": str(ROOT / "tests"),
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "home_guard", "-p", "no:cacheprovider"],
        cwd=tests,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_test_that_writes_into_the_real_home_fails_the_run_naming_what_it_wrote(
    tmp_path: Path,
) -> None:
    result = _run_guarded(
        tmp_path,
        """
        import os
        from pathlib import Path

        def test_writes_a_log_as_nvim_did():
            log = Path(os.environ["GEMINI_COMPANION_TESTS_REAL_HOME"], ".local", "state", "log")
            log.parent.mkdir(parents=True)
            log.write_text("")

        def test_changes_a_setting():
            home = Path(os.environ["GEMINI_COMPANION_TESTS_REAL_HOME"])
            (home / ".config" / "settings.json").write_text("{}")
        """,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "tests wrote into the user's real home" in out
    real = tmp_path / "real-home"
    assert f"created: {real / '.local'}" in out
    assert f"created: {real / '.local' / 'state' / 'log'}" in out
    assert f"created: {real / '.config' / 'settings.json'}" in out
    assert "2 passed, 1 error" in out


def test_the_users_own_neovim_writing_its_swap_and_shada_meanwhile_fails_nothing(
    tmp_path: Path,
) -> None:
    state = tmp_path / "real-home" / ".local" / "state" / "nvim"
    (state / "swap").mkdir(parents=True)
    result = _run_guarded(
        tmp_path,
        """
        import os
        from pathlib import Path

        def test_while_the_users_neovim_edits():
            nvim = Path(os.environ["GEMINI_COMPANION_TESTS_REAL_HOME"], ".local", "state", "nvim")
            (nvim / "swap" / "%home%u%notes.md.swp").write_text("")
            (nvim / "shada").mkdir()
            (nvim / "shada" / "main.shada").write_text("")
        """,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_tests_that_keep_to_their_own_folders_pass_the_guard(tmp_path: Path) -> None:
    result = _run_guarded(
        tmp_path,
        """
        def test_writes_its_own(tmp_path):
            (tmp_path / ".config").mkdir()
            (tmp_path / ".config" / "x").write_text("")
        """,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_every_test_and_its_children_have_a_private_home(nvim: Nvim) -> None:
    real = os.environ[REAL_HOME]
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        assert not os.environ[name].startswith(real + os.sep) and os.environ[name] != real, name
    assert "GEMINI_CLI_HOME" not in os.environ
    # A Neovim of the harness: a home of its test's own, and so the jobs it starts.
    home = nvim.lua("return vim.env.HOME")
    assert home == str(nvim.sandbox.root / "user-home")
    assert nvim.lua("return vim.fn.expand('~')") == home


def test_finding_neovim_writes_no_log_into_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nvim --version`` made ``~/.local/state/nvim/log``: the harness asks it
    with Neovim's log sent nowhere."""
    probe: Callable[[], str] = nvim_executable.__wrapped__  # type: ignore[attr-defined]
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_STATE_HOME")
    probe()
    assert list(tmp_path.iterdir()) == []
