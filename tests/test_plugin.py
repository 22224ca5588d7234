"""Issue 5: the plugin as a user meets it: install with its build step, :checkhealth,
:help, setup() validation, the :Gemini terminal with the real Gemini CLI in it.

The fresh install follows the README's lazy.nvim path. lazy.nvim itself cannot be
downloaded here, so ``lazy_build`` does what lazy.nvim does for this plugin (read in
lazy.nvim's ``lua/lazy/manage/task/plugin.lua``): the checkout lands in
``stdpath("data")/lazy/gemini-companion.nvim``, its root goes on 'runtimepath', the
``build.lua`` at its root runs through ``loadfile(...)()`` in Neovim, inside a
coroutine that lazy.nvim's scheduler resumes from the event loop and whose yielded
strings are progress messages, then ``:helptags`` on its ``doc/``; at start-up lazy
puts it on 'runtimepath' and calls ``require("gemini_companion").setup(opts)``.
(lazy.nvim 11's own scheduler, ``lazy.async``, can also suspend a task until it is
woken; that module is not emulated, so build.lua's yielding path is the one tested.)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest
from harness import (
    INTEROP,
    ROOT,
    Nvim,
    Sandbox,
    ci_marker,
    nvim_executable,
    short_dir,
    wait_for,
)

GEMINI = INTEROP / "node_modules" / ".bin" / "gemini"
PLUGIN_NAME = "gemini-companion.nvim"


# -- a lazy.nvim-style install ---------------------------------------------------------


def _plugin_files() -> list[str]:
    """What a clone of this checkout holds (tracked and new files, not ignored ones)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


def _user_env(root: Path, *, keep_manifest: bool = False) -> dict[str, str]:
    """A user's environment: a private HOME and XDG folders (the build links the
    extension into ``~/.gemini`` when ``gemini`` is on PATH), and a PATH without this
    checkout's .venv (whose pynvim would otherwise be what Neovim's provider finds)."""
    sandbox = Sandbox.create(root, root / "unused-manifest.vim")
    env = dict(sandbox.env)
    if not keep_manifest:
        env.pop("NVIM_RPLUGIN_MANIFEST")
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env.pop("VIRTUAL_ENV", None)
    # pip's download cache, shared between tests and runs (the XDG cache is private)
    env["PIP_CACHE_DIR"] = str(ROOT / ".cache" / "pip")
    return env


def _install(root: Path) -> Path:
    plugin = root / "data" / "nvim" / "lazy" / PLUGIN_NAME
    for rel in _plugin_files():
        target = plugin / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    return plugin


