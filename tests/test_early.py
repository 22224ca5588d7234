"""Issue 10: the socket and discovery file published before the host loads the rest
(early.py), and the companion adopting them."""

from __future__ import annotations

import json
import re
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gemini_companion import early
from harness import Nvim, wait_for


@pytest.fixture
def tmpdir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    yield tmp_path / "gemini" / "ide"
    early.discard()


def options(pid: int = 4242, dirs: list[str] | None = None) -> list[str]:
    return [str(pid), *(dirs or ["/"])]


def test_listen_publishes_a_private_file_naming_a_listening_port(tmpdir_env: Path) -> None:
    early.listen(options(dirs=["/tmp", "/"]))
    files = list(tmpdir_env.glob("gemini-ide-server-4242-*.json"))
    assert len(files) == 1, files
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    content = json.loads(files[0].read_text())
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", content["authToken"]), content
    assert content["workspacePath"] == "/tmp:/"
    assert files[0].name == f"gemini-ide-server-4242-{content['port']}.json"
    # The socket listens: a connection is accepted into the backlog at once.
    with socket.create_connection(("127.0.0.1", content["port"]), timeout=2):
        pass
    assert list(tmpdir_env.glob(".gemini-ide-server-*")) == [], "no temporary file left"


def test_the_companion_takes_it_once_and_only_for_its_own_neovim(tmpdir_env: Path) -> None:
    early.listen(options(pid=4242))
    taken = early.take(4242)
    assert taken is not None
    assert early.take(4242) is None, "handed over once"
    taken.discard()

    early.listen(options(pid=4242))
    assert early.take(1) is None, "another Neovim's listener is not adopted"
    assert list(tmpdir_env.glob("*.json")) == [], "and its file is gone"


def test_discard_closes_the_socket_and_removes_the_file(tmpdir_env: Path) -> None:
    early.listen(options())
    [file] = tmpdir_env.glob("*.json")
    port = json.loads(file.read_text())["port"]
    early.discard()
    assert not file.exists()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


@pytest.mark.parametrize("raw", [[], [""], ["x", "/"], ["4.5"]])
def test_bad_options_leave_nothing(tmpdir_env: Path, raw: list[str]) -> None:
    early.listen(raw)
    assert early.take(4242) is None
    assert not tmpdir_env.exists() or list(tmpdir_env.iterdir()) == []


def test_a_started_companion_serves_the_socket_published_as_its_host_started(
    nvim: Nvim,
) -> None:
    state = nvim.wait_running()
    # The early state (early.py's announce) comes before the companion logs its start.
    log = wait_for(
        lambda: (
            (f := nvim.sandbox.log_file).exists() and "listening on" in (t := f.read_text()) and t
        ),
        10,
        "the companion's start in its log",
    )
    assert f"listening on 127.0.0.1:{state['port']}" in log, log
    assert "(both made as the host started)" in log, log
    content = json.loads(Path(state["discovery_file"]).read_text())
    assert content["port"] == state["port"]
    assert content["authToken"] == state["env"]["GEMINI_CLI_IDE_AUTH_TOKEN"]


def test_the_warm_up_session_after_a_terminal_opens_leaves_no_trace(nvim: Nvim) -> None:
    # A terminal opened (a CLI may be coming): server.py loads the server stack and
    # runs one throwaway MCP session through the app, so the first CLI does not pay
    # the SDK's lazy set-up; nobody may see that session.
    nvim.wait_running()
    nvim.api.command("terminal true")
    nvim.wait_state(lambda s: s.get("serving"), 30, "the server stack loaded")
    wait_for(lambda: "server warmed up in" in nvim.sandbox.log_file.read_text(), 10, "the warm-up")
    log = nvim.sandbox.log_file.read_text()
    assert "warming the server up failed" not in log, log
    assert "CLI session" not in log, log
    assert nvim.state()["sessions"] == []


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        127,
        128,
        -1,
        -32,
        -33,
        2**40,
        -(2**40),
        1.5,
        "",
        "é" * 40,
        "x" * 300,
        "y" * 70000,
        list(range(20)),
        {"a": {"b": [1, "c"]}, "n": None},
        {str(i): i for i in range(20)},
    ],
)
def test_pack_writes_msgpack(value: object) -> None:
    import msgpack

    assert msgpack.unpackb(early.pack(value), raw=False, strict_map_key=False) == value


