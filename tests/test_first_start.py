"""A first start a newcomer meets (issue 32, item 5): no "Press ENTER" at 80
columns (the build's messages, the first start's), one message per outcome, and
a health report that reads IDE mode as the CLI does. Neovim runs with a UI of 80
columns attached (``--embed`` without ``--headless`` waits for it), as a user's
terminal of that width: a hit-enter prompt shows as the "r" mode, which
``nvim_get_mode`` (answered even then) reports as blocking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pynvim
from harness import ROOT, Nvim, nvim_executable, wait_for
from test_build import _ready_venv
from test_plugin import _install, _user_env, user_init, user_nvim, wait_running

# Written by the test's init.lua: a marker file once the companion runs, read by
# the test without a request (a request waits while Neovim waits for Enter).
MARK_RUNNING = """
vim.api.nvim_create_autocmd('User', { pattern = 'GeminiCompanionStatus', callback = function()
  if require('gemini_companion').status().running then
    local f = io.open(%s, 'w')
    f:write('running')
    f:close()
  end
end })
"""


def test_the_first_start_at_80_columns_never_asks_press_enter(tmp_path: Path) -> None:
    env = _user_env(tmp_path)
    _install(tmp_path)
    _ready_venv(tmp_path)
    # No g:python3_host_prog; python3 on PATH is this suite's base Python (without
    # pynvim): the first start builds, the plugin's venv (made ahead) is the host.
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    marker = tmp_path / "running"
    init = user_init(tmp_path, {}, MARK_RUNNING % json.dumps(str(marker)))
    argv = ["/usr/bin/env", "-i", *[f"{k}={v}" for k, v in env.items()]]
    nvim = pynvim.attach("child", argv=[*argv, nvim_executable(), "--embed", "-u", str(init)])
    try:
        nvim.ui_attach(80, 24, rgb=True, ext_linegrid=True)

        def running() -> bool:
            mode = nvim.request("nvim_get_mode")
            assert not mode["blocking"], f"Neovim asks to Press ENTER: {mode}"
            return marker.exists()

        wait_for(running, 120, "the companion to run after the first start's build")
        mode = nvim.request("nvim_get_mode")
        assert not mode["blocking"] and mode["mode"] == "n", mode
        said = nvim.exec_lua("return vim.api.nvim_exec2('messages', { output = true }).output")
        assert "first start: running the build step" in said, said
        assert "build done, the companion is ready" in said, said
        assert all(len(line) < 68 for line in said.splitlines()), said
    finally:
        nvim.close()


def test_the_build_command_ends_with_one_message_when_the_companion_runs(tmp_path: Path) -> None:
    env = _user_env(tmp_path)
    _install(tmp_path)
    _ready_venv(tmp_path)
    # The user's Python is one with pynvim: the companion runs before the build.
    pre = "\n".join(
        [
            f"vim.g.python3_host_prog = {json.dumps(sys.executable)}",
            "_G.log = {}",
            "vim.notify = function(m) table.insert(_G.log, m) end",
            "vim.api.nvim_create_autocmd('User', { pattern = 'GeminiCompanionStatus',"
            " callback = function() table.insert(_G.log, 'status') end })",
        ]
    )
    with user_nvim(tmp_path, env, user_init(tmp_path, {}, pre)) as nvim:
        wait_running(nvim, 60)
        nvim.command("lua _G.log = {}")
        nvim.command("GeminiCompanionBuild")

        def after_the_build() -> list[str] | None:
            log: list[str] = nvim.exec_lua("return _G.log")
            done = [i for i, m in enumerate(log) if "ready" in m]
            # The start after the build publishes the state: anything it says
            # comes before that.
            return log if done and "status" in log[done[0] :] else None

        log = wait_for(after_the_build, 120, "the build's message and the start after it")
        notes = [m for m in log if m != "status"]
        assert notes == ["gemini-companion: build done, the companion is ready"], notes


def _home(root: Path, settings: dict[str, Any]) -> Path:
    home = root / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return home


def test_health_reads_ide_mode_as_it_is(nvim_factory: Any, tmp_path: Path) -> None:
    def report(home: Path) -> str:
        nvim: Nvim = nvim_factory(setup={"terminal": {"env": {"HOME": str(home)}}})
        nvim.wait_running()
        nvim.api.command("checkhealth gemini_companion")
        return "\n".join(nvim.api.current.buffer[:])

    on = report(_home(tmp_path / "on", {"ide": {"enabled": True}}))
    [line] = [x for x in on.splitlines() if "no Gemini CLI connected" in x]
    assert "/ide enable" not in line and "IDE mode" not in line, line
    off = report(_home(tmp_path / "off", {"ide": {"enabled": False}}))
    [line] = [x for x in off.splitlines() if "no Gemini CLI connected" in x]
    assert "with IDE mode on" in line, line


# Neovim's own notify, then a marker file (read without a request).
MARK_NOTIFIED = """
local notify = vim.notify
vim.notify = function(...)
  notify(...)
  local f = io.open(%s, 'w')
  f:write('notified')
  f:close()