def lazy_build(root: Path, env: dict[str, str], pre: str = "") -> subprocess.CompletedProcess[str]:
    """Run the build as lazy.nvim does; ``pre`` is the user's init.lua before it."""
    plugin = root / "data" / "nvim" / "lazy" / PLUGIN_NAME
    init = root / "build-init.lua"
    init.write_text(
        "\n".join(
            [
                pre,
                f"local dir = {json.dumps(str(plugin))}",
                "vim.opt.rtp:prepend(dir)",
                "vim.cmd([[silent! runtime plugin/rplugin.vim]])  -- lazy.nvim does this first",
                # lazy.nvim runs the build in a coroutine that its scheduler resumes
                # from the event loop; yielded strings are progress
                "local build = assert(loadfile(dir .. '/build.lua'))",
                "local co = coroutine.create(build)",
                "local timer = vim.uv.new_timer()",
                "timer:start(0, 5, vim.schedule_wrap(function()",
                "  if coroutine.status(co) == 'dead' then return end",
                "  local ok, msg = coroutine.resume(co)",
                "  if not ok then",
                "    io.stderr:write('BUILD ERROR: ' .. tostring(msg) .. '\\n')",
                "  elseif msg then",
                "    io.stderr:write('PROGRESS: ' .. tostring(msg) .. '\\n')",
                "  end",
                "  if coroutine.status(co) == 'dead' then",
                "    timer:stop()",
                "    pcall(vim.cmd.helptags, dir .. '/doc')",
                "    vim.cmd('qa!')",
                "  end",
                "end))",
            ]
        )
    )
    return subprocess.run(
        [nvim_executable(), "--headless", "-u", str(init)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def user_init(root: Path, opts: dict[str, Any], pre: str = "") -> Path:
    """init.lua as lazy.nvim runs it for ``{ dir, opts = opts }``."""
    plugin = root / "data" / "nvim" / "lazy" / PLUGIN_NAME
    init = root / "init.lua"
    init.write_text(
        "\n".join(
            [
                "vim.o.shadafile = 'NONE'",
                "vim.o.swapfile = false",
                pre,
                f"vim.opt.rtp:prepend({json.dumps(str(plugin))})",
                "require('gemini_companion').setup(vim.json.decode("
                + json.dumps(json.dumps(opts))
                + "))",
            ]
        )
    )
    return init


@contextlib.contextmanager
def user_nvim(root: Path, env: dict[str, str], init: Path) -> Iterator[pynvim.Nvim]:
    argv = ["/usr/bin/env", "-i", *[f"{k}={v}" for k, v in env.items()]]
    argv += [nvim_executable(), "--embed", "--headless", "-u", str(init)]
    nvim = pynvim.attach("child", argv=argv)
    try:
        yield nvim
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")
        with contextlib.suppress(Exception):
            nvim.close()


def wait_running(nvim: pynvim.Nvim, timeout: float = 20) -> dict[str, Any]:
    return wait_for(
        lambda: (
            (s := nvim.exec_lua("return require('gemini_companion.state').current"))["running"]
            and not s.get("loading")
            and s
        ),
        timeout,
        "the companion server to run",
    )


def checkhealth(nvim: pynvim.Nvim) -> str:
    nvim.command("checkhealth gemini_companion")
    return "\n".join(nvim.current.buffer[:])


def provider_python(env: dict[str, str]) -> str:
    """What Neovim's python3 provider finds with pynvim in ``env`` ("" for nothing)."""
    out = subprocess.run(
        [nvim_executable(), "--clean", "--headless", "-l", "-"],
        input="io.write(require('vim.provider.python').detect_by_module('neovim') or '')",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.strip()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh install with the user's g:python3_host_prog unset."""
    root = tmp_path_factory.mktemp("lazy-own")
    env = _user_env(root)
    _install(root)
    result = lazy_build(root, env)
    assert "BUILD ERROR" not in result.stderr, result.stderr
    assert "PROGRESS: installing pynvim==" in result.stderr, result.stderr
    return root, env


def test_lazy_install_builds_its_venv_and_makes_it_the_host_when_none_has_pynvim(
    installed: tuple[Path, dict[str, str]],
) -> None:
    root, env = installed
    data = root / "data" / "nvim"
    info = json.loads((data / "gemini-companion" / "build.json").read_text())
    assert info["ok"] is True
    # Here no Python on PATH has pynvim, so the venv must become the host; on a
    # machine where one has, the build must keep that one instead.
    found = provider_python(env)
    own = not found
    assert info["mode"] == ("own" if own else "shared"), info
    venv_python = data / "gemini-companion" / "venv" / "bin" / "python"
    assert venv_python.exists()
    assert (data / "lazy" / PLUGIN_NAME / "doc" / "tags").exists()
    package = data / "lazy" / PLUGIN_NAME / "rplugin" / "python3" / "gemini_companion"
    assert list((package / "__pycache__").glob("companion.*.pyc")), "the build byte-compiles"

    init = user_init(root, {"terminal": {"cmd": str(GEMINI)}})
    with user_nvim(root, env, init) as nvim:
        state = wait_running(nvim)
        assert state["port"] > 0
        assert Path(state["discovery_file"]).exists()
        host = nvim.exec_lua("return require('gemini_companion.host').info")
        if own:
            # Neovim's own python3 provider is the user's: nothing set it.
            assert "python3_host_prog" not in nvim.vars
            assert host["python"] == str(venv_python)
            assert host["venv"] == "host"
        else:
            assert host["venv"] == "appended"

        report = checkhealth(nvim)
        assert "ERROR" not in report, report
        for expected in (
            "Python host: the plugin's venv" if own else "Python host: kept yours",
            "no Python with pynvim was found" if own else "already has pynvim",
            "pynvim 0.6.0",
            "mcp 2.3.0",
            f"server running on 127.0.0.1:{state['port']}",
            "(mode 0600, yours)",
            "exported to terminals: GEMINI_CLI_IDE_AUTH_TOKEN",
        ):
            assert expected in report, f"{expected!r} missing from:\n{report}"
        if GEMINI.exists():
            assert "Gemini CLI 0.61.0" in report, report


def test_help_resolves_after_install(installed: tuple[Path, dict[str, str]]) -> None:
    root, env = installed
    init = user_init(root, {"auto_start": False})
    with user_nvim(root, env, init) as nvim:
        doc = root / "data" / "nvim" / "lazy" / PLUGIN_NAME / "doc" / "gemini-companion.txt"
        tags = [
            line.split("\t")[0]
            for line in (doc.parent / "tags").read_text().splitlines()
            if line.split("\t")[1] == "gemini-companion.txt"
        ]
        for tag in ["gemini-companion", ":Gemini", "gemini_companion.setup()", *tags]:
            nvim.command("help " + tag.replace("|", "\\|"))
            assert nvim.current.buffer.name == str(doc), tag
            nvim.command("helpclose")


def bare_host(root: Path) -> Path:
    """A Python with pynvim and none of the server's packages (a user's own host)."""
    venv = root / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    ours = Path(sys.executable).parent.parent / "lib" / version / "site-packages"
    theirs = venv / "lib" / version / "site-packages"
    for entry in ours.iterdir():
        name = entry.name.lower()
        if name.startswith(("pynvim", "neovim", "msgpack", "greenlet", "typing_extensions")):
            (theirs / entry.name).symlink_to(entry)
    return venv / "bin" / "python"


def test_build_with_a_users_host_prog_keeps_it_and_adds_the_venv_behind_it(
    tmp_path: Path,
) -> None:
    env = _user_env(tmp_path)
    _install(tmp_path)
    bare = str(bare_host(tmp_path))
    pre = f"vim.g.python3_host_prog = {json.dumps(bare)}"
    result = lazy_build(tmp_path, env, pre)
    assert "BUILD ERROR" not in result.stderr, result.stderr
    info = json.loads((tmp_path / "data" / "nvim" / "gemini-companion" / "build.json").read_text())
    assert info["mode"] == "shared", info
    assert "g:python3_host_prog" in info["reason"]
    assert info["venv"], "the host lacks the server's packages: they go into a venv"

    with user_nvim(tmp_path, env, user_init(tmp_path, {}, pre)) as nvim:
        wait_running(nvim)
        assert nvim.vars["python3_host_prog"] == bare
        host = nvim.exec_lua("return require('gemini_companion.host').info")
        assert host["python"] == bare
        assert host["venv"] == "appended"
        report = checkhealth(nvim)
        assert "Python host: kept yours" in report, report
        assert "ERROR" not in report, report


def test_build_with_an_old_python_fails_with_one_message_naming_the_fix(tmp_path: Path) -> None:
    env = _user_env(tmp_path)
    _install(tmp_path)
    old = tmp_path / "python3.8"
    old.write_text("#!/bin/sh\necho 3.8.10\necho True\n")
    old.chmod(0o755)
    result = lazy_build(tmp_path, env, f"vim.g.python3_host_prog = {json.dumps(str(old))}")
    errors = [line for line in result.stderr.splitlines() if "BUILD ERROR" in line]
    assert len(errors) == 1, result.stderr
    assert "Python 3.8.10" in errors[0]
    assert "needs 3.10+" in errors[0]
    assert "install Python 3.10 or newer" in errors[0]
    info = json.loads((tmp_path / "data" / "nvim" / "gemini-companion" / "build.json").read_text())
    assert info["ok"] is False
    pre = f"vim.g.python3_host_prog = {json.dumps(str(old))}"
    with user_nvim(tmp_path, env, user_init(tmp_path, {"auto_start": False}, pre)) as nvim:
        report = checkhealth(nvim)
    assert "ERROR the last build failed" in report, report
    assert "install Python 3.10 or newer" in report


def _slow_installer_venv(root: Path, *, fail: bool = False) -> Path:
    """The plugin's venv, made ahead with a stand-in for pip: its ``python`` is this
    test-suite's own (which has every pinned package), except that ``-m pip install``
    prints a line every 0.3 s for 3 s, while a marker file exists, and installs
    nothing."""
    venv = root / "data" / "nvim" / "gemini-companion" / "venv"
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (venv / "lib" / version / "site-packages").mkdir(parents=True)
    (venv / "bin").mkdir()
    marker = root / "installing"
    python = venv / "bin" / "python"
    python.write_text(
        "#!/bin/sh\n"
        'if [ "$1 $2 $3" = "-m pip install" ]; then\n'
        f"  touch {marker}\n"
        '  for i in 1 2 3 4 5 6 7 8 9 10; do echo "Collecting package $i"; sleep 0.3; done\n'
        f"  rm {marker}\n"
        + (
            "  echo 'ERROR: No matching distribution found for mcp==2.3.0' >&2\n  exit 1\n"
            if fail
            else "  exit 0\n"
        )
        + "fi\n"
        + f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    return marker


def first_start_without_build(root: Path) -> tuple[dict[str, str], Path]:
    """A user's environment with the plugin installed and never built, its pip a
    slow stand-in (:func:`_slow_installer_venv`): the environment, and the marker
    file that exists while that pip runs (bench/build_keys.py uses it too)."""
    env = _user_env(root)
    _install(root)
    marker = _slow_installer_venv(root)
    # No g:python3_host_prog, and python3 on PATH is this suite's base Python (the
    # same version, without pynvim): the build makes the plugin's venv (above) the host.
    shim = root / "shim"
    shim.mkdir()
    (shim / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    return env, marker


def test_first_start_builds_in_the_background_keys_stay_live_and_the_companion_starts(
    tmp_path: Path,
) -> None:
    """Installed without a build: the first start runs the build in the background
    (here with a slow stand-in for pip), typed keys are handled while it runs (not
    held until it ends; how fast is bench's business, not a timed test), and the
    companion starts in the same session."""
    env, marker = first_start_without_build(tmp_path)
    pre = "\n".join(
        [
            "_G.notes = {}",
            "vim.notify = function(m) table.insert(_G.notes, m) end",
            "_G.handled = {}",
            # Each key notes whether the (slow) pip step still ran when it was handled.
            f"local marker = {json.dumps(str(marker))}",
            "vim.keymap.set('n', '<F2>', function()",
            "  table.insert(_G.handled, vim.uv.fs_stat(marker) ~= nil)",
            "end)",
        ]
    )
    with user_nvim(tmp_path, env, user_init(tmp_path, {}, pre)) as nvim:
        wait_for(marker.exists, 60, "the build to reach the (slow) pip step")
        typed = 0
        while marker.exists():  # one key at a time, each once the last is handled
            nvim.input("<F2>")
            typed += 1
            wait_for(
                lambda n=typed: len(nvim.exec_lua("return _G.handled")) >= n, 60, "the key handled"
            )
        handled = nvim.exec_lua("return _G.handled")
        # A build that held Neovim would have them all handled after pip ended.
        assert sum(handled) >= 3, f"keys handled while pip ran (true) or after: {handled}"

        state = wait_running(nvim, 60)
        assert state["port"] > 0
        notes = nvim.exec_lua("return _G.notes")
        assert "first start: running the build step" in notes[0], notes
        assert any("the companion is ready" in n for n in notes), notes
        assert not any("restart" in n for n in notes), notes
        assert len(notes) == 2, notes
        info = json.loads(
            (tmp_path / "data" / "nvim" / "gemini-companion" / "build.json").read_text()
        )
        assert info["mode"] == "own", info


def test_build_command_then_start_works_in_the_same_session(tmp_path: Path) -> None:
    """:GeminiCompanionBuild with auto_start off: one message, and the companion
    starts right after it in the same session, on the Python the build chose."""
    env = _user_env(tmp_path)
    _install(tmp_path)
    _slow_installer_venv(tmp_path)
    base = getattr(sys, "_base_executable", sys.executable)
    pre = f"vim.g.python3_host_prog = {json.dumps(base)}\n_G.notes = {{}}\n" + (
        "vim.notify = function(m) table.insert(_G.notes, m) end"
    )
    with user_nvim(tmp_path, env, user_init(tmp_path, {"auto_start": False}, pre)) as nvim:
        nvim.command("GeminiCompanionBuild")
        notes = wait_for(lambda: nvim.exec_lua("return _G.notes"), 120, "the build's message")
        assert len(notes) == 1 and "the companion is ready" in notes[0], notes
        nvim.command("GeminiCompanionStart")
        wait_running(nvim, 30)
        host = nvim.exec_lua("return require('gemini_companion.host').info")
        venv = tmp_path / "data" / "nvim" / "gemini-companion" / "venv"
        assert venv.exists()
        assert nvim.vars["python3_host_prog"] == base  # the user's provider, untouched
        assert host["venv"] in ("host", "appended"), host
        report = checkhealth(nvim)
        assert "ERROR" not in report, report


def test_a_failed_build_ends_with_one_message_with_the_installers_last_lines_and_the_log(
    tmp_path: Path,
) -> None:
    env = _user_env(tmp_path)
    _install(tmp_path)
    _slow_installer_venv(tmp_path, fail=True)
    base = getattr(sys, "_base_executable", sys.executable)
    pre = f"vim.g.python3_host_prog = {json.dumps(base)}\n_G.notes = {{}}\n" + (
        "vim.notify = function(m, level) table.insert(_G.notes, {m, level}) end"
    )
    with user_nvim(tmp_path, env, user_init(tmp_path, {"auto_start": False}, pre)) as nvim:
        nvim.command("GeminiCompanionBuild")
        notes = wait_for(lambda: nvim.exec_lua("return _G.notes"), 60, "the build's message")
        assert len(notes) == 1, notes
        message, level = notes[0]
        assert level == 4, "an error"
        assert message.startswith("gemini-companion build failed: pip could not install"), message
        assert "Collecting package 10" in message
        assert "No matching distribution found for mcp==2.3.0" in message
        log = tmp_path / "state" / "nvim" / "gemini-companion-build.log"
        assert f"(whole output: {log})" in message
        assert "Collecting package 1\n" in log.read_text()
        info = json.loads(
            (tmp_path / "data" / "nvim" / "gemini-companion" / "build.json").read_text()
        )
        assert info["ok"] is False


def _install_blocks(text: str, start: str, end: str) -> list[str]:
    """The code blocks of an install section (Markdown fences or help ``>lua``)."""
    first = text.index(start)
    section = text[first : text.index(end, first + len(start))]
    if "```" in section:
        return [b.split("\n", 1)[1] for b in section.split("```")[1::2]]
    blocks = re.findall(r">(?:lua|vim)\n(.*?)\n<", section, re.S)
    return [textwrap.dedent(b) for b in blocks]


def test_install_specs_in_readme_and_help_agree_and_name_the_build_that_runs() -> None:
    readme = _install_blocks((ROOT / "README.md").read_text(), "## Install", "\n## ")
    help_ = _install_blocks(
        (ROOT / "doc" / "gemini-companion.txt").read_text(),
        "*gemini-companion-install*",
        "*gemini-companion-build*",
    )
    assert [b.strip() for b in readme] == [b.strip() for b in help_]
    specs = "\n".join(readme)
    assert '"OWNER/gemini-companion.nvim"' in specs and 'dir = "' in specs
    assert "'OWNER/gemini-companion.nvim'" in specs
    # lazy.nvim reads build.lua at the root by itself; the others call the build
    assert (ROOT / "build.lua").exists()
    assert specs.count('require("gemini_companion.build").start()') == 2


@pytest.mark.parametrize("manager", ["packer", "vim-plug"])
def test_packer_and_vim_plug_build_hooks_as_written_build_without_plugin_files(
    tmp_path: Path, manager: str
) -> None:
    """The hook from the README's spec, run as packer/vim-plug run it after an
    install: the plugin on 'runtimepath' and only its Vim files sourced (so not
    plugin/gemini_companion.lua). The build completes."""
    readme = "\n".join(_install_blocks((ROOT / "README.md").read_text(), "## Install", "\n## "))
    if manager == "packer":
        hook = re.search(r"run = (function\(\).*? end),", readme)
        assert hook, readme
        call = f"local hook = {hook.group(1)} hook()"
    else:
        hook = re.search(r"'do': '(:[^']+)'", readme)
        assert hook, readme
        call = f"vim.cmd({json.dumps(hook.group(1)[1:])})"
    env = _user_env(tmp_path)
    plugin = _install(tmp_path)
    _slow_installer_venv(tmp_path)
    base = getattr(sys, "_base_executable", sys.executable)
    init = tmp_path / "hook-init.lua"
    init.write_text(
        "\n".join(
            [
                f"vim.g.python3_host_prog = {json.dumps(base)}",
                f"vim.opt.rtp:prepend({json.dumps(str(plugin))})",
                call,
                "vim.wait(120000, function()"
                " return require('gemini_companion.build').running() == nil end, 50)",
                "vim.cmd('qa!')",
            ]
        )
    )
    result = subprocess.run(
        [nvim_executable(), "--headless", "--noplugin", "-u", str(init)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    info = json.loads((tmp_path / "data" / "nvim" / "gemini-companion" / "build.json").read_text())
    assert info["ok"] is True, (info, result.stderr)
    assert (plugin / "doc" / "tags").exists()


# -- :checkhealth when something is wrong ----------------------------------------------


def test_the_companion_starts_without_a_remote_plugin_manifest(tmp_path: Path) -> None:
    # The host is a job of the plugin's own (host.lua), not Neovim's python3 host:
    # nothing needs :UpdateRemotePlugins, so a build needs no restart to take effect.
    sandbox = Sandbox.create(tmp_path / "sandbox", tmp_path / "empty-manifest.vim")
    nvim = Nvim(sandbox, setup={"auto_start": True})
    try:
        state = nvim.wait_running()
        assert Path(state["discovery_file"]).exists()
        report = checkhealth(nvim.api)
    finally:
        nvim.close()
    assert "ERROR" not in report, report
    assert "the build step has not run" in report


def test_checkhealth_names_a_host_that_cannot_start_and_what_it_said(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path / "sandbox", tmp_path / "empty-manifest.vim")
    broken = tmp_path / "python3"
    broken.write_text("#!/bin/sh\necho 'No module named pynvim' >&2\nexit 3\n")
    broken.chmod(0o755)
    pre = f"vim.g.python3_host_prog = {json.dumps(str(broken))}"
    nvim = Nvim(sandbox, setup={"auto_start": False}, extra_init=pre)
    try:
        # silent!: the host's death is also reported as an error message meanwhile
        nvim.api.command("silent! checkhealth gemini_companion")
        report = "\n".join(nvim.api.current.buffer[:])
        nvim.lua("require('gemini_companion').start()")
        state = nvim.wait_state(lambda s: bool(s.get("error")), 10, "the start to fail")
    finally:
        nvim.close()
    assert "ERROR the Python host does not answer" in report, report
    assert "No module named pynvim" in report, report
    assert ":GeminiCompanionBuild" in report
    assert "the Python host exited (code 3): No module named pynvim" in state["error"], state


def test_checkhealth_reports_a_discovery_file_others_can_read(nvim: Nvim) -> None:
    state = nvim.wait_running()
    Path(state["discovery_file"]).chmod(0o644)
    report = checkhealth(nvim.api)
    assert "ERROR discovery file" in report and "mode 644" in report, report
    assert "readable by you only" in report


def test_checkhealth_reports_a_stopped_server(nvim_factory: Any) -> None:
    nvim = nvim_factory(setup={"auto_start": False})
    report = checkhealth(nvim.api)
    assert "ERROR the companion server is not running" in report, report
    assert ":GeminiCompanionStart" in report


# -- setup() -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"auto_strat": True}, "option 'auto_strat' is not a known option"),
        ({"log_level": "loud"}, "option 'log_level' must be one of"),
        ({"terminal": {"position": "top"}}, "option 'terminal.position' must be one of"),
        ({"terminal": {"args": "--yolo"}}, "option 'terminal.args' must be table"),
        ({"terminal": {"args": [1]}}, "option 'terminal.args[1]' must be string"),
        ({"terminal": {"float": {"width": 2}}}, "option 'terminal.float.width' must be a fraction"),
        ({"terminal": {"colour": "red"}}, "option 'terminal.colour' is not a known option"),
    ],
)
def test_setup_rejects_a_bad_option_naming_it_and_changes_nothing(
    nvim_factory: Any, opts: dict[str, Any], message: str
) -> None:
    nvim = nvim_factory(setup={"auto_start": False, "terminal": {"position": "float"}})
    ok, err = nvim.lua(
        "local ok, err = pcall(require('gemini_companion').setup, ...) return {ok, err}", opts
    )
    assert ok is False
    assert message in err, err
    config = nvim.lua("return require('gemini_companion.config').get()")
    assert config["terminal"]["position"] == "float"


def test_setup_twice_is_safe_and_the_second_call_wins(nvim_factory: Any) -> None:
    nvim = nvim_factory(setup={"auto_start": False})
    nvim.lua("require('gemini_companion').setup({terminal = {position = 'tab'}})")
    nvim.lua("require('gemini_companion').setup({terminal = {size = 30}})")
    config = nvim.lua("return require('gemini_companion.config').get()")
    assert config["terminal"]["position"] == "right"
    assert config["terminal"]["size"] == 30
    links = nvim.lua("return vim.api.nvim_get_hl(0, {name = 'GeminiCompanionConnected'})")
    assert links.get("link") == "DiagnosticOk"
    nvim.api.command("colorscheme blue")  # runs :hi clear
    links = nvim.lua("return vim.api.nvim_get_hl(0, {name = 'GeminiCompanionPending'})")
    assert links.get("link") == "DiagnosticWarn", "highlight links survive a colorscheme"


# -- :Gemini -----------------------------------------------------------------------------


def test_gemini_sends_a_range_as_a_file_reference(nvim_factory: Any, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "sample.txt").write_text("one\ntwo\nthree\nfour\n")
    out = tmp_path / "typed.txt"
    nvim = nvim_factory(
        cwd=project,
        setup={"terminal": {"cmd": "sh", "args": ["-c", f"cat > {out}"], "position": "bottom"}},
    )
    nvim.wait_running()
    nvim.api.command("edit sample.txt")
    nvim.api.command("Gemini")  # starts the CLI (here: cat) and focuses it
    nvim.api.command("stopinsert | wincmd p")
    nvim.api.command("2,3Gemini! explain this")
    text = wait_for(lambda: out.exists() and out.read_text(), 10, "the text typed into the CLI")
    assert "@sample.txt#L2-3 explain this" in text
    assert text.startswith("\x1b[200~"), "sent as a bracketed paste"
    term = nvim.lua("return require('gemini_companion.terminal').get()")
    env = nvim.started_job_env(term["job"])
    assert env["GEMINI_CLI_IDE_SERVER_PORT"] == str(nvim.state()["port"])
    assert env["GEMINI_CLI_IDE_PID"] == str(nvim.pid)
    # :Gemini without text toggles the window; the CLI keeps running
    assert term["visible"] is True
    nvim.api.command("Gemini")
    assert nvim.lua("return require('gemini_companion.terminal').get().visible") is False
    nvim.api.command("Gemini")
    assert nvim.lua("return require('gemini_companion.terminal').get().visible") is True


def test_gemini_starts_the_server_first_and_opens_a_float_when_configured(
    nvim_factory: Any,
) -> None:
    nvim = nvim_factory(setup={"auto_start": False, "terminal": {"cmd": "sh", "position": "float"}})
    assert nvim.state()["running"] is False
    nvim.api.command("Gemini")
    term = wait_for(
        lambda: nvim.lua("return require('gemini_companion.terminal').get()"), 10, "terminal"
    )
    assert nvim.state()["running"] is True, "the server runs before the CLI starts"
    env = nvim.started_job_env(term["job"])
    assert env["GEMINI_CLI_IDE_SERVER_PORT"] == str(nvim.state()["port"])
    relative = nvim.lua("return vim.api.nvim_win_get_config(0).relative")
    assert relative == "editor"


def _isolated_home(root: Path) -> Path:
    home = root / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps(
            {
                "ide": {"enabled": True, "hasSeenNudge": True},
                "security": {
                    "auth": {"selectedType": "gemini-api-key"},
                    "folderTrust": {"enabled": False},
                },
                "general": {"disableAutoUpdate": True},
            }
        )
    )
    return home


@pytest.mark.usefixtures("interop")
def test_gemini_terminal_runs_the_real_cli_which_connects_to_neovim(
    nvim_factory: Any, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    home = _isolated_home(tmp_path)
    fake = tmp_path / "responses.jsonl"
    chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello."}]}}]}
    fake.write_text(json.dumps({"method": "generateContentStream", "response": [chunk]}) + "\n")
    nvim = nvim_factory(
        cwd=project,
        setup={
            "terminal": {
                "cmd": str(GEMINI),
                "args": ["--fake-responses", str(fake)],
                "env": {"HOME": str(home), "GEMINI_API_KEY": "any"},
            }
        },
    )
    # No CLI runs yet: this starts one and types the text once it is up.
    nvim.api.command("Gemini hello from neovim")
    state = nvim.wait_state(
        lambda s: len(s["sessions"]) >= 1, 90, "the gemini CLI in :Gemini's terminal to connect"
    )
    term = nvim.lua("return require('gemini_companion.terminal').get()")
    env = nvim.started_job_env(term["job"])
    assert env["GEMINI_CLI_IDE_AUTH_TOKEN"] == state["env"]["GEMINI_CLI_IDE_AUTH_TOKEN"]
    assert env["HOME"] == str(home)
    wait_for(
        lambda: "hello from neovim" in "\n".join(nvim.api.buffers[term["buf"]][:]),
        20,
        "the text typed into the CLI's prompt",
    )
    assert nvim.lua("return require('gemini_companion').statusline({highlight = false})") == (
        "Gemini ●"
    )


@pytest.mark.usefixtures("interop")
def test_gemini_terminal_shows_the_interactive_cli_when_neovim_runs_under_ci(
    nvim_factory: Any, tmp_path: Path
) -> None:
    """Neovim started with CI markers (CI=true, CI_*, CONTINUOUS_INTEGRATION): the
    real CLI would refuse its interactive UI and exit 42 at once; :Gemini's terminal
    does not get them, so the CLI runs, connects and takes the typed text."""
    project = tmp_path / "project"
    project.mkdir()
    home = _isolated_home(tmp_path)
    ci = {"CI": "true", "CONTINUOUS_INTEGRATION": "1", "CI_JOB_ID": "7"}
    nvim = nvim_factory(
        cwd=project,
        env=ci,
        setup={
            "terminal": {
                "cmd": str(GEMINI),
                "env": {"HOME": str(home), "GEMINI_API_KEY": "any", "KEPT": "yes"},
            }
        },
    )
    assert nvim.lua("return vim.env.CI") == "true"  # Neovim itself runs under CI
    nvim.lua(
        "vim.api.nvim_create_autocmd('User', {pattern = 'GeminiTerminalExit',"
        " callback = function(ev) _G.exit_code = ev.data.code end})"
    )
    nvim.api.command("Gemini typed under CI")
    try:
        nvim.wait_state(lambda s: len(s["sessions"]) >= 1, 90, "the interactive CLI to connect")
    except AssertionError:
        term = nvim.lua("return require('gemini_companion.terminal').get()") or {}
        screen = "\n".join(nvim.api.buffers[term["buf"]][:]) if term else ""
        code = nvim.lua("return _G.exit_code")
        raise AssertionError(f"the CLI exited (code {code}):\n{screen}") from None
    term = nvim.lua("return require('gemini_companion.terminal').get()")
    env = nvim.started_job_env(term["job"])

    def screen() -> str:
        return "\n".join(nvim.api.buffers[term["buf"]][:])

    try:
        # "> ": the interactive UI's prompt box, not the terminal's echo
        wait_for(lambda: "> typed under CI" in screen(), 20, "the text in the CLI's prompt box")
    except AssertionError:
        code = nvim.lua("return _G.exit_code")
        raise AssertionError(f"the CLI exited (code {code}):\n{screen()}") from None
    assert nvim.lua("return vim.fn.jobwait({...}, 0)[1]", term["job"]) == -1, "still running"
    assert "No input provided" not in screen()
    assert not [name for name in env if ci_marker(name)], env
    assert env["KEPT"] == "yes"


def test_update_remote_plugins_registers_nothing_that_would_start_a_second_host(
    tmp_path: Path,
) -> None:
    """A user's :UpdateRemotePlugins (a plugin manager may run it) loads the plugin in
    Neovim's python3 host to ask for its functions and commands: there are none, so
    the manifest names nothing of ours and that host is never started for it."""
    manifest = tmp_path / "rplugin.vim"
    sandbox = Sandbox.create(tmp_path / "sandbox", manifest)
    init = sandbox.init_lua({"auto_start": False})
    done = subprocess.run(
        [nvim_executable(), "--headless", "-u", str(init), "+UpdateRemotePlugins", "+qa!"],
        env=sandbox.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert manifest.exists(), done.stderr  # the command ran and wrote its manifest
    assert "gemini_companion" not in manifest.read_text()
    assert "Error" not in done.stderr, done.stderr


def test_statusline_is_empty_when_stopped_and_counts_sessions(nvim_factory: Any) -> None:
    nvim = nvim_factory(setup={"auto_start": False})
    assert nvim.lua("return require('gemini_companion').statusline()") == ""
    nvim.start()
    assert nvim.lua("return require('gemini_companion').statusline({highlight = false})") == (
        "Gemini"
    )
    assert nvim.lua("return require('gemini_companion').statusline()") == (
        "%#GeminiCompanionIdle#Gemini%*"
    )


# -- the run command ---------------------------------------------------------------------


@pytest.mark.timeout(420)  # a venv and a pip install: minutes on a busy 2-core machine
def test_run_setup_installs_only_what_the_demo_needs_and_no_system_package(
    tmp_path: Path,
) -> None:
    """scripts/setup --demo (what scripts/run runs) in a fresh copy of the checkout:
    no linter, type checker, formatter or test tool, no system package manager, each
    step said with where it installs."""
    copy = tmp_path / "checkout"
    for rel in _plugin_files():
        target = copy / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    calls = tmp_path / "calls.txt"
    fakes = tmp_path / "bin"
    fakes.mkdir()
    for tool in ("apt-get", "apt-cache", "dpkg-deb", "sudo", "luacheck", "luarocks", "npm"):
        (fakes / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\nexit 1\n')
        (fakes / tool).chmod(0o755)
    env = _user_env(tmp_path)
    env["PATH"] = f"{fakes}{os.pathsep}{env['PATH']}"
    env["GEMINI_COMPANION_SKIP_NPM"] = "1"
    env["PYTHON"] = getattr(sys, "_base_executable", sys.executable)
    result = subprocess.run(
        [str(copy / "scripts" / "setup"), "--demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert not calls.exists(), calls.read_text()
    said = result.stderr
    assert "setup: creating the Python virtual environment .venv" in said, said
    assert "the plugin's Python packages" in said and "into .venv" in said, said
    assert "done in" in said
    assert "GEMINI_COMPANION_SKIP_NPM=1: no npm step" in said
    bin_ = copy / ".venv" / "bin"
    assert (bin_ / "python").exists()
    for tool in ("ruff", "mypy", "pytest"):
        assert not (bin_ / tool).exists(), f"{tool} is not for the demo"
    assert not (copy / "tools" / "node_modules").exists()
    assert not (copy / ".cache" / "debian").exists()
    probe = "import pynvim, mcp, starlette, uvicorn, anyio"
    subprocess.run([str(bin_ / "python"), "-c", probe], check=True)


@pytest.mark.usefixtures("interop")
def test_run_command_offline_demo_round_trip(tmp_path: Path) -> None:
    """scripts/run without credentials: a healthy demo with its help, :Gemini, the
    canned edit opens as a diff, :GeminiAccept, and the CLI writes the file; the
    checkout's own .demo/ is left alone."""
    sock = short_dir("gc-demo-") / "nvim.sock"  # a socket's path must be short
    demo = tmp_path / "demo"
    (tmp_path / "tmp").mkdir()
    checkout_demo = ROOT / ".demo"
    before = (
        sorted(p.stat().st_mtime_ns for p in checkout_demo.rglob("*"))
        if (checkout_demo.exists())
        else None
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GEMINI", "GOOGLE_", "NVIM", "XDG_", "VIM")) and not ci_marker(k)
    }
    env.update(
        GEMINI_COMPANION_DEMO="offline",
        GEMINI_COMPANION_DEMO_DIR=str(demo),
        TMPDIR=str(tmp_path / "tmp"),
    )
    log = (tmp_path / "run.log").open("w")
    proc = subprocess.Popen(
        [str(ROOT / "scripts" / "run"), "--headless", "--listen", str(sock)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    nvim: pynvim.Nvim | None = None
    try:
        wait_for(lambda: sock.exists() or proc.poll() is not None, 150, "scripts/run's Neovim")
        assert proc.poll() is None, (tmp_path / "run.log").read_text()
        nvim = pynvim.attach("socket", path=str(sock))
        wait_running(nvim)
        report = checkhealth(nvim)
        assert "WARNING" not in report and "ERROR" not in report, report
        nvim.command("help gemini-companion")
        assert nvim.current.buffer.name == str(ROOT / "doc" / "gemini-companion.txt")
        nvim.command("helpclose | only")
        nvim.command("Gemini")
        wait_for(
            lambda: nvim.exec_lua("return #require('gemini_companion.state').current.sessions"),
            90,
            "the demo's Gemini CLI to connect",
        )
        wait_for(
            lambda: nvim.exec_lua("return #require('gemini_companion.diff').views()"),
            90,
            "the canned edit to open as a diff",
        )
        status = nvim.exec_lua("return require('gemini_companion').statusline({highlight=false})")
        assert status == "Gemini ● diff"
        nvim.command("GeminiAccept")
        target = demo / "project" / "hello.py"
        wait_for(lambda: "->" in target.read_text(), 30, "the CLI to write the accepted edit")
        assert '"""Return a friendly greeting' in target.read_text()
    finally:
        if nvim is not None:
            with contextlib.suppress(Exception):
                nvim.command("qa!")
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
    after = (
        sorted(p.stat().st_mtime_ns for p in checkout_demo.rglob("*"))
        if (checkout_demo.exists())
        else None
    )
    assert after == before, "the test left the checkout's .demo/ alone"


def _old_nvim() -> Path | None:
    """Debian's Neovim 0.7.2, unpacked by scripts/setup into .cache/debian."""
    root = ROOT / ".cache" / "debian"
    nvim = root / "usr" / "bin" / "nvim"
    return (
        nvim if nvim.exists() and (root / "usr" / "share" / "nvim" / "runtime").exists() else None
    )


@pytest.mark.skipif(_old_nvim() is None, reason="Neovim 0.7.2 not unpacked (scripts/setup)")
def test_old_neovim_is_told_the_minimum_once_and_checkhealth_reports_it(tmp_path: Path) -> None:
    """On Neovim 0.7.2: one message naming the minimum, nothing defined that
    errors, and :checkhealth saying the same instead of crashing."""
    old = _old_nvim()
    assert old is not None
    debian = old.parent.parent.parent
    env = _user_env(tmp_path)
    env["LD_LIBRARY_PATH"] = ":".join(str(p) for p in (debian / "usr" / "lib").glob("*-linux-gnu"))
    env["VIMRUNTIME"] = str(debian / "usr" / "share" / "nvim" / "runtime")
    init = tmp_path / "init.lua"
    init.write_text(
        "\n".join(
            [
                f"vim.opt.rtp:prepend({json.dumps(str(ROOT))})",
                "require('gemini_companion').setup({})",
            ]
        )
    )
    out = tmp_path / "out.txt"
    script = (
        "lua vim.defer_fn(function()"
        " local lines = {}"
        " lines[#lines + 1] = 'MESSAGES:' .. vim.fn.execute('messages')"
        " lines[#lines + 1] = 'COMMANDS:' .. vim.fn.exists(':Gemini')"
        " .. vim.fn.exists(':GeminiCompanionBuild')"
        " vim.cmd('checkhealth gemini_companion')"
        " local report = vim.api.nvim_buf_get_lines(0, 0, -1, false)"
        " lines[#lines + 1] = 'HEALTH:' .. table.concat(report, '\\n')"
        f" local f = io.open({json.dumps(str(out))}, 'w')"
        " f:write(table.concat(lines, '\\n')) f:close()"
        " vim.cmd('qa!') end, 300)"
    )
    result = subprocess.run(
        [str(old), "--headless", "-u", str(init), "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    text = out.read_text()
    assert (
        "NVIM v0.7.2"
        in subprocess.run(
            [str(old), "--version"], env=env, capture_output=True, text=True, check=True
        ).stdout
    )
    messages = text.split("MESSAGES:", 1)[1].split("COMMANDS:", 1)[0]
    assert messages.count("Neovim 0.10 or newer is required (this is 0.7.2)") == 1, (
        text + result.stderr
    )
    assert "E5108" not in text + result.stderr and "Error" not in messages, text + result.stderr
    assert "COMMANDS:00" in text, "no command is defined"
    health = text.split("HEALTH:", 1)[1]
    assert "Neovim 0.7.2 is too old: Neovim 0.10 or newer is required" in health, health
    assert "python3" not in health and "Traceback" not in health, health


# -- the help file stays complete -------------------------------------------------------


def test_help_has_a_tag_for_every_command_option_function_event_and_highlight(
    nvim_factory: Any,
) -> None:
    """The doc is written by hand: this catches a new command, option, function,
    event or highlight group that it does not describe."""
    doc = (ROOT / "doc" / "gemini-companion.txt").read_text()
    tags = set(re.findall(r"\*([^*\s|]+)\*", doc))
    nvim = nvim_factory(setup={"auto_start": False})
    wanted = {f":{name}" for name in nvim.lua("return vim.tbl_keys(vim.api.nvim_get_commands({}))")}
    wanted = {c for c in wanted if c.startswith(":Gemini")}
    options = nvim.lua(
        """
        local paths = {}
        for key, value in pairs(require('gemini_companion.config').defaults) do
          paths[#paths + 1] = key
          if type(value) == 'table' and not vim.islist(value) then
            for sub in pairs(value) do paths[#paths + 1] = key .. '.' .. sub end
          end
        end
        return paths
        """
    )
    wanted |= {f"gemini-companion-config.{path}" for path in options}
    functions = nvim.lua(
        "local names = {} for k, v in pairs(require('gemini_companion')) do"
        " if type(v) == 'function' and k:sub(1, 1) ~= '_' then names[#names + 1] = k end end"
        " return names"
    )
    wanted |= {f"gemini_companion.{name}()" for name in functions}
    lua = "\n".join(p.read_text() for p in (ROOT / "lua").rglob("*.lua"))
    wanted |= set(re.findall(r'pattern = "(Gemini\w+)"', lua))
    wanted |= set(re.findall(r'nvim_set_hl\(0, "(\w+)"', lua))
    wanted |= set(nvim.lua("return vim.tbl_keys(require('gemini_companion.highlights').groups)"))
    assert len(wanted) > 40
    missing = sorted(wanted - tags)
    assert not missing, f"doc/gemini-companion.txt has no tag for: {missing}"


def test_checkhealth_names_packages_the_host_lacks(nvim_factory: Any, tmp_path: Path) -> None:
    """A host Python with pynvim but none of the server's packages (a user's own
    g:python3_host_prog, no build): each missing package is an error with the fix."""
    bare = bare_host(short_dir("gc-host-"))  # a user's Python: a short path, the message whole
    nvim = nvim_factory(
        setup={"auto_start": False},
        extra_init=f"vim.g.python3_host_prog = {json.dumps(str(bare))}\n"
        "_G.notes = {} vim.notify = function(m) table.insert(_G.notes, m) end",
    )
    nvim.api.command("GeminiCompanionStart")
    notes = wait_for(lambda: nvim.lua("return _G.notes"), 10, "the start failure's message")
    assert len(notes) == 1, notes
    assert "the Python packages 'mcp', 'starlette', 'uvicorn', 'anyio' are missing" in notes[0]
    assert ":GeminiCompanionBuild, then :GeminiCompanionStart" in notes[0]
    assert "restart" not in notes[0]
    assert "Traceback" not in notes[0]
    assert "'anyio' are missing" in nvim.state()["error"]
    report = checkhealth(nvim.api)
    assert f"Python host: {bare}" in report, report
    assert "OK pynvim 0.6.0" in report
    for package in ("mcp", "starlette", "uvicorn", "anyio"):
        assert f"ERROR {package} is not installed for the host" in report, report
    assert ":GeminiCompanionBuild" in report
    # The fix made (here: a Python that has them), :GeminiCompanionStart is enough:
    # the host that lacked them ends quietly and a fresh one runs the companion.
    nvim.lua("vim.g.python3_host_prog = ...", sys.executable)
    nvim.api.command("GeminiCompanionStart")
    nvim.wait_running(30)
    assert nvim.lua("return require('gemini_companion.host').info.python") == sys.executable
    assert len(nvim.lua("return _G.notes")) == 1, nvim.lua("return _G.notes")
