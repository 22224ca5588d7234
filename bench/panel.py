"""What the agent-panel benches share (bench/agent.py, bench/agent_acp.py): when a
line reaches the transcript, how long Neovim's main loop stalls while a stream is
drawn, and the panel's state.

One clock throughout: CLOCK_MONOTONIC (``vim.uv.hrtime`` in Neovim, Python's
``time.monotonic_ns``), so a time stamped by the agent compares with Neovim's.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from harness import Nvim, Sandbox, empty_manifest, wait_for

SCRIPT_AGENT = Path(__file__).resolve().parent / "script_agent.py"
TICKS = os.sysconf("SC_CLK_TCK")

# The Lua pattern's first capture names a line; _G.bench_seen[name] becomes the
# vim.uv.hrtime() at which such a line first reached the transcript.
_WATCH = """
local pattern = ...
_G.bench_seen = {}
local buf = require('gemini_companion.agent.transcript').buffer()
vim.api.nvim_buf_attach(buf, false, {
  on_lines = function(_, b, _, first, _, last)
    local now = vim.uv.hrtime()
    for _, line in ipairs(vim.api.nvim_buf_get_lines(b, first, last, false)) do
      local key = line:match(pattern)
      if key and not _G.bench_seen[key] then _G.bench_seen[key] = now end
    end
  end,
})
"""

# Every 2 ms a timer queues a vim.schedule callback; the longest wait of one is
# what a user typing would feel.
_STALL_START = """
_G.bench_stall = 0
_G.bench_timer = vim.uv.new_timer()
_G.bench_timer:start(0, 2, function()
  local t0 = vim.uv.hrtime()
  vim.schedule(function()
    local d = vim.uv.hrtime() - t0
    if d > _G.bench_stall then _G.bench_stall = d end
  end)
end)
"""


def attach_ui(nvim: Nvim) -> None:
    """A UI, as a user has: without one Neovim never redraws, so the markdown
    highlighter (which parses at redraw) would cost nothing."""
    nvim.api.ui_attach(120, 40, rgb=True, ext_linegrid=True)


def highlighting(nvim: Nvim) -> str:
    """What highlights the transcript: "markdown line by line" (agent/markdown.lua),
    "tree-sitter (markdown)" or the syntax's name."""
    return str(
        nvim.lua(
            "local b = require('gemini_companion.agent.transcript').buffer()"
            " if vim.treesitter.highlighter.active[b] then return 'tree-sitter (markdown)' end"
            " if require('gemini_companion.config').get().agent.markdown == true then"
            "   return 'markdown line by line (agent/markdown.lua)' end"
            " return 'syntax ' .. vim.bo[b].syntax"
        )
    )


def rss_mib(pid: int) -> float:
    """Resident memory of a process, MiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def watch_transcript(nvim: Nvim, pattern: str) -> None:
    """Record when each line matching the Lua ``pattern`` (one capture) is drawn."""
    nvim.lua(_WATCH, pattern)


def seen(nvim: Nvim) -> dict[str, int]:
    """The captures recorded by :func:`watch_transcript`, with their hrtime."""
    return {str(k): int(v) for k, v in nvim.lua("return _G.bench_seen").items()}


def seen_count(nvim: Nvim) -> int:
    return int(nvim.lua("return vim.tbl_count(_G.bench_seen)"))


def transcript(nvim: Nvim) -> str:
    return "\n".join(nvim.lua("return require('gemini_companion.agent').transcript()"))


def agent_state(nvim: Nvim) -> str:
    return str(nvim.lua("return require('gemini_companion.agent').state().state"))


def transcript_lines(nvim: Nvim) -> int:
    return int(
        nvim.lua(
            "return vim.api.nvim_buf_line_count("
            "require('gemini_companion.agent.transcript').buffer())"
        )
    )


def measure_stream(
    nvim: Nvim, command: str, done: Callable[[], bool], what: str, timeout: float = 120
) -> tuple[float, float, float]:
    """Run ``command`` (it starts a stream) and poll until ``done()``: the longest
    ``vim.schedule`` stall and the slowest ``nvim_eval("1")`` round trip meanwhile,
    in ms, and the seconds it took. Raises when ``what`` does not happen in time."""
    nvim.lua(_STALL_START)
    worst_eval = 0.0
    started = time.perf_counter()
    nvim.api.command(command)
    while True:
        t0 = time.perf_counter()
        nvim.api.eval("1")
        worst_eval = max(worst_eval, (time.perf_counter() - t0) * 1000)
        if done():
            break
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"{what} did not happen within {timeout:g} s: {agent_state(nvim)}")
        time.sleep(0.005)
    elapsed = time.perf_counter() - started
    stall = nvim.lua("_G.bench_timer:stop() return _G.bench_stall") / 1e6
    return stall, worst_eval, elapsed


def work_dir(root: Path) -> Path:
    """The folder the bench's Neovim works in, made under ``root``."""
    work = root / "work"
    work.mkdir(parents=True, exist_ok=True)
    return work


def cpu_seconds(pid: int) -> float:
    """CPU seconds process ``pid`` has used so far (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def transcript_tail(nvim: Nvim, lines: int = 8) -> str:
    """The transcript's last ``lines`` lines."""
    return "\n".join(
        nvim.lua(
            "local b = require('gemini_companion.agent.transcript').buffer()"
            " return vim.api.nvim_buf_get_lines(b, -(...) - 1, -1, false)",
            lines,
        )
    )


def start_scripted(root: Path, script: Path) -> Nvim:
    """A Neovim with a UI whose panel drives bench/script_agent.py playing ``script``,
    open past a first answer."""
    cmd = [sys.executable, str(SCRIPT_AGENT), str(script)]
    nvim = Nvim(
        Sandbox.create(root, empty_manifest(root / "rplugin.vim")),
        cwd=work_dir(root),
        setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}},
    )
    nvim.wait_running()
    attach_ui(nvim)
    nvim.api.command("GeminiAgent hello")
    wait_for(
        lambda: agent_state(nvim) == "idle" and "echo: hello" in transcript_tail(nvim),
        60,
        "ready",
    )
    return nvim
