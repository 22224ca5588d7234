"""Start-up benchmark for the companion server (issue 2).

Prints, over several runs of a real Neovim:
- time added before the first screen: time from UI attach to the first complete
  redraw (``flush``), plugin with auto-start versus no plugin (target 0 ms);
- the longest stall of Neovim's main loop from VimEnter until the server answers,
  seen as the worst latency of ``vim.schedule`` callbacks queued every 2 ms, plugin
  versus no plugin (target under 100 ms);
- VimEnter to discovery file on disk (target under 150 ms);
- the real client's ``IdeClient.connect()`` time, first and warm (target under 20 ms).

Run: .venv/bin/python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pynvim
from harness import ROOT, Nvim, Sandbox, nvim_executable, register_remote_plugin, wait_for
from ide_client import IdeClientProcess, ensure_interop_packages

# Queued from init.lua, before any plugin code: a 2 ms vim.uv timer that queues a
# vim.schedule callback and records how late it runs. A timer keeps firing while the
# main loop is blocked; the scheduled callbacks wait, so their lateness is the stall.
PROBE = r"""
_G.bench = { stalls = {}, vimenter = nil }
local uv = vim.uv or vim.loop
local timer = uv.new_timer()
timer:start(0, 2, function()
  local queued = uv.hrtime()
  vim.schedule(function()
    table.insert(_G.bench.stalls, (uv.hrtime() - queued) / 1e6)
  end)
end)
_G.bench.timer = timer
vim.api.nvim_create_autocmd("VimEnter", { once = true, callback = function()
  local s, us = uv.gettimeofday()
  _G.bench.vimenter = s + us / 1e6
  _G.bench.vimenter_index = #_G.bench.stalls
end })
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def first_screen_ms(init: Path, env: dict[str, str]) -> float:
    """UI attach to the first ``flush`` of a full redraw, in ms."""
    argv = ["/usr/bin/env", "-i", *[f"{k}={v}" for k, v in env.items()], nvim_executable()]
    nvim = pynvim.attach("child", argv=[*argv, "--embed", "-u", str(init)])
    try:
        start = time.perf_counter()
        nvim.ui_attach(80, 24, rgb=True)
        while True:
            message = nvim.next_message()
            if message is None:
                continue
            if message[1] == "redraw" and any(event[0] == "flush" for event in message[2]):
                return (time.perf_counter() - start) * 1000
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")


def run_stall(sandbox: Sandbox, with_plugin: bool) -> dict[str, float]:
    """One headless Neovim: stall after VimEnter, and VimEnter -> discovery file."""
    for p in sandbox.discovery_files():
        p.unlink()
    extra = PROBE
    setup: dict[str, Any] = {"auto_start": with_plugin}
    nvim = Nvim(sandbox, setup=setup, extra_init=extra)
    try:
        found_at = None
        if with_plugin:
            found = wait_for(sandbox.discovery_files, 10, "discovery file", interval=0.0005)
            found_at = time.time()
            del found
            nvim.wait_state(lambda s: s.get("running"), 10, "running")
            # Wait until the server answers, so its start-up is inside the window.
            state = nvim.state()
            import httpx2

            wait_for(
                lambda: _answers(httpx2, state["port"]),
                10,
                "the server to answer",
            )
        else:
            nvim.api.command("sleep 500m")
        nvim.api.command("sleep 100m")
        bench = nvim.lua(
            "return {stalls = _G.bench.stalls, i = _G.bench.vimenter_index, t = _G.bench.vimenter}"
        )
        stalls = bench["stalls"][int(bench["i"] or 0) :]
        result = {"stall_ms": max(stalls) if stalls else 0.0}
        if found_at is not None:
            result["discovery_ms"] = (found_at - float(bench["t"])) * 1000
        return result
    finally:
        nvim.close()


def _answers(httpx2: Any, port: int) -> bool:
    try:
        httpx2.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
        return True
    except httpx2.TransportError:
        return False


NODE_FIRST_FETCH = (
    "const t = performance.now();"
    "fetch(process.argv[1]).then((r) => r.text())"
    ".then(() => console.log(performance.now() - t));"
)


