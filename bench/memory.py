"""Memory of the Python host under big requests and many sessions (issue 14).

Prints, against a real Neovim and its real host process:
- peak memory per request size: the host's resident-set high-water mark
  (``VmHWM``, reset before each request through ``/proc/<pid>/clear_refs``) above
  its resident size just before, for one ``openDiff`` of 1, 16 and 63 MiB, and for
  8 of 63 MiB at once; target: the peak stays within 3 times the body's size;
- what stays after the diff is closed (``closeDiff``, which answers the whole text),
  against the host at rest before the first request;
- 3000 ``initialize`` calls never closed: the host's growth.

Run: .venv/bin/python bench/memory.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import Nvim, Sandbox, empty_manifest
from mcp_client import open_raw_session, post_headers

MIB = 1024 * 1024


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


# What issue 14 asks: peak memory per request near the body's size, and memory back
# near its baseline once the diff is closed.
PEAK_TARGET = 3
LEFT_TARGET_MIB = 8


def settled_rss(pid: int, baseline: int, seconds: float = 2.0) -> int:
    """The host's resident size once it has given memory back: the host releases it
    just after the answer went out, so this waits (up to ``seconds``) for it to come
    within the target of ``baseline``, and returns the last reading."""
    deadline = time.monotonic() + seconds
    while True:
        rss = status_kib(pid, "VmRSS")
        if rss - baseline <= LEFT_TARGET_MIB * 1024 or time.monotonic() > deadline:
            return rss
        time.sleep(0.05)


def text(size: int) -> str:
    """About ``size`` bytes of 80-column lines (one huge line would make Neovim's
    diff, not the host, the thing measured)."""
    return ("x" * 79 + "\n") * (size // 80)


def tool_call(path: Path, content: str, name: str = "openDiff") -> str:
    arguments = {"filePath": str(path), "newContent": content}
    if name == "closeDiff":
        arguments = {"filePath": str(path)}
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="gemini-memory-bench-"))
    try:
        manifest = empty_manifest(root / "rplugin.vim")
        sandbox = Sandbox.create(root / "nvim", manifest)
        nvim = Nvim(sandbox, setup={"max_request_bytes": 80 * MIB})
        try:
            run(nvim)
        finally:
            nvim.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(nvim: Nvim) -> None:
    state = nvim.wait_running()
    pid = int(nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)"))
    url = f"http://127.0.0.1:{state['port']}/mcp"
    token = nvim.token()
    with httpx2.Client(timeout=120) as http:
        headers = open_raw_session(http, url, token)
        baseline = status_kib(pid, "VmRSS")
        print(f"host at rest: {baseline / 1024:.0f} MiB")
        print(
            f"target: peak above rest at most {PEAK_TARGET}x the body; after closeDiff,"
            f" back within {LEFT_TARGET_MIB} MiB of the host at rest"
        )
        print("| Body | Peak above rest | Peak / body | After closeDiff, above rest |")
        print("| --- | --- | --- | --- |")
        for size_mib in (1, 16, 63):
            path = nvim.sandbox.root / f"f{size_mib}.txt"
            body = tool_call(path, text(size_mib * MIB - 200))
            rest = status_kib(pid, "VmRSS")
            reset_peak(pid)
            answer = http.post(url, content=body, headers=headers)
            assert answer.status_code == 200, answer.text[:200]
            peak = status_kib(pid, "VmHWM") - rest
            http.post(url, content=tool_call(path, "", "closeDiff"), headers=headers)
            left = settled_rss(pid, baseline) - baseline
            ratio = peak / 1024 / size_mib
            verdict = "ok" if ratio <= PEAK_TARGET else "OVER"
            print(
                f"| {size_mib} MiB | {peak / 1024:.0f} MiB | {ratio:.1f}x {verdict}"
                f" | {left / 1024:+.0f} MiB |"
            )
        rest = status_kib(pid, "VmRSS")
        reset_peak(pid)
        bodies = [
            tool_call(nvim.sandbox.root / f"c{i}.txt", text(63 * MIB - 200)) for i in range(8)
        ]

        def send(body: str) -> None:
            with httpx2.Client(timeout=300) as own:
                own.post(url, content=body, headers=headers)

        threads = [threading.Thread(target=send, args=(b,)) for b in bodies]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        peak = status_kib(pid, "VmHWM") - rest
        del bodies
        for i in range(8):
            http.post(
                url,
                content=tool_call(nvim.sandbox.root / f"c{i}.txt", "", "closeDiff"),
                headers=headers,
            )
        left = settled_rss(pid, baseline) - baseline
        print(
            f"| 8 x 63 MiB at once | {peak / 1024:.0f} MiB | {peak / 1024 / 63:.1f}x one body"
            f" (they take turns) | {left / 1024:+.0f} MiB |"
        )
        before = status_kib(pid, "VmRSS")
        init = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"},
                },
            }
        )
        refused = 0
        for _ in range(3000):
            if http.post(url, content=init, headers=post_headers(token)).status_code != 200:
                refused += 1
        grown = status_kib(pid, "VmRSS") - before
        print(
            f"3000 initialize never closed: host grew {grown / 1024:.0f} MiB"
            f" ({refused} refused at the session cap)"
        )


if __name__ == "__main__":
    main()
