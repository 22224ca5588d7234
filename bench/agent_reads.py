"""The host's memory after the ACP agent's file reads (issue 23 item 2).

A real Neovim and its host drive the scripted ACP agent (tests/agent_fakes/
hostile_acp.py), which reads one 5 MiB file 40 times, one line each, through 40
spellings of its path (``fs/read_text_file``): once from disk, once with the file
loaded in a buffer. Prints the host's resident size at rest, its peak (``VmHWM``)
and what stays after the reads; target: back within 10 MiB of rest.

Run: .venv/bin/python bench/agent_reads.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import Nvim, Sandbox, empty_manifest, wait_for

HOSTILE = Path(__file__).resolve().parents[1] / "tests" / "agent_fakes" / "hostile_acp.py"
TARGET_MIB = 10
READS = 40


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def run(root: Path, loaded: bool) -> tuple[float, float, float]:
    work = root / "work"
    (work / "d").mkdir(parents=True)
    big = work / "big.txt"
    big.write_text(("x" * 99 + "\n") * (5 * 1024 * 1024 // 100))
    spellings = [f"{work}/d/.." + "/." * i + "/big.txt" for i in range(READS)]
    reads = [
        {
            "call": "fs/read_text_file",
            "params": {"sessionId": "$SESSION", "path": p, "line": 1, "limit": 1},
        }
        for p in spellings
    ]
    say = {
        "notify": "session/update",
        "params": {
            "sessionId": "$SESSION",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "read all"},
            },
        },
    }
    script = root / "script.json"
    script.write_text(json.dumps({"turns": [[], [*reads, say]]}))
    cmd = [sys.executable, str(HOSTILE), str(script), str(root / "log.jsonl")]
    sandbox = Sandbox.create(root / "sandbox", empty_manifest(root / "rplugin.vim"))
    nvim = Nvim(sandbox, cwd=work, setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}})
    try:
        nvim.wait_running()
        if loaded:
            nvim.api.command(f"edit {big}")

        def state() -> str:
            return str(nvim.lua("return require('gemini_companion.agent').state().state"))

        def transcript() -> str:
            return "\n".join(nvim.lua("return require('gemini_companion.agent').transcript()"))

        nvim.api.command("GeminiAgent warm up")
        wait_for(lambda: state() == "idle" and "warm up" in transcript(), 60, "the first turn")
        pid = int(nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)"))
        rest = status_kib(pid, "VmRSS")
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        nvim.api.command("GeminiAgent read")
        wait_for(lambda: "read all" in transcript() and state() == "idle", 120, "the reads")
        time.sleep(0.5)  # a bench, not a test: let the host settle before reading
        return rest / 1024, status_kib(pid, "VmHWM") / 1024, status_kib(pid, "VmRSS") / 1024
    finally:
        nvim.close()


def main() -> None:
    print(f"{READS} one-line reads of one 5 MiB file, {READS} spellings of its path")
    for loaded in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            rest, peak, after = run(Path(tmp), loaded)
        where = "loaded in a buffer" if loaded else "on disk"
        ok = "ok" if after - rest <= TARGET_MIB else "OVER"
        print(
            f"  {where:20} rest {rest:6.1f} MiB  peak {peak:6.1f} MiB  after {after:6.1f} MiB"
            f"  (+{after - rest:5.1f}; target +{TARGET_MIB}: {ok})"
        )


if __name__ == "__main__":
    main()