# Stands in for pynvim in the host's process: holds the host's later stages (pynvim,
# the package's __init__, the server stack) until the test creates the release file,
# then hands over to the real pynvim.
HOLD_PYNVIM = """
import os, sys, time
release = os.environ["GEMINI_TEST_RELEASE"]
while not os.path.exists(release):
    time.sleep(0.005)
sys.path.remove(os.path.dirname(os.path.abspath(__file__)))
del sys.modules["pynvim"]
import pynvim as real
sys.modules["pynvim"] = real
"""


def test_neovim_knows_the_port_before_pynvim_loads_and_early_requests_wait(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    import httpx2

    shim = tmp_path / "hold"
    shim.mkdir()
    (shim / "pynvim.py").write_text(HOLD_PYNVIM)
    release = tmp_path / "release"
    nvim = nvim_factory(env={"PYTHONPATH": str(shim), "GEMINI_TEST_RELEASE": str(release)})
    try:
        state = nvim.wait_state(lambda s: bool(s.get("running")), 15, "the announced state")
        assert state["loading"] is True
        port = state["port"]
        # Held back: the companion has not started (it logs its start), yet Neovim
        # has the state and exports the variables to its jobs.
        assert not nvim.sandbox.log_file.exists(), "the host's later stages ran"
        assert nvim.lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT") == str(port)
        token = nvim.lua("return vim.env.GEMINI_CLI_IDE_AUTH_TOKEN")
        content = json.loads(Path(state["discovery_file"]).read_text())
        assert (content["port"], content["authToken"]) == (port, token)
        assert state["sessions"] == [] and state["env"]["GEMINI_CLI_IDE_PID"] == str(
            nvim.lua("return vim.fn.getpid()")
        )
        # A request sent now waits in the socket's backlog and is answered once the
        # server runs.
        answers: list[int] = []

        def ask() -> None:
            answers.append(httpx2.get(f"http://127.0.0.1:{port}/mcp", timeout=30).status_code)

        asker = threading.Thread(target=ask)
        asker.start()
        asker.join(0.3)
        assert answers == [], "answered before the server loaded"
        release.touch()
        asker.join(30)
        assert answers == [401], answers  # no token: refused, by the real server
        final = nvim.wait_running()
        assert nvim.sandbox.log_file.exists()
        assert final["port"] == port and final["env"] == state["env"]
    finally:
        release.touch()


@pytest.mark.parametrize("workspace", ["", "/a:/b", 'qu"ote\\back', "é/日本/\x7f", "\U0001f600"])
def test_the_discovery_file_is_what_json_dumps_writes(workspace: str) -> None:
    from gemini_companion.discovery import DiscoveryFile

    discovery = DiscoveryFile("/x", 1, 65535, "tok-_en")
    assert discovery.encoded(workspace) == json.dumps(discovery.content(workspace)).encode()


# What the host's start command runs before it publishes (host.lua's HOST_MAIN).
EARLY_IMPORTS = """
import sys
sys.path[:] = [p for p in sys.path if p]
before = set(sys.modules)
pkg = sys.modules['gemini_companion'] = type(sys)('gemini_companion')
pkg.__path__ = [sys.argv[1]]
__import__('gemini_companion.early')
print(" ".join(sorted(set(sys.modules) - before)))
"""


def test_the_early_step_imports_no_costly_module() -> None:
    # Each of these took milliseconds before the discovery file and the port were
    # published (`python -X importtime`).
    package = Path(early.__file__).parent
    out = subprocess.run(
        # -S as the host runs: site-packages are set up after the early step.
        [sys.executable, "-S", "-c", EARLY_IMPORTS, str(package)],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(out.stdout.split())
    costly = {"json", "socket", "pathlib", "typing", "re", "contextlib", "enum", "msgpack", "site"}
    assert "gemini_companion.early" in loaded, loaded
    assert loaded & costly == set(), loaded & costly