def node_first_fetch_ms(port: int) -> float:
    """A fresh Node process's first fetch to this server (answered 401 at once): the
    client-side cost inside the first connect() of every new CLI."""
    out = subprocess.run(
        ["node", "-e", NODE_FIRST_FETCH, f"http://127.0.0.1:{port}/mcp"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return float(out.stdout.strip())


def connect_times(sandbox: Sandbox, runs: int) -> tuple[float, list[float], list[float]]:
    ensure_interop_packages()
    nvim = Nvim(sandbox, setup={"auto_start": True})
    try:
        state = nvim.wait_running()
        node_first = [node_first_fetch_ms(state["port"]) for _ in range(5)]
        env = nvim.job_env()
        client = IdeClientProcess(env, sandbox.root)
        try:
            first = client.connect()
            assert first["status"] == "connected", first
            warm = []
            for _ in range(runs):
                client.send(cmd="reconnect")
                event = client.expect("status", lambda e: "connectMs" in e)
                assert event["status"] == "connected", event
                warm.append(float(event["connectMs"]))
            return float(first["connectMs"]), warm, node_first
        finally:
            client.close()
    finally:
        nvim.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="gemini-bench-"))
    try:
        manifest = workdir / "rplugin.vim"
        sandbox = Sandbox.create(workdir / "sandbox", manifest)
        register_remote_plugin(sandbox)

        # First screen, runs interleaved: no plugin; the plugin loaded and set up
        # with auto_start off; the plugin with auto_start on (the start itself).
        plain_init = workdir / "plain.lua"
        plain_init.write_text("vim.o.shadafile = 'NONE'\n")
        loaded_init = workdir / "loaded.lua"
        loaded_init.write_text(sandbox.init_lua({"auto_start": False}).read_text())
        with_init = sandbox.init_lua({"auto_start": True})
        on, loaded, off = [], [], []
        for _ in range(max(args.runs, 20)):
            off.append(first_screen_ms(plain_init, sandbox.env))
            loaded.append(first_screen_ms(loaded_init, sandbox.env))
            on.append(first_screen_ms(with_init, sandbox.env))

        stalls_on, stalls_off, discovery = [], [], []
        for _ in range(args.runs):
            r = run_stall(sandbox, True)
            stalls_on.append(r["stall_ms"])
            discovery.append(r["discovery_ms"])
            stalls_off.append(run_stall(sandbox, False)["stall_ms"])

        first_connect, warm, node_first = connect_times(sandbox, args.runs)

        report = {
            "runs": args.runs,
            "first_screen_ms": {
                "auto_start_median": statistics.median(on),
                "loaded_no_start_median": statistics.median(loaded),
                "no_plugin_median": statistics.median(off),
                "added_by_auto_start": statistics.median(on) - statistics.median(loaded),
                "added_by_loading": statistics.median(loaded) - statistics.median(off),
            },
            "main_loop_stall_ms": {
                "plugin_max": max(stalls_on),
                "plugin_median_of_max": statistics.median(stalls_on),
                "baseline_max": max(stalls_off),
            },
            "vimenter_to_discovery_file_ms": {
                "median": statistics.median(discovery),
                "p90": percentile(discovery, 0.9),
                "max": max(discovery),
            },
            "ide_client_connect_ms": {
                "first": first_connect,
                "node_first_fetch_median": statistics.median(node_first),
                "warm_median": statistics.median(warm),
                "warm_max": max(warm),
            },
        }
        print(json.dumps(report, indent=2))
        print()
        screen = report["first_screen_ms"]
        print(
            f"first screen added:         {screen['added_by_auto_start']:+.1f} ms by the start"
            f" (target 0), {screen['added_by_loading']:+.1f} ms by loading the plugin and setup()"
        )
        print(
            f"main-loop stall (worst):     {report['main_loop_stall_ms']['plugin_max']:.1f} ms "
            f"(median run {report['main_loop_stall_ms']['plugin_median_of_max']:.1f}; "
            f"no plugin {report['main_loop_stall_ms']['baseline_max']:.1f}) (target < 100)"
        )
        print(
            "VimEnter -> discovery file:  median "
            f"{report['vimenter_to_discovery_file_ms']['median']:.1f} ms, "
            f"max {report['vimenter_to_discovery_file_ms']['max']:.1f} ms (target < 150)"
        )
        print(
            f"IdeClient.connect():         warm median "
            f"{report['ide_client_connect_ms']['warm_median']:.1f} ms (target < 20); first in a "
            f"fresh Node process {first_connect:.1f} ms, of which Node's own first fetch is "
            f"~{statistics.median(node_first):.1f} ms"
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    _ = ROOT, os


if __name__ == "__main__":
    main()