end
"""


def test_the_demos_welcome_never_asks_press_enter_at_80_columns(tmp_path: Path) -> None:
    """scripts/run's Neovim (the configuration scripts/demo_setup.py writes)."""
    demo = tmp_path / "demo"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo_setup.py"), str(demo), "offline", "gemini"],
        check=True,
    )
    env = _user_env(tmp_path)
    marker = tmp_path / "notified"
    hook = MARK_NOTIFIED % json.dumps(str(marker))
    argv = ["/usr/bin/env", "-i", *[f"{k}={v}" for k, v in env.items()], nvim_executable()]
    argv += ["--embed", "--cmd", f"lua {hook}", "-u", str(demo / "init.lua")]
    nvim = pynvim.attach("child", argv=argv)
    try:
        nvim.ui_attach(80, 24, rgb=True, ext_linegrid=True)

        def welcomed() -> bool:
            mode = nvim.request("nvim_get_mode")
            assert not mode["blocking"], f"Neovim asks to Press ENTER: {mode}"
            return marker.exists()

        wait_for(welcomed, 30, "the welcome")
        # One more trip through the main loop after the welcome was shown (a
        # notification's "Press ENTER" comes once its caller returns).
        nvim.request("nvim_get_mode")
        mode = nvim.request("nvim_get_mode")
        assert not mode["blocking"] and mode["mode"] == "n", mode
    finally:
        nvim.close()


TERMINAL_NAMES = """
local names = {}
for _, b in ipairs(vim.api.nvim_list_bufs()) do
  if vim.bo[b].buftype == 'terminal' or vim.api.nvim_buf_get_name(b):find('^term://') then
    names[#names + 1] = vim.fn.bufname(b)
  end
end
return names
"""


def test_the_cli_terminal_is_named_gemini_and_a_number_when_that_is_taken(
    nvim_factory: Any, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    nvim: Nvim = nvim_factory(cwd=work, setup={"terminal": {"cmd": "sh"}})
    nvim.wait_running()
    nvim.api.command("Gemini")
    wait_for(lambda: nvim.lua(TERMINAL_NAMES), 15, "the CLI's terminal")
    # What the tab label shows (the buffer's name, shortened when it is a path),
    # and no buffer left with the job's term:// name.
    assert nvim.lua(TERMINAL_NAMES) == ["gemini"]
    assert nvim.lua("return vim.fn.pathshorten(vim.fn.bufname())") == "gemini"
    # A file named gemini in the working directory: the next CLI is gemini-2.
    job = nvim.lua("return require('gemini_companion.terminal').get().job")
    nvim.lua("vim.fn.jobstop(...)", job)
    wait_for(lambda: nvim.lua("return vim.fn.jobwait({...}, 0)[1]", job) != -1, 15, "the exit")
    (work / "gemini").write_text("a file named gemini\n")
    nvim.api.command("Gemini")
    wait_for(lambda: "gemini-2" in nvim.lua(TERMINAL_NAMES), 15, "the new CLI's terminal")
    assert nvim.lua(TERMINAL_NAMES) == ["gemini-2"]
