"""``scripts/setup`` where an optional download fails: ``apt-get download`` there but
failing (stale package lists, a mirror that moved or is down). Outside CI each
optional step is skipped with one line naming what and why, and set-up goes on
(so ``scripts/test`` reaches pytest); with ``CI=true`` it fails.

Set-up runs in a copy of the files it reads, with its venv and npm stamps present,
so only its Debian part does anything; an ``apt-get`` first on ``PATH`` fails: a
stand-in that answers as apt-get does when a file is gone from the mirror, and the
real apt-get sent through a loopback proxy that answers every request 503 (a
mirror that is down), where the machine has apt-get and package lists.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import ROOT

NPM_DIRS = ("tests/interop", "tools", "tests/a2a_server")


def _stamp(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _checkout(root: Path) -> Path:
    """What ``scripts/setup`` reads, with every stamp of a finished install."""
    repo = root / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "setup", repo / "scripts" / "setup")
    shutil.copy2(ROOT / "pyproject.toml", repo / "pyproject.toml")
    (repo / "rplugin" / "python3" / "gemini_companion").mkdir(parents=True)
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (repo / ".venv" / f".installed-{_stamp(ROOT / 'pyproject.toml')}-dev").touch()
    for rel in NPM_DIRS:
        lock = repo / rel / "package-lock.json"
        (repo / rel / "node_modules").mkdir(parents=True)
        shutil.copy2(ROOT / rel / "package-lock.json", lock)
        (repo / rel / "node_modules" / f".installed-{_stamp(lock)}").touch()
    return repo


def _path(stubs: Path) -> str:
    """The stand-ins first, then the system's folders (no checkout's tools)."""
    return os.pathsep.join([str(stubs), "/usr/local/bin", "/usr/bin", "/bin"])


def _run(repo: Path, stubs: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {"PATH": _path(stubs), "HOME": str(repo.parent), "LANG": "C.UTF-8"}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        ["bash", "scripts/setup"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _luacheck_on_path(stubs: Path) -> bool:
    return shutil.which("luacheck", path=_path(stubs)) is not None


def _stand_in(stubs: Path) -> None:
    """apt-get and apt-cache as on a machine whose lists name a file the mirror no
    longer has: a candidate for every package, every download failing."""
    stubs.mkdir()
    (stubs / "apt-cache").write_text(
        '#!/bin/sh\necho "$2:"\necho "  Installed: (none)"\necho "  Candidate: 1.0-1"\n'
    )
    (stubs / "apt-get").write_text(
        "#!/bin/sh\n"
        'echo "Get:1 http://mirror.invalid/debian bookworm/main amd64 $2 1.0-1 [100 kB]"\n'
        'echo "E: Failed to fetch http://mirror.invalid/debian/pool/main/$2_1.0-1_all.deb'
        '  404  Not Found [IP: 192.0.2.1 80]" >&2\n'
        "exit 100\n"
    )
    for name in ("apt-cache", "apt-get"):
        (stubs / name).chmod(0o755)


def _skipped(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("setup: skipped ")]


def _check_outside_ci(result: subprocess.CompletedProcess[str], stubs: Path, why: str) -> None:
    assert result.returncode == 0, result.stderr
    skipped = _skipped(result.stderr)
    expected = [] if _luacheck_on_path(stubs) else ["luacheck"]
    expected.append("Neovim 0.7.2")
    assert [line.split(":")[1].strip().removeprefix("skipped ") for line in skipped] == expected, (
        result.stderr
    )
    for line in skipped:
        assert "'apt-get download' failed (exit 100: " in line, line
        assert why in line, line
        assert "full output: .cache/setup/deb-" in line, line
    assert skipped[-1].endswith("its test (the version check) will be skipped"), skipped
    if "luacheck" in expected:
        assert "scripts/lint will skip it" in skipped[0]
    # one line each: no output dump, no FAILED
    assert "FAILED" not in result.stderr and "Get:1" not in result.stderr, result.stderr
    assert not (stubs.parent / "repo" / ".cache" / "debian" / ".installed-nvim-0.7").exists()


def test_a_failing_apt_get_download_is_skipped_in_one_line_outside_ci_and_fails_in_ci(
    tmp_path: Path,
) -> None:
    repo = _checkout(tmp_path)
    stubs = tmp_path / "stubs"
    _stand_in(stubs)

    result = _run(repo, stubs, ci=False)
    _check_outside_ci(result, stubs, "404  Not Found")

    result = _run(repo, stubs, ci=True)
    assert result.returncode == 1, result.stderr
    failed = [line for line in result.stderr.splitlines() if line.startswith("setup: FAILED")]
    assert len(failed) == 1, result.stderr
    first = "luacheck" if not _luacheck_on_path(stubs) else "Neovim 0.7.2"
    assert failed[0].startswith(f"setup: FAILED: {first}: 'apt-get download' failed (exit 100"), (
        failed
    )
    assert "CI=true" in failed[0]
    assert "404  Not Found" in result.stderr  # the output is shown in CI
    assert not _skipped(result.stderr)


class _DownMirror(http.server.BaseHTTPRequestHandler):
    """A proxy on loopback that answers every request 503, as a mirror that is down."""

    def do_GET(self) -> None:
        self.send_response(503, "Mirror Down")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def down_mirror() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DownMirror)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_the_real_apt_get_with_a_mirror_that_is_down_is_skipped_in_one_line(
    tmp_path: Path, down_mirror: int
) -> None:
    apt_get = shutil.which("apt-get", path="/usr/bin:/bin")
    policy = subprocess.run(
        ["apt-cache", "policy", "neovim"], capture_output=True, text=True, check=False
    ).stdout
    if not apt_get or "Candidate:" not in policy or "Candidate: (none)" in policy:
        pytest.skip("no apt-get with package lists here")
    repo = _checkout(tmp_path)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    proxy = f"http://127.0.0.1:{down_mirror}/"
    (stubs / "apt-get").write_text(
        "#!/bin/sh\n"
        f'exec {apt_get} -o Acquire::http::Proxy="{proxy}" -o Acquire::https::Proxy="{proxy}"'
        ' -o Acquire::Retries=0 "$@"\n'
    )
    (stubs / "apt-get").chmod(0o755)
    result = _run(repo, stubs, ci=False)
    _check_outside_ci(result, stubs, "503")
