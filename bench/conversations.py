"""Several conversations (issue 30, requirement 1): switching between two long ones,
and the host's memory with three live.

Against a real Neovim with a UI attached (bench/panel.py's ``attach_ui``: without
one Neovim never redraws), its plugin, its Python host and the scripted ACP agent
(bench/script_agent.py), one process for every conversation:
- switching: conversation #1 and #2 each hold about SIZE bytes of transcript
  (bench/long_chat.py's turns: thoughts, tool blocks, markdown); ``switch(id)``
  then ``redraw``, from the call to the screen drawn with the transcript's last
  line in the panel's window, alternately to each, ROUNDS times: median and max.
  Target: 30 ms;
- memory: the host's resident size (after a collection settles) with one live
  conversation of SIZE bytes, then with three; target: three at most 1.3x one.

Run: .venv/bin/python bench/conversations.py [--size 1000000] [--rounds 20]
bench/long_chat.py's ``switch_ms`` calls :func:`switch_ms` here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Nvim, wait_for
from long_chat import turn
from panel import rss_mib, start_scripted

SWITCH_TARGET_MS = 30.0
MEMORY_TARGET = 1.3
TURNS = 4

SWITCH = """
local id = ...
local agent = require('gemini_companion.agent')
local t0 = vim.uv.hrtime()
agent.switch(id)
vim.cmd('redraw')
local t1 = vim.uv.hrtime()
local b = require('gemini_companion.agent.transcript').buffer(id)
local win = vim.fn.win_findbuf(b)[1]
local last = win ~= nil and vim.fn.line('w$', win) == vim.api.nvim_buf_line_count(b)
return { ms = (t1 - t0) / 1e6, last = last }
"""


def shown(nvim: Nvim) -> int:
    return int(nvim.lua("return require('gemini_companion.agent').state().conversation"))


def idle(nvim: Nvim, needle: str) -> None:
    def done() -> bool:
        state = nvim.lua("return require('gemini_companion.agent').state()")
        lines = nvim.lua(
            "local b = require('gemini_companion.agent.transcript').buffer()"
            " return vim.api.nvim_buf_get_lines(b, -8, -1, false)"
        )
        return bool(state["state"] == "idle" and needle in "\n".join(lines))

    wait_for(done, 300, f"{needle!r} drawn", interval=0.05)


def fill(nvim: Nvim, turns: int) -> None:
    """Play the script's turns into the shown conversation."""
    for n in range(turns):
        nvim.api.command(f"GeminiAgent turn {n}")
        idle(nvim, f"End of step {n}.")


def new_conversation(nvim: Nvim) -> int:
    nvim.lua("require('gemini_companion.agent').new()")
    nvim.api.command("GeminiAgent hello")
    idle(nvim, "echo: hello")
    return shown(nvim)


def switch_ms(nvim: Nvim, ids: tuple[int, int], rounds: int) -> list[dict[str, float]]:
    """Switch alternately to each of ``ids``, ``rounds`` times."""
    return [dict(nvim.lua(SWITCH, ids[i % 2])) for i in range(rounds)]


def host_rss(nvim: Nvim) -> float:
    """The host's resident MiB."""
    host = int(nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)"))
    return rss_mib(host)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="each conversation's bytes")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    turns = [turn(n, args.size // TURNS) for n in range(TURNS)]
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = root / "script.json"
        script.write_text(json.dumps({"turns": turns}))
        nvim = start_scripted(root / "nvim", script)
        try:
            first = shown(nvim)
            fill(nvim, TURNS)
            one = host_rss(nvim)
            size = int(
                nvim.lua(
                    "local b = require('gemini_companion.agent.transcript').buffer()"
                    " return vim.api.nvim_buf_get_offset(b, vim.api.nvim_buf_line_count(b))"
                )
            )
            second = new_conversation(nvim)
            fill(nvim, TURNS)
            rounds = switch_ms(nvim, (first, second), args.rounds)
            new_conversation(nvim)
            fill(nvim, TURNS)
            three = host_rss(nvim)
            listed = nvim.lua("return require('gemini_companion.agent').conversations()")
            live = sum(1 for c in listed if c["live"])
        finally:
            nvim.close()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    times = [r["ms"] for r in rounds]
    verdict = "ok" if max(times) <= SWITCH_TARGET_MS else "OVER"
    print(
        f"(a UI attached; each conversation {size / 1e6:.2f} MB of transcript, {TURNS} turns;"
        " one agent process)"
    )
    print(
        f"switch between two conversations, to the screen drawn: median"
        f" {statistics.median(times):.1f} ms, max {max(times):.1f} ms over {len(times)}"
        f" (last line shown: {all(r['last'] for r in rounds)})"
        f" (target <= {SWITCH_TARGET_MS:g} ms: {verdict})"
    )
    ratio = three / one
    verdict = "ok" if ratio <= MEMORY_TARGET else "OVER"
    print(
        f"the host's memory: {one:.1f} MiB with one conversation, {three:.1f} MiB with"
        f" {live} live: {ratio:.2f}x (target <= {MEMORY_TARGET:g}x: {verdict})"
    )


if __name__ == "__main__":
    main()
