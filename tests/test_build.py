"""What the build writes outside the plugin, and what set-up does when a download
fails.

- The build links the plugin's Gemini CLI extension (Neovim's tools for a CLI
  started by ``:Gemini``) by writing the one record the CLI reads for a link, and
  nothing else: ``gemini extensions link`` would also mark the folder Neovim is in
  trusted (``trustedFolders.json``). Checked with the real ``gemini`` 0.61.0 in a
  fresh Gemini home whose folder trust is at its default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness import INTEROP, nvim_executable, wait_for
from test_plugin import _install, _user_env, user_init, user_nvim

GEMINI = INTEROP / "node_modules" / ".bin" / "gemini"
EXTENSION = "gemini-companion-nvim"
RECORD = f".gemini/extensions/{EXTENSION}/.gemini-extension-install.json"


def _ready_venv(root: Path) -> None:
    """The plugin's venv, made ahead: its ``python`` is this suite's own (which has
    every pinned package), and its ``-m pip install`` installs nothing, at once."""
    venv = root / "data" / "nvim" / "gemini-companion" / "venv"
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (venv / "lib" / version / "site-packages").mkdir(parents=True)
    (venv / "bin").mkdir()
    python = venv / "bin" / "python"
    python.write_text(
        "#!/bin/sh\n"
        'if [ "$1 $2 $3" = "-m pip install" ]; then exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _build(root: Path, env: dict[str, str], cwd: Path, opts: dict[str, object]) -> list[str]:
    """``:GeminiCompanionBuild`` in a Neovim whose working directory is ``cwd``;
    returns the build's messages (progress and the outcome)."""
    base = getattr(sys, "_base_executable", sys.executable)
    pre = "\n".join(
        [
            f"vim.g.python3_host_prog = {json.dumps(base)}",
            "_G.notes = {}",
            "vim.notify = function(m) table.insert(_G.notes, m) end",
            "local echo = vim.api.nvim_echo",
            "vim.api.nvim_echo = function(chunks, ...)",
            "  table.insert(_G.notes, chunks[1] and chunks[1][1] or '')",
            "  return echo(chunks, ...)",
            "end",
        ]
    )
    with user_nvim(root, env, user_init(root, opts, pre)) as nvim:
        nvim.command("cd " + str(cwd).replace(" ", "\\ "))
        nvim.command("GeminiCompanionBuild")
        notes: list[str] = wait_for(
            lambda: (
                (n := nvim.exec_lua("return _G.notes"))
                and "build" in n[-1]
                and "ready" in n[-1]
                and n
            ),
            120,
            "the build's last message",
        )
        assert nvim.exec_lua("return vim.uv.cwd()") == str(cwd)
        return notes


