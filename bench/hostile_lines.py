"""What hostile markdown lines cost the panel streamed at the CLI's pace (issue 31
item 1), against plain text.

Each line of tests/hostile_markdown.py (up to 10,000 bytes of brackets,
underscores, asterisks, backticks, pipes, fences left open, headings, quotes,
lists and mixtures; and plain prose, the yardstick) is the answer to one prompt,
streamed by a scripted ACP agent over a real pipe (bench/script_agent.py) in
100-byte chunks 20 ms apart, into the real panel (Python host, transcript,
markdown on) in a Neovim with a UI attached. For each line it prints:

- the CPU of Neovim and of its Python host (``/proc/<pid>/stat``) per byte, from
  the prompt to its last byte drawn, and that against plain text's. Target: at
  most 2x;
- the longest stall of Neovim's main loop meanwhile: the longest wait of a
  ``vim.schedule`` callback queued every 2 ms, and the slowest ``nvim_eval('1')``
  round trip (bench/panel.py). Target: at most 16 ms.

Run: .venv/bin/python bench/hostile_lines.py [--runs N] [--size BYTES] [--only NAME...]
The load average is printed with the figures: on a busy machine they grow.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import Nvim
from hostile_markdown import hostile_lines
from panel import (
    agent_state,
    cpu_seconds,
    load,
    measure_stream,
    start_scripted,
)

STALL_TARGET_MS = 16.0
COST_TARGET = 2.0

DRAWN = """
local mark = ...
local b = require('gemini_companion.agent.transcript').buffer()
for _, line in ipairs(vim.api.nvim_buf_get_lines(b, -4, -1, false)) do
  if line == mark then return true end
end
return false
"""


def stream_line(nvim: Nvim, turn: int) -> tuple[float, float, float, float]:
    """Turn ``turn`` (one line, then the line ``end of N``) at the CLI's pace: CPU
    seconds of Neovim and of the host, the longest stall and the slowest round
    trip (ms)."""
    host = int(nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)"))
    before = cpu_seconds(nvim.pid), cpu_seconds(host)
    stall, worst_eval, _ = measure_stream(
        nvim,
        f"GeminiAgent paced {turn} 100 20",
        lambda: agent_state(nvim) == "idle" and bool(nvim.lua(DRAWN, f"end of {turn}")),
        f"line {turn} drawn",
    )
    return cpu_seconds(nvim.pid) - before[0], cpu_seconds(host) - before[1], stall, worst_eval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--only", nargs="*", help="line names (tests/hostile_markdown.py)")
    args = parser.parse_args()
    corpus = hostile_lines(args.size)
    names = ["plain", *[n for n in corpus if n != "plain" and (not args.only or n in args.only)]]
    print(f"load average before: {load()}")
    results: dict[str, list[tuple[float, float, float, float]]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = root / "script.json"
        turns = [[["text", f"{corpus[n]}\nend of {i}\n"]] for i, n in enumerate(names)]
        script.write_text(json.dumps({"turns": turns}))
        for run in range(args.runs):
            nvim = start_scripted(root / f"run{run}", script)
            try:
                for turn, name in enumerate(names):
                    results[name].append(stream_line(nvim, turn))
            finally:
                nvim.close()
    print(f"load average after: {load()}")
    print("(a UI attached; markdown on; 100-byte chunks 20 ms apart; CPU of Neovim + its host)")

    def per_byte(name: str) -> float:
        return statistics.median(n + h for n, h, _, _ in results[name]) / len(corpus[name])

    plain = per_byte("plain")
    for name in names:
        cost = per_byte(name)
        stall = max(s for _, _, s, _ in results[name])
        worst_eval = max(e for _, _, _, e in results[name])
        ratio = cost / plain if plain else float("nan")
        nvim_us = statistics.median(n for n, _, _, _ in results[name]) / len(corpus[name]) * 1e6
        print(
            f"{name:>24}: {len(corpus[name]):>6} bytes, {cost * 1e6:6.1f} us/byte"
            f" (Neovim alone {nvim_us:5.1f}), {ratio:4.2f}x plain (target <= {COST_TARGET:g}x:"
            f" {'ok' if ratio <= COST_TARGET else 'OVER'}); stall {stall:5.1f} ms, nvim_eval"
            f" {worst_eval:5.1f} ms (target <= {STALL_TARGET_MS:g} ms:"
            f" {'ok' if stall <= STALL_TARGET_MS else 'OVER'})"
        )


if __name__ == "__main__":
    main()
