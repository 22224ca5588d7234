"""Memory of the Python host under big requests and many sessions (issue 14).

Prints, against a real Neovim and its real host process:
- peak memory per request size: the host's resident-set high-water mark
  (``VmHWM``, reset before each request through ``/proc/<pid>/clear_refs``) above
  its resident size just before, for one ``openDiff`` of 1, 16 and 63 MiB, and for
  8 of 63 MiB at once; target: the peak stays within 3 times the body's size;
- the host before any client (the server stack not loaded: server.py) and once a
  session is open;
- what stays after the diff is closed (``closeDiff``, which answers the whole text),
  against the host at rest with one session open;
- 3000 ``initialize`` calls never closed: the host's growth.

Run: .venv/bin/python bench/memory.py
"""

from __future__ import annotations

import contextlib
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
    print(
        f"host before any client (the server stack not loaded):"
        f" {status_kib(pid, 'VmRSS') / 1024:.0f} MiB"
    )
    with httpx2.Client(timeout=120) as http:
        bench = Bench(nvim, http, int(state["port"]))
        print(f"host at rest, one session open (the stack loaded): {bench.baseline / 1024:.0f} MiB")
        print(
            f"target: peak above rest at most {PEAK_TARGET}x the body; after closeDiff,"
            f" back within {LEFT_TARGET_MIB} MiB of the host at rest"
        )
        bench.open_and_close()
        bench.eight_at_once()
        bench.accepts()
        bench.abandoned_sessions()


class AcceptedStream:
    """The session's event stream, read raw in a thread until an ``ide/diffAccepted``
    event is whole (the SDK's client takes minutes over an event of a few MiB)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self._url = url
        self._headers = {**headers, "Accept": "text/event-stream"}
        self._done = threading.Event()
        self._event = b""
        self._client = httpx2.Client(timeout=None)
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> AcceptedStream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def _read(self) -> None:
        buffer = bytearray()
        start = -1
        with (
            contextlib.suppress(Exception),
            self._client.stream("GET", self._url, headers=self._headers) as response,
        ):
            for chunk in response.iter_raw():
                buffer += chunk
                if start < 0:
                    start = buffer.find(b"ide/diffAccepted")
                if start >= 0:
                    end = buffer.find(b"\n\n", max(start, len(buffer) - len(chunk) - 2))
                    if end >= 0:
                        begin = buffer.rfind(b"\n\n", 0, start) + 2
                        self._event = bytes(buffer[max(begin, 0) : end])
                        self._done.set()
                        return

    def wait(self, seconds: float) -> bytes:
        if not self._done.wait(seconds):
            raise TimeoutError(f"no ide/diffAccepted within {seconds} s")
        return self._event


class Bench:
    def __init__(self, nvim: Nvim, http: httpx2.Client, port: int) -> None:
        self.nvim = nvim
        self.http = http
        self.port = port
        self.pid = int(nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)"))
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.token = nvim.token()
        self.headers = open_raw_session(http, self.url, self.token)
        self.baseline = status_kib(self.pid, "VmRSS")

    def row(self, what: str, peak: int, body_mib: int, note: str = "") -> None:
        ratio = peak / 1024 / body_mib
        verdict = "ok" if ratio <= PEAK_TARGET else "OVER"
        left = settled_rss(self.pid, self.baseline) - self.baseline
        print(
            f"| {what} | {peak / 1024:.0f} MiB | {ratio:.1f}x {verdict}{note}"
            f" | {left / 1024:+.0f} MiB |"
        )

    def open_and_close(self) -> None:
        print("| openDiff body | Peak above rest | Peak / body | After closeDiff, above rest |")
        print("| --- | --- | --- | --- |")
        for size_mib in (1, 16, 63):
            path = self.nvim.sandbox.root / f"f{size_mib}.txt"
            body = tool_call(path, text(size_mib * MIB - 200))
            rest = status_kib(self.pid, "VmRSS")
            reset_peak(self.pid)
            answer = self.http.post(self.url, content=body, headers=self.headers)
            assert answer.status_code == 200, answer.text[:200]
            peak = status_kib(self.pid, "VmHWM") - rest
            del body
            self.http.post(self.url, content=tool_call(path, "", "closeDiff"), headers=self.headers)
            self.row(f"{size_mib} MiB", peak, size_mib)

    def eight_at_once(self) -> None:
        rest = status_kib(self.pid, "VmRSS")
        reset_peak(self.pid)
        paths = [self.nvim.sandbox.root / f"c{i}.txt" for i in range(8)]
        bodies = [tool_call(path, text(63 * MIB - 200)) for path in paths]

        def send(body: str) -> None:
            with httpx2.Client(timeout=300) as own:
                own.post(self.url, content=body, headers=self.headers)

        threads = [threading.Thread(target=send, args=(b,)) for b in bodies]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        peak = status_kib(self.pid, "VmHWM") - rest
        del bodies
        for path in paths:
            self.http.post(self.url, content=tool_call(path, "", "closeDiff"), headers=self.headers)
        self.row("8 x 63 MiB at once", peak, 63, " (of one body: they take turns)")

    def accepts(self) -> None:
        print(
            "| Accepted, sent back as `ide/diffAccepted` | Peak above rest | Peak / body"
            " | After, above rest |"
        )
        print("| --- | --- | --- | --- |")
        # Unchanged, the kept bytes go as they came; a change (even undone) sends the
        # buffer's text, which the host reads, checks and encodes.
        for size_mib, edited in ((16, False), (63, False), (16, True), (63, True)):
            path = self.nvim.sandbox.root / f"a{size_mib}.txt"
            content = text(size_mib * MIB - 200)
            with AcceptedStream(self.url, self.headers) as stream:
                answer = self.http.post(
                    self.url, content=tool_call(path, content), headers=self.headers
                )
                assert answer.status_code == 200, answer.text[:200]
                rest = status_kib(self.pid, "VmRSS")
                if edited:
                    self.nvim.lua(
                        "local d = require('gemini_companion.diff').views()[1]"
                        " vim.api.nvim_buf_call(d.proposal, function() vim.cmd('normal! x')"
                        " vim.cmd('undo') end)"
                    )
                reset_peak(self.pid)
                self.nvim.lua("require('gemini_companion.diff').accept()")
                event = stream.wait(120)
                peak = status_kib(self.pid, "VmHWM") - rest
            params = json.loads(event.split(b"data: ", 1)[1])["params"]
            assert params["content"] == content
            del event, params, content
            self.row(f"{size_mib} MiB{', edited' if edited else ''}", peak, size_mib)

    def abandoned_sessions(self) -> None:
        before = status_kib(self.pid, "VmRSS")
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
            answer = self.http.post(self.url, content=init, headers=post_headers(self.token))
            if answer.status_code != 200:
                refused += 1
        grown = status_kib(self.pid, "VmRSS") - before
        print(
            f"3000 initialize never closed: host grew {grown / 1024:.0f} MiB"
            f" ({refused} refused at the session cap)"
        )


if __name__ == "__main__":
    main()
