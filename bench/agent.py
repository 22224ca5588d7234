"""Agent panel benchmark (issue 11): what streaming costs Neovim.

Prints, against a real Neovim and the plugin's real Python host, with the test
suite's scripted transport in place of a protocol (the figures are the panel's:
the core, the batching and the drawing, without a network in between):

- event -> transcript: from a text chunk being emitted by the transport (in the
  Python host) to its line being in the transcript buffer (``nvim_buf_attach``'s
  ``on_lines``), p50/p99 over many chunks, on one clock (CLOCK_MONOTONIC: Python's
  ``time.monotonic_ns`` and ``vim.uv.hrtime``). Target: p99 under 20 ms beyond the
  batching interval (the batching waits for the previous batch, not a timer, so
  its interval is one round trip);
- the longest main-loop stall while 1 MB of text streams in: the latency of
  ``vim.schedule`` callbacks queued every 2 ms by a timer (what a user typing
  would feel), and of ``nvim_eval("1")`` round trips from outside. Target under
  20 ms.

Then the same over ACP with real agent processes (bench/agent_acp.py says how),
and the time from ``:GeminiAgent`` to the first prompt being accepted by the real
``gemini --acp``; ``--no-acp`` leaves them out.

Run: .venv/bin/python bench/agent.py [--runs N] [--no-acp]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import ROOT, Nvim, Sandbox, register_remote_plugin, wait_for

SCRIPTED = f"{ROOT / 'tests' / 'agent_fakes' / 'scripted_transport.py'}:ScriptedTransport"

WATCH = """
_G.bench_seen = {}
local buf = require('gemini_companion.agent.transcript').buffer()
vim.api.nvim_buf_attach(buf, false, {
  on_lines = function(_, b, _, first, _, last)
    local now = vim.uv.hrtime()
    for _, line in ipairs(vim.api.nvim_buf_get_lines(b, first, last, false)) do
      local n = line:match('^ping%-(%d+)$')
      if n and not _G.bench_seen[n] then _G.bench_seen[n] = now end
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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start(root: Path, manifest: Path, log: Path) -> Nvim:
    sandbox = Sandbox.create(root, manifest)
    work = root / "work"
    work.mkdir(parents=True, exist_ok=True)
    nvim = Nvim(
        sandbox,
        cwd=work,
        env={"GEMINI_COMPANION_TEST_TRANSPORT": SCRIPTED, "SCRIPTED_TRANSPORT_LOG": str(log)},
    )
    nvim.wait_running()
    return nvim


def bench_latency(nvim: Nvim, log: Path, chunks: int) -> list[float]:
    nvim.api.command("GeminiAgent hello")
    wait_for(
        lambda: (
            "Hello, world"
            in "\n".join(nvim.lua("return require('gemini_companion.agent').transcript()"))
        ),
        30,
        "the panel",
    )
    nvim.lua(WATCH)
    nvim.api.command(f"GeminiAgent ping {chunks}")
    wait_for(
        lambda: nvim.lua("return vim.tbl_count(_G.bench_seen)") >= chunks,
        60,
        "every ping in the transcript",
    )
    wait_for(
        lambda: nvim.lua("return require('gemini_companion.agent').state().state") == "idle",
        30,
        "the ping prompt to end",
    )
    seen = {int(k): v for k, v in nvim.lua("return _G.bench_seen").items()}
    emitted = {
        r["n"]: r["ns"]
        for r in map(json.loads, log.read_text().splitlines())
        if r.get("call") == "ping"
    }
    return [(seen[n] - emitted[n]) / 1e6 for n in emitted if n in seen]


def bench_stall(nvim: Nvim, size: int) -> tuple[float, float, float]:
    nvim.lua(STALL_START)
    worst_eval = 0.0
    done = threading.Event()
    started = time.perf_counter()
    nvim.api.command(f"GeminiAgent stream {size}")
    # Round trips from outside while the stream is drawn.
    deadline = time.monotonic() + 120
    while not done.is_set():
        if time.monotonic() > deadline:
            state = nvim.lua("return require('gemini_companion.agent').state()")
            raise SystemExit(f"the 1 MB stream did not end: {state}")
        t0 = time.perf_counter()
        nvim.api.eval("1")
        worst_eval = max(worst_eval, (time.perf_counter() - t0) * 1000)
        state = nvim.lua("return require('gemini_companion.agent').state().state")
        lines = nvim.lua(
            "local t = require('gemini_companion.agent.transcript')"
            " return vim.api.nvim_buf_line_count(t.buffer())"
        )
        if state == "idle" and lines > size // 100:
            done.set()
        time.sleep(0.005)
    elapsed = time.perf_counter() - started
    stall = nvim.lua("_G.bench_timer:stop() return _G.bench_stall") / 1e6
    return stall, worst_eval, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--no-acp", action="store_true", help="only the scripted transport")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = root / "rplugin.vim"
        register_remote_plugin(Sandbox.create(root / "register", manifest))
        latencies: list[float] = []
        stalls: list[tuple[float, float, float]] = []
        for run in range(args.runs):
            log = root / f"log{run}.jsonl"
            nvim = start(root / f"run{run}", manifest, log)
            try:
                latencies += bench_latency(nvim, log, args.chunks)
                stalls.append(bench_stall(nvim, 1_000_000))
            finally:
                nvim.close()
        p50 = statistics.median(latencies)
        print(
            f"event -> transcript ({len(latencies)} chunks): p50 {p50:.1f} ms,"
            f" p99 {percentile(latencies, 0.99):.1f} ms, max {max(latencies):.1f} ms"
        )
        for stall, worst_eval, elapsed in stalls:
            print(
                f"1 MB streamed in {elapsed:.2f} s: longest vim.schedule stall {stall:.1f} ms,"
                f" slowest nvim_eval('1') {worst_eval:.1f} ms"
            )
        if not args.no_acp:
            from agent_acp import report

            report(root, manifest, args.runs, args.chunks)


if __name__ == "__main__":
    main()
