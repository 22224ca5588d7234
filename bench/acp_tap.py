"""A relay between an ACP client (a panel) and its agent, stamping the moments the
benches need: bench/panel_cost.py runs each panel's agent through it, so every
panel is timed at the same place, on the pipe.

Usage: python bench/acp_tap.py LOG -- CMD...

Relays both pipes line by line and appends a JSON line to LOG (``time.monotonic_ns``,
CLOCK_MONOTONIC, the clock of Neovim's ``vim.uv.hrtime``) for each request of the
client and each answer of the agent (their method), and for the agent's first
notification after each request. Its own CPU is not the panel's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time


def main() -> None:
    log_path, cmd = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None and child.stdout is not None
    log = open(log_path, "a", buffering=1)  # noqa: SIM115 (open for the process's life)
    lock = threading.Lock()
    methods: dict[object, str] = {}
    notified = [False]

    def stamp(record: dict[str, object]) -> None:
        with lock:
            log.write(json.dumps({"t": time.monotonic_ns(), **record}) + "\n")

    def client_to_agent() -> None:
        for line in sys.stdin.buffer:
            try:
                message = json.loads(line)
            except ValueError:
                message = {}
            if "method" in message and "id" in message:
                methods[message["id"]] = message["method"]
                notified[0] = False
                stamp({"request": message["method"]})
            child.stdin.write(line)  # type: ignore[union-attr]
            child.stdin.flush()  # type: ignore[union-attr]
        child.stdin.close()  # type: ignore[union-attr]

    threading.Thread(target=client_to_agent, daemon=True).start()
    out = sys.stdout.buffer
    for line in child.stdout:
        out.write(line)
        out.flush()
        if b'"method"' in line[:200]:
            if not notified[0]:
                notified[0] = True
                stamp({"notification": "first"})
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "id" in message and "method" not in message:
            stamp({"answer": methods.pop(message["id"], "?")})
    os._exit(child.wait())


if __name__ == "__main__":
    main()
