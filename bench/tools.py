"""Neovim's tools benchmark (issue 13).

Prints, against a real Neovim over a real MCP client on ``/tools``, the round trip
of each tool call (``tools/call`` sent to its answer received): ``listOpenBuffers``
with 200 open buffers, ``getDiagnostics`` with 2000 diagnostics (answering the
capped 100), ``readBuffer`` of 2000 lines, and ``documentSymbols`` through a real
language server (python-lsp-server). Beside them, the longest stall of Neovim's
main loop during the calls, as the longest gap between ticks of a 1 ms timer
(what a user typing meanwhile would feel), and the main-loop time of each
synchronous tool's Lua work alone (measured inside Neovim). Targets: each call under 50 ms, except
the language server's own time; no stall over 16 ms.

Run: .venv/bin/python bench/tools.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import Nvim, Sandbox, empty_manifest, wait_for
from mcp_client import SyncMcpConnection, mcp_client

STALL_PROBE = """
_G.bench_gap = 0
local last = vim.uv.hrtime()
_G.bench_timer = vim.uv.new_timer()
_G.bench_timer:start(1, 1, function()
  local now = vim.uv.hrtime()
  _G.bench_gap = math.max(_G.bench_gap, (now - last) / 1e6)
  last = now
end)
"""


IN_NEOVIM = """
local name, args, runs = ...
local tool = require('gemini_companion.tools').get(name)
local call = { reply = function() end, allowed = true, roots = {} }
local out = {}
for i = 1, runs do
  local t = vim.uv.hrtime()
  tool.run(args, call)
  out[i] = (vim.uv.hrtime() - t) / 1e6
end
return out
"""


def timed(conn: SyncMcpConnection, name: str, args: dict[str, Any], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        result = conn.call_tool(name, args)
        samples.append((time.perf_counter() - start) * 1000)
        if result.get("isError"):
            raise RuntimeError(f"{name} failed: {result}")
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="calls per tool (default 30)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gemini-tools-bench-") as tmp:
        root = Path(tmp)
        sandbox = Sandbox.create(root / "sandbox", empty_manifest(root / "rplugin.vim"))
        project = sandbox.root / "project"
        project.mkdir()
        for i in range(200):
            (project / f"f{i}.txt").write_text(f"file {i}\n")
        big = project / "big.py"
        big.write_text("".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(700)))
        nvim = Nvim(sandbox, cwd=project)
        try:
            nvim.wait_running()
            for i in range(200):
                nvim.api.command(f"badd {project / f'f{i}.txt'}")
            nvim.api.command("bufdo set bufhidden=hide")
            nvim.api.command(f"edit {big}")
            nvim.lua(
                "local ns = vim.api.nvim_create_namespace('bench'); local d = {}"
                "; for i = 0, 1999 do d[#d+1] = {lnum = i, col = 0, severity = 1 + i % 4,"
                " message = 'problem ' .. i} end; vim.diagnostic.set(ns, 0, d)"
            )
            pylsp = Path(sys.executable).with_name("pylsp")
            nvim.lua(
                "return vim.lsp.start({ name = 'pylsp', cmd = { ... } }, { bufnr = 0 })",
                str(pylsp),
            )
            wait_for(
                lambda: nvim.lua(
                    "local c = vim.lsp.get_clients({bufnr=0})[1]; return c and c.initialized"
                ),
                30,
                "pylsp",
            )
            nvim.lua(STALL_PROBE)
            with mcp_client(nvim.state()["port"], nvim.token(), "/tools") as conn:
                calls = {
                    "listOpenBuffers (201 buffers)": ("listOpenBuffers", {}),
                    "getDiagnostics (2000, capped at 100)": ("getDiagnostics", {"limit": 100}),
                    "readBuffer (2000 lines)": ("readBuffer", {"filePath": str(big)}),
                    "documentSymbols (pylsp, 700 functions)": (
                        "documentSymbols",
                        {"filePath": str(big)},
                    ),
                }
                timed(conn, "documentSymbols", {"filePath": str(big)}, 1)  # pylsp warm-up
                nvim.lua("_G.bench_gap = 0")
                for label, (name, tool_args) in calls.items():
                    samples = timed(conn, name, tool_args, args.runs)
                    print(
                        f"{label}: median {statistics.median(samples):.1f} ms,"
                        f" max {max(samples):.1f} ms ({args.runs} calls)"
                    )
            gap = nvim.lua("_G.bench_timer:stop(); return _G.bench_gap")
            print(f"longest main-loop gap during the calls: {gap:.1f} ms (target < 16)")
            for name, tool_args in list(calls.values())[:3]:
                work = nvim.lua(IN_NEOVIM, name, tool_args, args.runs)
                print(
                    f"  {name} Lua work on the main loop: median {statistics.median(work):.2f} ms,"
                    f" max {max(work):.2f} ms"
                )
        finally:
            nvim.close()


if __name__ == "__main__":
    main()