def _lazy_build(root: Path, env: dict[str, str], cwd: Path) -> list[str]:
    """build.lua as lazy.nvim runs it after an install or update (as ``lazy_build``
    in test_plugin.py: a coroutine resumed from the event loop, yielded strings as
    progress), with Neovim's working directory ``cwd`` and no setup() yet, so the
    CLI is the ``gemini`` on PATH; returns the progress lines."""
    plugin = root / "data" / "nvim" / "lazy" / "gemini-companion.nvim"
    init = root / "lazy-build-init.lua"
    base = getattr(sys, "_base_executable", sys.executable)
    init.write_text(
        "\n".join(
            [
                f"vim.g.python3_host_prog = {json.dumps(base)}",
                f"local dir = {json.dumps(str(plugin))}",
                "vim.opt.rtp:prepend(dir)",
                "local co = coroutine.create(assert(loadfile(dir .. '/build.lua')))",
                "local timer = vim.uv.new_timer()",
                "timer:start(0, 5, vim.schedule_wrap(function()",
                "  local ok, msg = coroutine.resume(co)",
                "  if not ok then io.stderr:write('BUILD ERROR: ' .. tostring(msg) .. '\\n')",
                "  elseif msg then io.stderr:write('PROGRESS: ' .. tostring(msg) .. '\\n') end",
                "  if coroutine.status(co) == 'dead' then timer:stop(); vim.cmd('qa!') end",
                "end))",
            ]
        )
    )
    env = {**env, "PATH": f"{GEMINI.parent}{os.pathsep}{env['PATH']}"}
    done = subprocess.run(
        [nvim_executable(), "--headless", "-u", str(init)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "BUILD ERROR" not in done.stderr, done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith("PROGRESS: ")]


def _cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TERM")}
    env["HOME"] = str(home)
    return env


@pytest.mark.usefixtures("interop")
@pytest.mark.parametrize(
    ("had_home", "via"),
    [(False, "command"), (True, "command"), (False, "lazy")],
    ids=[":GeminiCompanionBuild, no Gemini home", ":GeminiCompanionBuild", "lazy.nvim's build.lua"],
)
def test_the_build_links_the_extension_and_leaves_trust_and_settings_as_they_were(
    tmp_path: Path, had_home: bool, via: str
) -> None:
    """Neovim open in a freshly cloned project, the Gemini CLI installed, folder
    trust at the CLI's default (on): the build links the extension, the real CLI
    lists it enabled with its ``nvim`` server, and ``trustedFolders.json`` and
    ``settings.json`` are as they were (absent when they were absent); the record
    the README names is the only file the build adds to the Gemini home."""
    env = _user_env(tmp_path)
    _install(tmp_path)
    _ready_venv(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env["HOME"] = str(home)
    if had_home:
        gemini = home / ".gemini"
        gemini.mkdir()
        (gemini / "settings.json").write_text('{"general": {"disableAutoUpdate": true}}\n')
        (gemini / "trustedFolders.json").write_text('{"/srv/elsewhere": "DO_NOT_TRUST"}\n')
    project = tmp_path / "freshly-cloned"
    (project / ".gemini").mkdir(parents=True)
    (project / ".gemini" / "settings.json").write_text('{"mcpServers": {}}\n')
    before = _files(home)

    if via == "lazy":
        notes = _lazy_build(tmp_path, env, project)
    else:
        opts = {"auto_start": False, "terminal": {"cmd": str(GEMINI)}}
        notes = _build(tmp_path, env, project, opts)

    after = _files(home)
    for name in (".gemini/trustedFolders.json", ".gemini/settings.json"):
        assert after.get(name) == before.get(name), f"{name} changed: {after.get(name)!r}"
    assert sorted(set(after) - set(before)) == [RECORD], sorted(after)
    assert {k: v for k, v in after.items() if k in before} == before
    plugin = tmp_path / "data" / "nvim" / "lazy" / "gemini-companion.nvim"
    assert json.loads(after[RECORD]) == {
        "source": str(plugin / "gemini-extension"),
        "type": "link",
    }
    # lazy.nvim shows the whole line; the echo of :GeminiCompanionBuild cuts it to
    # one line of the message area (no "Press ENTER").
    said = f"linked into {home}/.gemini/extensions" if via == "lazy" else "extension: linked into"
    assert any(said in n for n in notes), notes

    # The real CLI (run elsewhere, so its own start-up files do not muddle the above)
    # loads it: enabled, with the server the terminal's variables name.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    listed = subprocess.run(
        [str(GEMINI), "extensions", "list"],
        cwd=elsewhere,
        env=_cli_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = listed.stdout + listed.stderr
    assert f"{EXTENSION} (0.1.0)" in out, out
    assert f"Source: {plugin / 'gemini-extension'} (Type: link)" in out, out
    assert "Enabled (User): true" in out, out
    assert "MCP servers:\n  nvim" in out, out
    trusted = home / ".gemini" / "trustedFolders.json"
    assert not trusted.exists() or str(project) not in trusted.read_text()


def test_a_stale_link_is_replaced_and_an_entry_not_ours_is_left_alone(
    tmp_path: Path,
) -> None:
    """A link of this extension to a folder that is gone (the plugin moved) is
    rewritten; an installed copy of the same name, or a link to another checkout,
    is left as it is, and the message says what to do."""
    env = _user_env(tmp_path)
    _install(tmp_path)
    home = tmp_path / "home"
    entry = home / ".gemini" / "extensions" / EXTENSION
    entry.mkdir(parents=True)
    record = entry / ".gemini-extension-install.json"
    env["HOME"] = str(home)
    link = "return { require('gemini_companion.extension').link() }"
    with user_nvim(tmp_path, env, user_init(tmp_path, {"auto_start": False})) as nvim:
        record.write_text(json.dumps({"source": str(tmp_path / "moved"), "type": "link"}))
        ok, message = nvim.exec_lua(link)
        assert ok is True, message
        assert nvim.exec_lua("return require('gemini_companion.extension').linked()") is True

        other = tmp_path / "other-checkout"
        other.mkdir()
        (other / "gemini-extension.json").write_text("{}")
        theirs = json.dumps({"source": str(other), "type": "link"})
        record.write_text(theirs)
        ok, message = nvim.exec_lua(link)
        assert ok is False
        assert f"is a link to {other}: left as it is" in message, message
        assert f"gemini extensions uninstall {EXTENSION}" in message
        assert record.read_text() == theirs

        installed = json.dumps({"source": "https://example.invalid/x.git", "type": "git"})
        record.write_text(installed)
        ok, message = nvim.exec_lua(link)
        assert ok is False and "is not a link of this plugin" in message, message
        assert record.read_text() == installed
