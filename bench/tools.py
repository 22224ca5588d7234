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

Then the floods of issue 23 (``--no-floods`` skips them), each with the longest
main-loop gap and, for the call floods, the longest wait of a request to Neovim
(``nvim_eval("1")`` sent every 5 ms meanwhile, as keys typed would wait):
``findReferences`` answered with 20 000 locations in 2 000 unopened files (a
language server scripted to answer so, through Neovim's real LSP client; buffers
added), ``readBuffer`` of a 55 MB line and ``getSelection`` of 40 MB, then 1000
calls at once and 1000 calls 90 at a time (answered / refused / reset). Targets:
no gap and no wait over 100 ms, no buffer added, no connection reset.

Run: .venv/bin/python bench/tools.py [--runs N] [--no-floods]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
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
    parser.add_argument("--no-floods", action="store_true", help="skip the floods of issue 23")
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
            if not args.no_floods:
                floods(nvim, project)
        finally:
            nvim.close()


class RequestWaits:
    """``nvim_eval("1")`` every 5 ms, from a client of its own on a thread of its
    own (Neovim's server socket): the longest wait."""

    def __init__(self, nvim: Nvim) -> None:
        self._address = str(nvim.lua("return vim.v.servername"))
        self._stop = threading.Event()
        self.longest = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import pynvim

        client = pynvim.attach("socket", path=self._address)
        try:
            while not self._stop.wait(0.005):
                start = time.perf_counter()
                client.eval("1")
                self.longest = max(self.longest, (time.perf_counter() - start) * 1000)
        finally:
            client.close()

    def __enter__(self) -> RequestWaits:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def gap_since_reset(nvim: Nvim) -> float:
    return float(nvim.lua("local g = _G.bench_gap; _G.bench_gap = 0; return g"))


STEP_PROBE = """
local tools = require('gemini_companion.tools')
_G.bench_step = 0
if not _G.bench_run then
  _G.bench_run = tools.run
  tools.run = function(...)
    local t = vim.uv.hrtime()
    _G.bench_run(...)
    _G.bench_step = math.max(_G.bench_step, (vim.uv.hrtime() - t) / 1e6)
  end
end
"""


def longest_step(nvim: Nvim) -> float:
    """The longest first step of a tool call on the main loop since the last ask."""
    return float(nvim.lua("local s = _G.bench_step; _G.bench_step = 0; return s"))


def settle(nvim: Nvim) -> None:
    """Forget the gaps so far, once the probe has ticked after the last set-up step
    (a gap is recorded at the tick that ends it)."""
    nvim.lua("collectgarbage(); vim.wait(20)")  # the set-up's garbage is not the tools'
    gap_since_reset(nvim)


def floods(nvim: Nvim, project: Path) -> None:
    from test_tools import scripted_server, simultaneous_calls, unopened_references

    print("floods (issue 23; targets: gap and wait < 100 ms, no buffer added, none reset)")
    print(
        "  (gap: the longest between two ticks of a 1 ms timer, which CPU contention"
        " lengthens too; step: the longest main-loop step of a tool call itself)"
    )
    nvim.lua(STALL_PROBE)
    nvim.lua(STEP_PROBE)
    locations = unopened_references(project / "pkg")
    nvim.api.command(f"edit {project / 'f0.txt'}")
    scripted_server(nvim, project.parent, locations)
    buffers = nvim.lua("return #vim.api.nvim_list_bufs()")
    with mcp_client(nvim.state()["port"], nvim.token(), "/tools") as conn:
        settle(nvim)
        took = timed(
            conn,
            "findReferences",
            {"filePath": str(project / "f0.txt"), "line": 1, "character": 1},
            1,
        )
        added = nvim.lua("return #vim.api.nvim_list_bufs()") - buffers
        print(
            f"  findReferences, 20000 locations in 2000 unopened files: {took[0]:.0f} ms,"
            f" longest gap {gap_since_reset(nvim):.1f} ms, {added} buffers added"
        )
        huge = project / "minified.js"
        nvim.lua(
            "local buf = vim.api.nvim_create_buf(true, false); vim.api.nvim_buf_set_name(buf, ...)"
            "; vim.api.nvim_buf_set_lines(buf, 0, -1, false, { string.rep('é123456789', 5000000) })"
            "; vim.api.nvim_set_current_buf(buf)",
            str(huge),
        )
        settle(nvim)
        longest_step(nvim)
        samples = timed(conn, "readBuffer", {"filePath": str(huge)}, 5)
        samples += timed(
            conn, "readBuffer", {"filePath": str(huge), "startCharacter": 49_000_000}, 5
        )
        print(
            f"  readBuffer of one 55 MB line (start, end): median {statistics.median(samples):.0f}"
            f" ms, longest gap {gap_since_reset(nvim):.1f} ms, step {longest_step(nvim):.1f} ms"
        )
        nvim.lua(
            "local buf = vim.api.nvim_create_buf(true, false); vim.api.nvim_buf_set_name(buf, ...)"
            "; local lines = {}; for i = 1, 400000 do lines[i] = string.format('%09d', i)"
            " .. string.rep('.', 90) end; vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)"
            "; vim.api.nvim_set_current_buf(buf)",
            str(project / "log.txt"),
        )
        nvim.api.input("ggVG")
        wait_for(lambda: nvim.api.api.get_mode()["mode"] == "V", 5, "Visual mode")
        settle(nvim)
        longest_step(nvim)
        samples = timed(conn, "getSelection", {}, 5)
        print(
            f"  getSelection of 40 MB: median {statistics.median(samples):.0f} ms,"
            f" longest gap {gap_since_reset(nvim):.1f} ms, step {longest_step(nvim):.1f} ms"
        )
        nvim.api.input("<Esc>")
    for count, at_once in ((1000, 1000), (1000, 90)):
        settle(nvim)
        longest_step(nvim)
        start = time.perf_counter()
        with RequestWaits(nvim) as waits:
            outcomes = simultaneous_calls(nvim, count, at_once)
        took = time.perf_counter() - start
        print(
            f"  {count} listOpenBuffers calls, {at_once} at a time: {took:.1f} s,"
            f" {', '.join(f'{n} {kind}' for kind, n in sorted(outcomes.items()))};"
            f" longest request wait {waits.longest:.0f} ms,"
            f" longest gap {gap_since_reset(nvim):.1f} ms, step {longest_step(nvim):.1f} ms"
        )


if __name__ == "__main__":
    main()
