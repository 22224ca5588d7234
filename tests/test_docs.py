"""The README is a front page and the help keeps the manual (issue 32 item 1).

Read as a newcomer reads them: the README short, the first use of both halves
near its top (the CLI's own trust question included), what the build writes into
~/.gemini after the install snippet, every ``:help`` topic it names present; the
help files with their tags, contents and modeline, lines that fit 78 columns, and
links that Neovim's own ``:helptags`` resolves (run in a copy of doc/)."""

from __future__ import annotations

import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

from harness import ROOT, nvim_executable

README = ROOT / "README.md"
DOC = ROOT / "doc"
# The help files that hold what the README does not say.
IN_DEPTH = ["usage", "protocols", "security", "performance", "development"]


def _readme() -> str:
    return README.read_text()


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def _columns(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line.expandtabs(8))


def _tags(tmp_path: Path) -> set[str]:
    """The tags of doc/ as Neovim's :helptags writes them, and the runtime's own."""
    copy = tmp_path / "doc"
    shutil.copytree(DOC, copy)
    done = subprocess.run(
        [nvim_executable(), "--headless", "--clean", "-c", f"helptags {copy}", "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and "E154" not in done.stderr, done.stderr
    where = "lua io.write(vim.env.VIMRUNTIME)"
    runtime = subprocess.run(
        [nvim_executable(), "--headless", "--clean", "-c", where, "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    tags: set[str] = set()
    for tags_file in (copy / "tags", Path(runtime) / "doc" / "tags"):
        tags |= {line.split("\t", 1)[0] for line in tags_file.read_text().splitlines()}
    return tags


def test_the_readme_is_a_front_page_of_at_most_300_lines() -> None:
    lines = _readme().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move detail to doc/"


def test_the_first_use_of_both_halves_comes_right_after_the_install() -> None:
    text = _readme()
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[:3] == ["Requirements", "Install", "First use"], headings
    first_use = _section(text, "## First use")
    # The CLI's own questions on the first :Gemini, in its words.
    assert "Do you trust the files in this folder?" in first_use
    assert "/ide enable" in first_use
    assert "Do you want to connect" in first_use
    # :GeminiAgent toggles: a second one closes the panel.
    assert "`:GeminiAgent` toggles the panel" in first_use


def test_what_the_build_writes_into_the_gemini_home_comes_after_the_install_snippet() -> None:
    install = _section(_readme(), "## Install")
    assert install.index("~/.gemini") > install.index("```lua")


def test_every_help_topic_the_readme_names_exists(tmp_path: Path) -> None:
    named = set(re.findall(r":help ([\w.-]+)", _readme()))
    assert {f"gemini-companion-{name}.txt" for name in IN_DEPTH} <= named
    missing = sorted(named - _tags(tmp_path))
    assert not missing, f"README.md names help topics that do not exist: {missing}"


def test_the_readmes_test_command_is_what_ci_runs() -> None:
    development = _section(_readme(), "## Development")
    assert "scripts/test" in development and "the test command" in development
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_the_in_depth_help_files_have_a_tag_contents_and_modeline_within_78_columns() -> None:
    for name in IN_DEPTH:
        path = DOC / f"gemini-companion-{name}.txt"
        lines = path.read_text().splitlines()
        assert lines[0].startswith(f"*{path.name}*"), (path.name, lines[0])
        assert any(line.startswith("CONTENTS") for line in lines), path.name
        assert lines[-1] == "vim:tw=78:ts=8:noet:ft=help:norl:", (path.name, lines[-1])
        wide = [(n, line) for n, line in enumerate(lines, 1) if _columns(line) > 78]
        assert not wide, (path.name, wide)


def test_every_help_link_resolves(tmp_path: Path) -> None:
    tags = _tags(tmp_path)
    unresolved = []
    for path in sorted(DOC.glob("*.txt")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            text = re.sub(r"`[^`]*`", "", line)  # code, not links
            for link in re.findall(r"(?<![\\|])\|([^\s|]+)\|", text):
                if link not in tags:
                    unresolved.append(f"{path.name}:{n}: |{link}|")
    assert not unresolved, unresolved
