"""What the real IdeClient costs by itself (issue 10): the floor under any server.

Runs the real ``IdeClient`` (``@google/gemini-cli-core``, pinned) against a reference
server, ``tests/interop/reference_server.mjs``: the smallest IDE companion the
official MCP TypeScript SDK allows, in Node, with no editor behind it. Prints, over
``--runs`` fresh Node processes, the same figures ``bench/startup.py --only connect``
and ``bench/diff.py --only accept`` print for this plugin:
- ``IdeClient.connect()`` in a fresh Node process, and warm reconnects;
- an ``ide/diffAccepted`` notification of 1 MiB and 10 MiB sent by the server to the
  client's ``openDiff`` promise resolved (both on the monotonic clock).
Run it beside those two, on a quiet machine: where the reference is no faster than
the target, the target is out of any server's reach.

Run: .venv/bin/python bench/client_floor.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import INTEROP
from ide_client import IdeClientProcess, ensure_interop_packages
from stats import summary

MIB = 1024 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    ensure_interop_packages()
    root = Path(tempfile.mkdtemp(prefix="gemini-floor-bench-"))
    workspace, tmp = root / "ws", root / "tmp"
    workspace.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
    env["TMPDIR"] = str(tmp)
    server = subprocess.Popen(
        ["node", str(INTEROP / "reference_server.mjs"), str(workspace)],
        cwd=INTEROP,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        info = json.loads(server.stdout.readline())
        client_env = dict(
            env,
            GEMINI_CLI_IDE_SERVER_PORT=str(info["port"]),
            GEMINI_CLI_IDE_WORKSPACE_PATH=str(workspace),
            GEMINI_CLI_IDE_PID=str(info["pid"]),
            TERM_PROGRAM="vscode",
            # Neovim's terminals get it too: the client and server share this machine.
            REMOTE_CONTAINERS="true",
        )
        first: list[float] = []
        warm: list[float] = []
        transport: dict[int, list[float]] = {1: [], 10: []}
        for _ in range(args.runs):
            client = IdeClientProcess(client_env, workspace)
            try:
                fresh, reconnects = client.connect_times()
                first.append(fresh)
                warm.extend(reconnects)
                for mib, times in transport.items():
                    text = "x" * (mib * MIB)
                    client.send(cmd="openDiff", filePath=str(workspace / "f.txt"), newContent=text)
                    diff = client.expect("diff", timeout=60)
                    sent = json.loads(server.stdout.readline())
                    assert diff.get("result", {}).get("content") == text, "the proposal came back"
                    times.append((int(diff["hrNs"]) - int(sent["sentNs"])) / 1e6)
            finally:
                client.close()
    finally:
        server.kill()
        server.wait(5)
        shutil.rmtree(root, ignore_errors=True)
    print("the real IdeClient against a reference server (official MCP TypeScript SDK, Node):")
    print(f"  IdeClient.connect(), fresh Node process: {summary(first)}  (plugin's target < 40)")
    print(f"  IdeClient.connect(), warm (reconnect):   {summary(warm)}  (plugin's target < 10)")
    for mib, times in transport.items():
        target = "< 5 ms" if mib == 1 else "< 40 ms"
        print(
            f"  diffAccepted sent -> openDiff resolved, {mib:>2} MiB: {summary(times)}"
            f"  (plugin's target {target})"
        )


if __name__ == "__main__":
    main()
