"""``agent.prestart`` (issue 31 item 4): the agent starts once Neovim is idle after
start-up, and the panel opened later uses it.

Real parts: a headless Neovim with the plugin and its Python host, and the scripted
ACP agent of tests/agent_fakes (its command line names the test's folder, so the
test finds its process). Nothing waits on time: each step waits for what the user
or the system would see (the agent's state in Neovim, its process, a message).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_setup import agent_state, wait_agent, wait_transcript
from harness import Nvim, wait_for
from test_agent_health import agent_section, checkhealth
from test_agent_stop import alive, group

FAKE_AGENT = Path(__file__).parent / "agent_fakes" / "acp_agent.py"

# Each event of the start-up and the spare's start, in the order Neovim ran them.
ORDER = """
_G.order = {}
vim.api.nvim_create_autocmd('VimEnter', { callback = function()
  table.insert(_G.order, 'VimEnter')
end })
vim.api.nvim_create_autocmd('User', { pattern = 'GeminiAgentSpare', callback = function()
  table.insert(_G.order, 'spare')
end })
"""


def spare_nvim(
    nvim_factory: Callable[..., Nvim], root: Path, cmd: list[str] | None = None, **agent: Any
) -> Nvim:
    work = root / "work"
    work.mkdir()
    # The extra argument names the test in the agent's command line.
    cmd = cmd or [sys.executable, str(FAKE_AGENT), str(root)]
    setup = {"agent": {"protocol": "acp", "acp": {"cmd": cmd}, **agent}}
    return nvim_factory(cwd=work, setup=setup, extra_init=ORDER)


def host_pid(nvim: Nvim) -> int:
    return int(nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)"))


def agents(root: Path) -> list[int]:
    """The live agent processes of this test."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            ours = str(FAKE_AGENT).encode() in cmdline and str(root).encode() in cmdline
            if ours and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def panel_open(nvim: Nvim) -> bool:
    return bool(nvim.lua("return require('gemini_companion.agent.panel').visible()"))


def messages(nvim: Nvim) -> str:
    return str(nvim.lua("return vim.api.nvim_exec2('messages', { output = true }).output"))


def test_the_spare_starts_after_start_up_and_the_panel_uses_it(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = spare_nvim(nvim_factory, tmp_path, prestart=True)
    # No key is typed: Neovim is idle, the agent starts without the panel.
    wait_agent(nvim, "the spare ready", lambda s: s["state"] == "idle")
    assert not panel_open(nvim)
    (pid,) = wait_for(lambda: agents(tmp_path), 30, "the spare's process")
    # It started after start-up, never during it.
    assert nvim.lua("return _G.order") == ["VimEnter", "spare"]
    # The panel opens on an agent that is ready: no start, the same process.
    assert (
        nvim.lua("vim.cmd('GeminiAgent') return require('gemini_companion.agent').state().state")
        == "idle"
    )
    assert panel_open(nvim)
    nvim.api.command("GeminiAgent first words")
    wait_transcript(nvim, "echo: first words")
    assert agents(tmp_path) == [pid]


def test_no_spare_without_the_option(nvim_factory: Callable[..., Nvim], tmp_path: Path) -> None:
    nvim = spare_nvim(nvim_factory, tmp_path)
    nvim.wait_running()
    # Nothing waits for idle: the module that would is not even loaded.
    assert nvim.lua("return package.loaded['gemini_companion.agent.spare'] == nil")
    assert nvim.lua("return _G.order") == ["VimEnter"]
    assert agent_state(nvim)["state"] == "stopped"
    assert agents(tmp_path) == []


def test_quitting_ends_the_spare(nvim_factory: Callable[..., Nvim], tmp_path: Path) -> None:
    nvim = spare_nvim(nvim_factory, tmp_path, prestart=True)
    wait_agent(nvim, "the spare ready", lambda s: s["state"] == "idle")
    (pid,) = wait_for(lambda: agents(tmp_path), 30, "the spare's process")
    host = host_pid(nvim)
    nvim.close()
    wait_for(lambda: not alive(host), 30, "the plugin's host to exit with Neovim")
    assert group(pid) == []


def test_a_spare_that_cannot_start_says_so_once_when_the_panel_opens(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = spare_nvim(nvim_factory, tmp_path, cmd=["no-such-gemini-here", "--acp"], prestart=True)
    state = wait_agent(nvim, "the spare's failure", lambda s: s["state"] == "error")
    assert "'no-such-gemini-here' was not found" in state["detail"]
    # Its notice and its message come in one batch: the message is in Neovim now.
    wait_transcript(nvim, "'no-such-gemini-here' was not found")
    # Not a word until the user reaches for the agent.
    assert "no-such-gemini-here" not in messages(nvim)
    nvim.api.command("GeminiAgent")
    assert messages(nvim).count("Gemini agent: cannot start the agent") == 1
    # Closed and opened again: said once, not again.
    nvim.api.command("GeminiAgent")
    nvim.api.command("GeminiAgent")
    assert messages(nvim).count("Gemini agent: cannot start the agent") == 1


def test_checkhealth_says_what_the_spare_costs(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = spare_nvim(nvim_factory, tmp_path, prestart=True)
    wait_agent(nvim, "the spare ready", lambda s: s["state"] == "idle")
    report = agent_section(checkhealth(nvim))
    assert "agent.prestart: the agent starts once Neovim is idle (started)" in report
    assert "MiB for gemini --acp" in report
    assert "MiB in the Python host" in report
