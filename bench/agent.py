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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import ROOT, Nvim, Sandbox, empty_manifest, wait_for
from panel import (
    agent_state,
    measure_stream,
    seen,
    seen_count,
    transcript,
    transcript_lines,
    watch_transcript,
    work_dir,
)
from stats import percentile

SCRIPTED = f"{ROOT / 'tests' / 'agent_fakes' / 'scripted_transport.py'}:ScriptedTransport"


def start(root: Path, manifest: Path, log: Path) -> Nvim:
    nvim = Nvim(
        Sandbox.create(root, manifest),
        cwd=work_dir(root),
        env={"GEMINI_COMPANION_TEST_TRANSPORT": SCRIPTED, "SCRIPTED_TRANSPORT_LOG": str(log)},
    )
    nvim.wait_running()
    return nvim


def bench_latency(nvim: Nvim, log: Path, chunks: int) -> list[float]:
    nvim.api.command("GeminiAgent hello")
    wait_for(lambda: "Hello, world" in transcript(nvim), 30, "the panel")
    watch_transcript(nvim, "^ping%-(%d+)$")
    nvim.api.command(f"GeminiAgent ping {chunks}")
    wait_for(lambda: seen_count(nvim) >= chunks, 60, "every ping in the transcript")
    wait_for(lambda: agent_state(nvim) == "idle", 30, "the ping prompt to end")
    drawn = {int(k): v for k, v in seen(nvim).items()}
    emitted = {
        r["n"]: r["ns"]
        for r in map(json.loads, log.read_text().splitlines())
        if r.get("call") == "ping"
    }
    return [(drawn[n] - emitted[n]) / 1e6 for n in emitted if n in drawn]


def bench_stall(nvim: Nvim, size: int) -> tuple[float, float, float]:
    return measure_stream(
        nvim,
        f"GeminiAgent stream {size}",
        lambda: agent_state(nvim) == "idle" and transcript_lines(nvim) > size // 100,
        "the 1 MB stream's end",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--no-acp", action="store_true", help="only the scripted transport")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = empty_manifest(root / "rplugin.vim")
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
