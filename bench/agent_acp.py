"""The ACP half of bench/agent.py (issue 12): the same figures with a real ACP child.

Run by bench/agent.py; alone: .venv/bin/python bench/agent_acp.py [--runs N]

- event -> transcript: from a text chunk being written by an ACP agent (the
  test-suite's small SDK agent, tests/agent_fakes/acp_agent.py, which stamps each
  chunk with CLOCK_MONOTONIC) to its line in the transcript buffer (``on_lines``,
  ``vim.uv.hrtime``, the same clock): the pipe, JSON-RPC, the schema's validation,
  the core and the batched drawing;
- the longest main-loop stall while 1 MB streams from the SDK agent (1000
  chunks of 1000 characters, as fast as it writes them);
- ``:GeminiAgent {text}`` to the prompt being accepted (the agent started,
  ``initialize`` and ``session/new`` answered, ``session/prompt`` sent: the state
  turns "working") and to the first answer text in the transcript, with the real
  ``gemini --acp``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_model import gemini_home, text, write_responses
from harness import INTEROP, ROOT, Nvim, Sandbox, wait_for

GEMINI_JS = INTEROP / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
FAKE_AGENT = ROOT / "tests" / "agent_fakes" / "acp_agent.py"

WATCH = """
_G.bench_seen = {}
local buf = require('gemini_companion.agent.transcript').buffer()
vim.api.nvim_buf_attach(buf, false, {
  on_lines = function(_, b, _, first, _, last)
    local now = vim.uv.hrtime()
    for _, line in ipairs(vim.api.nvim_buf_get_lines(b, first, last, false)) do
      local ns = line:match('^<t=(%d+)>')
      if ns and not _G.bench_seen[ns] then _G.bench_seen[ns] = now end
    end
  end,
})
"""

STALL_START = """
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

FIRST_PROMPT = """
local text = ...
_G.bench_t = { start = vim.uv.hrtime() }
vim.api.nvim_create_autocmd('User', {
  pattern = 'GeminiAgentUpdate',
  callback = function(args)
    if args.data.state == 'working' and not _G.bench_t.working then
      _G.bench_t.working = vim.uv.hrtime()
    end
  end,
})
vim.cmd('GeminiAgent')
local buf = require('gemini_companion.agent.transcript').buffer()
vim.api.nvim_buf_attach(buf, false, {
  on_lines = function(_, b, _, first, _, last)
    for _, line in ipairs(vim.api.nvim_buf_get_lines(b, first, last, false)) do
      if line:find('First answer', 1, true) and not _G.bench_t.text then
        _G.bench_t.text = vim.uv.hrtime()
      end
    end
  end,
})
vim.cmd('GeminiAgent ' .. text)
"""


def transcript(nvim: Nvim) -> str:
    return "\n".join(nvim.lua("return require('gemini_companion.agent').transcript()"))


def start_nvim(root: Path, manifest: Path, cmd: list[str], env: dict[str, str]) -> Nvim:
    sandbox = Sandbox.create(root, manifest)
    work = root / "work"
    work.mkdir(parents=True, exist_ok=True)
    nvim = Nvim(
        sandbox,
        cwd=work,
        setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}},
        env=env,
    )
    nvim.wait_running()
    return nvim


def idle(nvim: Nvim) -> bool:
    return bool(nvim.lua("return require('gemini_companion.agent').state().state") == "idle")


def bench_latency(root: Path, manifest: Path, chunks: int) -> list[float]:
    nvim = start_nvim(root, manifest, [sys.executable, str(FAKE_AGENT)], {})
    try:
        nvim.api.command("GeminiAgent hello")
        wait_for(lambda: "echo: hello" in transcript(nvim), 60, "the fake agent's answer")
        nvim.lua(WATCH)
        # 20 ms apart: each chunk is its own event, not a burst.
        nvim.api.command(f"GeminiAgent stream {chunks} 60 20")
        wait_for(
            lambda: nvim.lua("return vim.tbl_count(_G.bench_seen)") >= chunks,
            120,
            "every chunk in the transcript",
        )
        seen = nvim.lua("return _G.bench_seen")
        return [(now - int(sent)) / 1e6 for sent, now in seen.items()]
    finally:
        nvim.close()


