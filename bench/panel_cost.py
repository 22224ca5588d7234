"""What the agent panel costs against another panel, in one run (issue 25 items 1, 3, 5;
issue 31 items 3-5: against the floor, bench/acp_floor.lua, and with agent.prestart).

Both panels drive the real ``gemini --acp`` 0.61.0 offline
(``--fake-responses-non-strict``) through bench/acp_tap.py, which stamps the
messages on the pipe, in a Neovim with a UI attached (``nvim_ui_attach`` from this
script: every redraw is produced and sent). Prints, for this plugin and, when
``CODECOMPANION_DIR`` and ``PLENARY_DIR`` name checkouts of codecompanion.nvim and
plenary.nvim, for codecompanion.nvim's chat with its ``gemini_cli`` adapter:

- panel opened (``:GeminiAgent``; ``require("codecompanion").chat()``) -> agent
  ready (the agent's answer to ``session/new`` written on the pipe), the panel
  opened ``--delay`` seconds after Neovim started, and opened right at start-up
  (this plugin's host then still loading). Target: within 10 % (25 % at start-up)
  of the fastest other panel;
- the CPU Neovim and the processes it runs for the panel (this plugin's Python
  host; not the agent) spend on one answer of ``--size`` bytes streamed in
  ``--chunks`` chunks of markdown with code fences, from the prompt to its last
  line drawn; ``/proc/<pid>/stat``. Target: at most 0.3x codecompanion.nvim's;
  twice. Flooded: the CLI's ``--fake-responses`` hands the answer out as fast as
  it can (1 MB in about 0.9 s, drawn in a few dozen big batches; the floor then
  uses 14-15 % of a core, the figure of issue 31's table, 13.9 %). Paced: the
  real ``gemini --acp`` talks to the fake Gemini API on loopback
  (tests/fake_gemini.py, ``GOOGLE_GEMINI_BASE_URL``), which sends the answer's
  SSE chunks ``--pace-bytes`` (1,000) every ``--pace-ms`` (20 ms), the pace of
  bench/long_chat.py and bench/hostile_lines.py: a model's stream arrives as a
  chunk every few tens of milliseconds and each is drawn in a batch of its own,
  so what the panel costs per batch counts as a user pays it (1 MB then takes
  about 21 s; the floor uses 2 % of a core). ``--no-paced`` skips it. Target
  for both, against the bare client (bench/acp_floor.lua): at most 1.2x;
- the Python host's resident memory at rest (before the panel is opened, 3 s
  after start-up) and with the ACP panel open after the answer. Targets: 45 MiB,
  60 MiB.

Run: .venv/bin/python bench/panel_cost.py [--runs N] [--size BYTES] [--delay S]
     [--pace-bytes B] [--pace-ms MS] [--no-paced] [--ide]
``--ide`` turns the CLI's IDE mode on for every panel: this plugin's agent then
connects to its IDE server as it starts (what a user with IDE mode on gets), the
others find no IDE.
The load average is printed with the figures: on a busy machine they grow.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_gemini import FakeGemini
from fake_model import gemini_home, text, write_responses
from harness import INTEROP, Nvim, Sandbox, empty_manifest, wait_for

GEMINI_JS = INTEROP / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
TAP = Path(__file__).resolve().parent / "acp_tap.py"
TICKS = os.sysconf("SC_CLK_TCK")

READY_TARGET = 1.10
READY_AT_START_TARGET = 1.25
CPU_TARGET = 0.3
REST_TARGET_MIB = 45
OPEN_TARGET_MIB = 60
# Issue 31: against the bare client (acp_floor.lua) in the same run.
READY_FLOOR_TARGET = 1.05
CPU_FLOOR_TARGET = 1.2
SPARE_READY_MS = 100
# How many lines at the end of a transcript are read to tell the answer is drawn:
# reading the whole 1 MB each poll cost Neovim more than a panel draws (measured).
TAIL = "80"


def answer_chunks(size: int, chunks: int) -> list[str]:
    """``size`` bytes of markdown in ``chunks`` pieces: prose, lists and code fences."""
    block = (
        "## Step {n}\n\nThe function below reads the file and *counts* its `lines`:\n\n"
        "```python\ndef count(path):\n    with open(path) as f:\n"
        "        return sum(1 for _ in f)\n```\n\n- first point\n- second point\n\n"
    )
    body, n = [], 0
    while sum(map(len, body)) < size:
        body.append(block.format(n=n))
        n += 1
    whole = "".join(body)[:size]
    step = max(1, len(whole) // chunks)
    return [whole[i : i + step] for i in range(0, len(whole), step)]


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise KeyError("VmRSS")


def stamps(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def stamp_of(log: Path, key: str, value: str, after: int = 0) -> int | None:
    for record in stamps(log):
        if record.get(key) == value and record["t"] >= after:
            return int(record["t"])
    return None


def attach_ui(nvim: Nvim) -> None:
    nvim.api.request("nvim_ui_attach", 120, 40, {"rgb": True, "ext_linegrid": True})


class Panel:
    """One panel in one Neovim: how to open it, prompt it and tell it is done."""

    name = ""
    # --ide: the CLI's IDE mode on (settings.json) for every panel; this plugin's
    # agent then connects to its IDE server as it starts, the others find no IDE.
    ide: bool | None = None

    def __init__(self, root: Path, fake: Path | str, delay: float) -> None:
        """``fake``: the CLI's canned answers (``--fake-responses-non-strict``), or
        the URL of a fake Gemini API (``GOOGLE_GEMINI_BASE_URL``)."""
        self.root = root
        self.log = root / "tap.jsonl"
        home = gemini_home(root, ide=self.ide)
        self.env = {"HOME": str(home), "GEMINI_API_KEY": "offline-bench-key"}
        self.cmd = [sys.executable, str(TAP), str(self.log), "--", "node", str(GEMINI_JS), "--acp"]
        if isinstance(fake, str):
            self.env["GOOGLE_GEMINI_BASE_URL"] = fake
        else:
            self.cmd += ["--fake-responses-non-strict", str(fake)]
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.delay = delay
        # open -> initialize sent, -> answered, -> session/new sent, -> answered (ms)
        self.phases: list[list[float]] = []
        self.nvim = self.start()
        attach_ui(self.nvim)

    def start(self) -> Nvim:
        raise NotImplementedError

    def open(self) -> None:
        raise NotImplementedError

    def prompt(self, words: str) -> None:
        raise NotImplementedError

    def drawn(self, size: int) -> bool:
        raise NotImplementedError

    def idle(self) -> bool:
        """The panel takes a prompt (its agent's session known in Neovim)."""
        raise NotImplementedError

    def pids(self) -> list[int]:
        return [self.nvim.pid]

    def close(self) -> None:
        self.nvim.close()

    def ready_ms(self) -> float:
        """Open the panel and wait for the agent's session: ms from the open."""
        opened = int(self.nvim.lua("return vim.uv.hrtime()"))
        self.open()
        ready = wait_for(
            lambda: stamp_of(self.log, "answer", "session/new", opened), 60, "session/new"
        )
        marks = [
            stamp_of(self.log, "request", "initialize", opened),
            stamp_of(self.log, "answer", "initialize", opened),
            stamp_of(self.log, "request", "session/new", opened),
            ready,
        ]
        if all(marks):
            points = [opened, *marks]
            self.phases.append([(b - a) / 1e6 for a, b in itertools.pairwise(points)])
        return (ready - opened) / 1e6

    def stream(self, size: int) -> tuple[float, float, float]:
        """Prompt for the answer; CPU seconds of :meth:`pids` (and of Neovim alone)
        and wall seconds until the agent's answer to the prompt is on the pipe and
        its last line drawn."""
        wait_for(self.idle, 30, f"{self.name}: ready for a prompt")
        pids = self.pids()
        before, started = cpu_seconds(pids), time.perf_counter()
        nvim_before = cpu_seconds(pids[:1])
        sent = time.monotonic_ns()
        self.prompt("go")
        wait_for(
            lambda: stamp_of(self.log, "answer", "session/prompt", sent) and self.drawn(size),
            180,
            f"{self.name}: the whole answer drawn",
            interval=0.02,
        )
        wall = time.perf_counter() - started
        return cpu_seconds(pids) - before, cpu_seconds(pids[:1]) - nvim_before, wall


class Ours(Panel):
    name = "this plugin"

    def start(self) -> Nvim:
        setup = {"agent": {"protocol": "acp", "acp": {"cmd": self.cmd}}}
        nvim = Nvim(
            Sandbox.create(self.root / "nvim", empty_manifest(self.root / "rplugin.vim")),
            cwd=self.work,
            setup=setup,
            env=self.env,
        )
        if self.delay:
            nvim.wait_running()
        return nvim

    def host_pid(self) -> int:
        return int(
            wait_for(
                lambda: self.nvim.lua(
                    "local c = require('gemini_companion.host').channel"
                    " return c and vim.fn.jobpid(c)"
                ),
                30,
                "the host",
            )
        )

    def pids(self) -> list[int]:
        return [self.nvim.pid, self.host_pid()]

    def open(self) -> None:
        self.nvim.api.command("GeminiAgent")

    def idle(self) -> bool:
        return bool(
            self.nvim.lua("return require('gemini_companion.agent').state().state == 'idle'")
        )

    def prompt(self, words: str) -> None:
        self.nvim.api.command(f"GeminiAgent {words}")

    def drawn(self, size: int) -> bool:
        return bool(
            self.nvim.lua(
                "local a = require('gemini_companion.agent')"
                " local b = require('gemini_companion.agent.transcript').buffer()"
                " local t = vim.api.nvim_buf_get_lines(b, -" + TAIL + ", -1, false)"
                " return a.state().state == 'idle' and t[#t - 1] ~= nil"
                " and table.concat(t, '\\n'):find('Step ' .. ..., 1, true) ~= nil",
                str(last_step(size)),
            )
        )


# codecompanion.nvim alone (not this plugin), as its README installs it: its plugin/
# file registers the markdown parser for its chat buffer (its highlighting).
CC_INIT = """
vim.o.shadafile = 'NONE'
vim.o.swapfile = false
vim.opt.rtp:prepend(os.getenv('CODECOMPANION_DIR'))
vim.opt.rtp:prepend(os.getenv('PLENARY_DIR'))
vim.cmd.source(os.getenv('CODECOMPANION_DIR') .. '/plugin/codecompanion.lua')
local cmd = vim.json.decode(os.getenv('BENCH_AGENT_CMD'))
require('codecompanion').setup({
  interactions = { chat = { adapter = 'gemini_cli' } },
  adapters = { acp = { gemini_cli = function()
    return require('codecompanion.adapters').extend('gemini_cli', {
      commands = { default = cmd },
      defaults = { auth_method = 'gemini-api-key' },
    })
  end } },
})
"""


class OtherSandbox(Sandbox):
    """A sandbox whose init.lua is codecompanion.nvim's set-up alone."""

    def init_lua(self, setup: Any = None, extra: str = "") -> Path:
        path = self.root / "init.lua"
        path.write_text(CC_INIT)
        return path


class CodeCompanion(Panel):
    name = "codecompanion.nvim"

    def start(self) -> Nvim:
        sandbox = OtherSandbox.create(self.root / "nvim", empty_manifest(self.root / "rplugin.vim"))
        env = {
            **self.env,
            "CODECOMPANION_DIR": os.environ["CODECOMPANION_DIR"],
            "PLENARY_DIR": os.environ["PLENARY_DIR"],
            "BENCH_AGENT_CMD": json.dumps(self.cmd),
        }
        return Nvim(sandbox, cwd=self.work, env=env)

    def open(self) -> None:
        self.nvim.lua("require('codecompanion').chat()")

    def idle(self) -> bool:
        return bool(
            self.nvim.lua(
                "local chat = require('codecompanion').last_chat()"
                " return chat ~= nil and chat.acp_connection ~= nil"
                " and chat.acp_connection.session_id ~= nil"
            )
        )

    def prompt(self, words: str) -> None:
        self.nvim.lua(
            "local chat = require('codecompanion').last_chat()"
            " vim.api.nvim_buf_set_lines(chat.bufnr, -1, -1, false, { ... })"
            " chat:submit()",
            words,
        )

    def drawn(self, size: int) -> bool:
        return bool(
            self.nvim.lua(
                "local chat = require('codecompanion').last_chat()"
                " local lines = vim.api.nvim_buf_get_lines(chat.bufnr, -" + TAIL + ", -1, false)"
                " return table.concat(lines, '\\n'):find('Step ' .. ..., 1, true) ~= nil",
                str(last_step(size)),
            )
        )


FLOOR_INIT = """
vim.o.shadafile = 'NONE'
vim.o.swapfile = false
package.path = os.getenv('BENCH_DIR') .. '/?.lua;' .. package.path
"""


class FloorSandbox(Sandbox):
    """A sandbox with no plugin: the floor client (bench/acp_floor.lua) alone."""

    def init_lua(self, setup: Any = None, extra: str = "") -> Path:
        path = self.root / "init.lua"
        path.write_text(FLOOR_INIT)
        return path


class Floor(Panel):
    """The barest ACP client in Neovim (bench/acp_floor.lua): the floor of every figure."""

    name = "bare client (floor)"

    def start(self) -> Nvim:
        sandbox = FloorSandbox.create(self.root / "nvim", empty_manifest(self.root / "rplugin.vim"))
        env = {**self.env, "BENCH_DIR": str(Path(__file__).resolve().parent)}
        return Nvim(sandbox, cwd=self.work, env=env)

    def open(self) -> None:
        self.nvim.lua("require('acp_floor').open(...)", self.cmd)

    def idle(self) -> bool:
        return bool(self.nvim.lua("return require('acp_floor').session ~= nil"))

    def prompt(self, words: str) -> None:
        self.nvim.lua("require('acp_floor').prompt(...)", words)

    def drawn(self, size: int) -> bool:
        return bool(
            self.nvim.lua(
                "local f = require('acp_floor')"
                " return f.done > 0 and table.concat(f.lines(" + TAIL + "), '\\n')"
                ":find('Step ' .. ..., 1, true) ~= nil",
                str(last_step(size)),
            )
        )


class Prestarted(Ours):
    """This plugin with ``agent.prestart``: the agent started once Neovim was idle
    after start-up, before the panel opens. Ready: the panel takes a prompt (its
    state ``idle`` in Neovim), from the ``:GeminiAgent`` that opens it."""

    name = "this plugin, agent.prestart"

    def start(self) -> Nvim:
        setup = {"agent": {"protocol": "acp", "prestart": True, "acp": {"cmd": self.cmd}}}
        nvim = Nvim(
            Sandbox.create(self.root / "nvim", empty_manifest(self.root / "rplugin.vim")),
            cwd=self.work,
            setup=setup,
            env=self.env,
        )
        if self.delay:
            nvim.wait_running()
        return nvim

    def ready_ms(self) -> float:
        if self.delay:  # the spare started meanwhile: its session known on the pipe
            wait_for(lambda: stamp_of(self.log, "answer", "session/new"), 60, "the spare")
        nvim = self.nvim
        # Armed by the open itself: an update before it is not the panel's readiness.
        nvim.lua(
            "_G.bench_ready, _G.bench_armed = nil, false"
            " function _G.bench_check()"
            "   if _G.bench_armed and _G.bench_ready == nil"
            "     and require('gemini_companion.agent').state().state == 'idle' then"
            "     _G.bench_ready = vim.uv.hrtime()"
            "   end"
            " end"
            " vim.api.nvim_create_autocmd('User',"
            "   { pattern = 'GeminiAgentUpdate', callback = _G.bench_check })"
        )
        opened = nvim.lua(
            "local t = vim.uv.hrtime() _G.bench_armed = true vim.cmd('GeminiAgent')"
            " _G.bench_check() return t"
        )
        ready = wait_for(lambda: nvim.lua("return _G.bench_ready"), 60, "the panel ready")
        return (int(ready) - int(opened)) / 1e6


def last_step(size: int) -> int:
    chunks = answer_chunks(size, 1)
    return "".join(chunks).count("## Step ") - 1


def panels() -> list[type[Panel]]:
    found: list[type[Panel]] = [Floor, Ours, Prestarted]
    if os.environ.get("CODECOMPANION_DIR") and os.environ.get("PLENARY_DIR"):
        found.append(CodeCompanion)
    return found


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def agent_pid(panel: Panel) -> int | None:
    """The agent (``gemini --acp``) of ``panel``: the child of its tap."""
    procs = [d for d in Path("/proc").iterdir() if d.name.isdigit()]
    tap = None
    for d in procs:
        try:
            if str(panel.log).encode() in (d / "cmdline").read_bytes():
                tap = int(d.name)
        except OSError:
            continue
    for d in procs:
        try:
            if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == tap:
                return int(d.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


def one(
    kind: type[Panel], root: Path, fake: Path, *, delay: float, size: int, results: dict[str, Any]
) -> None:
    panel = kind(root, fake, delay)
    try:
        if delay:
            time.sleep(delay)
        if isinstance(panel, Prestarted) and delay:
            # The spare's cost at rest: the agent's RSS, and the host's beside Ours'.
            wait_for(lambda: stamp_of(panel.log, "answer", "session/new"), 60, "the spare")
            pid = agent_pid(panel)
            if pid is not None:
                results.setdefault("spare_agent", []).append(rss_mib(pid))
            results.setdefault("rest", []).append(rss_mib(panel.host_pid()))
        elif isinstance(panel, Ours) and delay:
            results.setdefault("rest", []).append(rss_mib(panel.host_pid()))
        results.setdefault("ready" if delay else "ready_at_start", []).append(panel.ready_ms())
        for phases in panel.phases:
            results.setdefault("phases" if delay else "phases_at_start", []).append(phases)
        if not delay or isinstance(panel, Prestarted):
            return
        cpu, nvim_cpu, wall = panel.stream(size)
        results.setdefault("cpu", []).append(cpu)
        results.setdefault("nvim_cpu", []).append(nvim_cpu)
        results.setdefault("wall", []).append(wall)
        if isinstance(panel, Ours):
            results.setdefault("open", []).append(rss_mib(panel.host_pid()))
    finally:
        panel.close()


def paced(
    kind: type[Panel],
    root: Path,
    server: FakeGemini,
    turn: list[Any],
    *,
    size: int,
    results: dict[str, Any],
) -> None:
    """The CPU of ``kind`` on the answer ``turn``, sent by the fake Gemini API at its
    pace to the real ``gemini --acp``."""
    panel = kind(root, server.url, 0.0)
    try:
        panel.open()
        wait_for(panel.idle, 60, f"{panel.name}: ready for a prompt")
        server.add(turn)
        cpu, nvim_cpu, wall = panel.stream(size)
        results.setdefault("cpu_paced", []).append(cpu)
        results.setdefault("nvim_cpu_paced", []).append(nvim_cpu)
        results.setdefault("wall_paced", []).append(wall)
    finally:
        panel.close()


def paced_turn(size: int, chunk: int, interval_ms: float) -> list[Any]:
    """The answer of ``size`` bytes as the fake Gemini API's turn: chunks of
    ``chunk`` bytes, ``interval_ms`` apart."""
    turn: list[Any] = []
    for piece in answer_chunks(size, max(1, size // chunk)):
        if turn:
            turn.append({"delay": interval_ms / 1000})
        turn.append([{"text": piece}])
    return turn


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=3.0)
    parser.add_argument("--pace-bytes", type=int, default=1000)
    parser.add_argument("--pace-ms", type=float, default=20.0)
    parser.add_argument("--no-paced", action="store_true", help="skip the paced stream")
    parser.add_argument("--ide", action="store_true", help="the CLI's IDE mode on")
    args = parser.parse_args()
    if args.ide:
        Panel.ide = True
    print(f"load average before: {load()}; the CLI's IDE mode {'on' if args.ide else 'off'}")
    results: dict[str, dict[str, Any]] = {kind.name: {} for kind in panels()}
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        base = Path(tmp)
        fake = write_responses(
            base / "fake.jsonl",
            [[[text(chunk)] for chunk in answer_chunks(args.size, args.chunks)]],
        )
        # Interleaved, so that the machine's load falls on every panel alike.
        for run in range(args.runs):
            for kind in panels():
                for delay in (args.delay, 0.0):
                    one(
                        kind,
                        base / f"{kind.__name__}-{run}-{delay}",
                        fake,
                        delay=delay,
                        size=args.size,
                        results=results[kind.name],
                    )
        if not args.no_paced:
            print(f"load average before the paced streams: {load()}", flush=True)
            turn = paced_turn(args.size, args.pace_bytes, args.pace_ms)
            server = FakeGemini()
            server.start()
            try:
                for run in range(args.runs):
                    for kind in (Floor, Ours):
                        paced(
                            kind,
                            base / f"paced-{kind.__name__}-{run}",
                            server,
                            turn,
                            size=args.size,
                            results=results[kind.name],
                        )
            finally:
                server.stop()
    print(f"load average after: {load()}")
    report(results, args)


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    ours, floor = results[Ours.name], results[Floor.name]
    spare = results[Prestarted.name]
    others = {name: r for name, r in results.items() if name not in (Ours.name, Prestarted.name)}
    fmt: Callable[[list[float]], str] = lambda v: " / ".join(f"{x:.0f}" for x in v)  # noqa: E731
    for name, r in results.items():
        line = (
            f"{name}: opened {args.delay:g} s after start -> ready {median(r['ready']):.0f} ms"
            f" ({fmt(r['ready'])}); opened at start-up -> ready"
            f" {median(r['ready_at_start']):.0f} ms ({fmt(r['ready_at_start'])})"
        )
        if r.get("cpu"):
            cpu, wall = median(r["cpu"]), median(r["wall"])
            line += (
                f"; {args.size / 1e6:g} MB answer: CPU {cpu:.2f} s in {wall:.2f} s"
                f" ({100 * cpu / wall:.0f} % of a core; Neovim alone"
                f" {median(r.get('nvim_cpu', [])):.2f} s)"
            )
        if r.get("cpu_paced"):
            cpu, wall = median(r["cpu_paced"]), median(r["wall_paced"])
            line += (
                f"; paced ({args.pace_bytes} B every {args.pace_ms:g} ms): CPU {cpu:.2f} s"
                f" ({' / '.join(f'{x:.2f}' for x in r['cpu_paced'])}) in {wall:.1f} s"
                f" ({100 * cpu / wall:.1f} % of a core; Neovim alone"
                f" {median(r['nvim_cpu_paced']):.2f} s)"
            )
        print(line)
    for name, r in results.items():
        for key, when in (("phases", "after start"), ("phases_at_start", "at start-up")):
            rows = r.get(key, [])
            if rows:
                cols = [median([row[i] for row in rows]) for i in range(4)]
                print(
                    f"{name}, opened {when}: open -> initialize sent {cols[0]:.0f} ms,"
                    f" answered +{cols[1]:.0f}, session/new sent +{cols[2]:.0f},"
                    f" answered +{cols[3]:.0f}"
                )
    print(
        f"this plugin's host: {median(ours['rest']):.1f} MiB at rest (target"
        f" <= {REST_TARGET_MIB}), {median(ours['open']):.1f} MiB with the ACP panel open"
        f" (target <= {OPEN_TARGET_MIB})"
    )
    host_growth = median(spare["rest"]) - median(ours["rest"])
    print(
        f"agent.prestart's spare at rest: the agent {median(spare.get('spare_agent', [])):.1f} MiB"
        f" + the host {host_growth:+.1f} MiB ({median(spare['rest']):.1f} against"
        f" {median(ours['rest']):.1f})"
    )
    checks = [
        (
            "ready, against the bare client",
            median(ours["ready"]) / median(floor["ready"]),
            READY_FLOOR_TARGET,
        ),
        (
            "editor-side CPU (Neovim + host), against the bare client, flooded"
            f" ({args.size / 1e6:g} MB in {median(floor['wall']):.1f} s)",
            median(ours["cpu"]) / median(floor["cpu"]),
            CPU_FLOOR_TARGET,
        ),
    ]
    if ours.get("cpu_paced") and floor.get("cpu_paced"):
        checks.append(
            (
                "editor-side CPU (Neovim + host), against the bare client, paced"
                f" ({args.pace_bytes} B every {args.pace_ms:g} ms)",
                median(ours["cpu_paced"]) / median(floor["cpu_paced"]),
                CPU_FLOOR_TARGET,
            )
        )
    for what, ratio, target in checks:
        verdict = "ok" if ratio <= target else "OVER"
        print(f"{what}: {ratio:.2f}x (target <= {target:g}x) {verdict}")
    spare_ready = median(spare["ready"])
    verdict = "ok" if spare_ready <= SPARE_READY_MS else "OVER"
    print(
        f"agent.prestart: :GeminiAgent -> ready {spare_ready:.0f} ms"
        f" (target <= {SPARE_READY_MS} ms) {verdict}"
    )
    fastest = min((median(r["ready"]) for n, r in others.items() if n != Floor.name), default=0)
    if not fastest:
        print("(CODECOMPANION_DIR and PLENARY_DIR unset: no other panel to compare with)")
        return
    fastest_start = min(median(r["ready_at_start"]) for n, r in others.items() if n != Floor.name)
    cc_cpu = median(others[CodeCompanion.name]["cpu"]) if CodeCompanion.name in others else 0
    checks = [
        ("ready", median(ours["ready"]) / fastest, READY_TARGET),
        (
            "ready at start-up",
            median(ours["ready_at_start"]) / fastest_start,
            READY_AT_START_TARGET,
        ),
    ]
    if cc_cpu:
        checks.append(("CPU against codecompanion.nvim", median(ours["cpu"]) / cc_cpu, CPU_TARGET))
    for what, ratio, target in checks:
        verdict = "ok" if ratio <= target else "OVER"
        print(f"{what}: {ratio:.2f}x (target <= {target:g}x) {verdict}")


if __name__ == "__main__":
    main()