def gemini_env(root: Path) -> dict[str, str]:
    return {"HOME": str(gemini_home(root)), "GEMINI_API_KEY": "offline-bench-key"}


def bench_stall(root: Path, manifest: Path) -> tuple[float, float, float]:
    """1 MB from the SDK fake agent: 1000 chunks of 1000 characters, no pause."""
    nvim = start_nvim(root, manifest, [sys.executable, str(FAKE_AGENT)], {})
    try:
        nvim.api.command("GeminiAgent hello")
        wait_for(lambda: "echo: hello" in transcript(nvim), 60, "the fake agent's answer")
        nvim.lua(STALL_START)
        worst_eval = 0.0
        started = time.perf_counter()
        nvim.api.command("GeminiAgent stream 1000 1000 0")
        while True:
            t0 = time.perf_counter()
            nvim.api.eval("1")
            worst_eval = max(worst_eval, (time.perf_counter() - t0) * 1000)
            lines = nvim.lua(
                "return vim.api.nvim_buf_line_count("
                "require('gemini_companion.agent.transcript').buffer())"
            )
            if lines > 1000 and idle(nvim):
                break
            if time.perf_counter() - started > 120:
                raise AssertionError(f"the megabyte did not arrive within 120 s ({lines} lines)")
            time.sleep(0.005)
        elapsed = time.perf_counter() - started
        stall = nvim.lua("_G.bench_timer:stop() return _G.bench_stall") / 1e6
        return stall, worst_eval, elapsed
    finally:
        nvim.close()


def bench_first_prompt(root: Path, manifest: Path) -> tuple[float, float]:
    root.mkdir(parents=True, exist_ok=True)
    fake = write_responses(root / "fake.jsonl", [[[text("First answer.")]]])
    cmd = ["node", str(GEMINI_JS), "--acp", "--fake-responses-non-strict", str(fake)]
    nvim = start_nvim(root, manifest, cmd, gemini_env(root))
    try:
        nvim.lua(FIRST_PROMPT, "hello")
        times = wait_for(
            lambda: (t := nvim.lua("return _G.bench_t")).get("text") and t,
            120,
            "the first answer",
        )
        return (times["working"] - times["start"]) / 1e6, (times["text"] - times["start"]) / 1e6
    finally:
        nvim.close()


def report(root: Path, manifest: Path, runs: int, chunks: int) -> None:
    """Print the ACP figures (bench/agent.py calls this after the panel's own)."""
    import statistics

    latencies: list[float] = []
    stalls: list[tuple[float, float, float]] = []
    starts: list[tuple[float, float]] = []
    for run in range(runs):
        latencies += bench_latency(root / f"acp-latency{run}", manifest, chunks)
        stalls.append(bench_stall(root / f"acp-stall{run}", manifest))
        starts.append(bench_first_prompt(root / f"acp-start{run}", manifest))
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    print(
        f"ACP event -> transcript ({len(latencies)} chunks, SDK fake agent):"
        f" p50 {statistics.median(latencies):.1f} ms, p99 {p99:.1f} ms,"
        f" max {max(latencies):.1f} ms"
    )
    for stall, worst_eval, elapsed in stalls:
        print(
            f"ACP 1 MB from the SDK agent in {elapsed:.2f} s: longest vim.schedule stall"
            f" {stall:.1f} ms, slowest nvim_eval('1') {worst_eval:.1f} ms"
        )
    for accepted, first in starts:
        print(
            f"ACP :GeminiAgent -> prompt accepted {accepted:.0f} ms,"
            f" -> first answer text {first:.0f} ms (gemini --acp started, initialize,"
            " session/new)"
        )


if __name__ == "__main__":
    import argparse
    import tempfile

    from harness import register_remote_plugin

    parser = argparse.ArgumentParser(description="ACP figures of the agent panel")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        manifest_path = base / "rplugin.vim"
        register_remote_plugin(Sandbox.create(base / "register", manifest_path))
        report(base, manifest_path, args.runs, args.chunks)
