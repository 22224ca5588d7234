"""What the plugin's Python host loads at rest, what only a client (a CLI, or a
terminal announcing one) loads, and what only the agent panel loads (issue 25
item 4: the host's memory at rest).

Each watched package is shadowed by a stand-in on the host's ``PYTHONPATH`` that
leaves a file behind when it is imported, then hands over the real package: what the
test sees is what the host really imported, started by the plugin as users have it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from harness import Nvim, wait_for
from ide_client import IdeClientProcess
from mcp_client import open_raw_session

# A stand-in for a package: it marks its import, then hands over the real one.
MARK_MODULE = """
import os, sys
open(os.path.join(os.environ["GEMINI_TEST_MARKS"], __name__), "w").close()
sys.path.remove(os.path.dirname(os.path.abspath(__file__)))
name = __name__
del sys.modules[name]
sys.modules[name] = __import__(name)
"""

# The server stack, loaded once a client needs it (server.py): the MCP SDK's types,
# pydantic, Uvicorn. (Not ``mcp`` itself: a stand-in for it would run the package's
# __init__, which sdk.py skips.)
SERVER_STACK = ("mcp_types", "pydantic", "uvicorn")
# The SDK's client side (an HTTP client, a TLS and cryptography stack) and the agent
# panel's protocol packages.
NEVER_FOR_A_CLI = ("httpx2", "cryptography", "acp", "a2a")
WATCHED = SERVER_STACK + NEVER_FOR_A_CLI
FAKE_AGENT = Path(__file__).parent / "agent_fakes" / "acp_agent.py"

# Every module a process imports, written to a file named by its pid: an observer
# that site runs in the host as it starts (sitecustomize on its PYTHONPATH), for
# what no stand-in can watch (a package's submodules).
RECORD_IMPORTS = """
import os, sys
class _Record:
    path = os.path.join(os.environ["GEMINI_TEST_IMPORTS"], str(os.getpid()))
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        with open(cls.path, "a") as f:
            f.write(name + "\\n")
sys.meta_path.insert(0, _Record)
"""
# Loaded by nothing the host runs for a CLI or for the panel (issue 25 item 4): the
# acp package's whole schema (agent/acp/messages.py models what the panel reads),
# Uvicorn's command line and the MCP SDK's OAuth routes (server_stack.py).
NEVER_IMPORTED = (
    "acp.schema",
    "acp.helpers",
    "uvicorn.main",
    "click",
    "multiprocessing",
    "mcp.server.auth.routes",
    "mcp.server.auth.handlers.token",
)


def _watching(tmp_path: Path) -> tuple[dict[str, str], Path]:
    marks = Path(tempfile.mkdtemp(dir=tmp_path))
    folders = []
    for name in WATCHED:
        folder = Path(tempfile.mkdtemp(dir=tmp_path))
        (folder / f"{name}.py").write_text(MARK_MODULE)
        folders.append(str(folder))
    return {"PYTHONPATH": ":".join(folders), "GEMINI_TEST_MARKS": str(marks)}, marks


def _loaded(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir())


def _at_rest(nvim: Nvim, marks: Path) -> list[str]:
    """What the host has loaded once it runs and has answered a question (its server
    loop and host thread both idle, nothing asked of them)."""
    nvim.wait_running()
    assert nvim.lua("return require('gemini_companion.host').query_info({}, 5000) ~= nil")
    return _loaded(marks)


def a_clients_session(nvim: Nvim) -> None:
    """A CLI's session on the host's MCP server: initialized, its tools listed."""
    url = f"http://127.0.0.1:{nvim.state()['port']}/mcp"
    with httpx2.Client(timeout=30) as http:
        headers = open_raw_session(http, url, nvim.token())
        listed = http.post(
            url,
            content=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            headers=headers,
        )
        assert "openDiff" in listed.text


def the_panel_answers_hello(nvim: Nvim) -> None:
    """``:GeminiAgent hello`` answered by the fake ACP agent in the transcript."""
    nvim.api.command("GeminiAgent hello")
    wait_for(
        lambda: (
            "echo: hello"
            in "\n".join(nvim.lua("return require('gemini_companion.agent').transcript()"))
        ),
        60,
        "the fake agent's answer",
    )


@pytest.mark.usefixtures("interop")
def test_the_host_at_rest_loads_no_server_stack_and_a_cli_connecting_then_is_served(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    env, marks = _watching(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    source = work / "a.py"
    source.write_text("x = 1\n")
    nvim = nvim_factory(cwd=work, env=env)
    assert _at_rest(nvim, marks) == []
    assert nvim.state()["serving"] is False
    nvim.api.command(f"edit {source}")
    # The real IdeClient, nothing warmed: its first connection makes the server load
    # its stack, and it is answered as ever (tools listed, context pushed).
    client = IdeClientProcess(nvim.job_env(), work)
    try:
        status = client.connect()
        assert status["status"] == "connected", status
        assert status["diffing"] is True, status  # openDiff and closeDiff listed

        def shows_the_file(event: dict[str, Any]) -> bool:
            files = ((event.get("context") or {}).get("workspaceState") or {}).get("openFiles")
            return any(f.get("path") == str(source) and f.get("isActive") for f in files or [])

        # Pushed as the stream opened, before connect() returned, or soon after.
        seen = [e for e in client.seen if e.get("event") == "context"]
        assert any(map(shows_the_file, seen)) or client.expect("context", shows_the_file)
    finally:
        client.close()
    assert _loaded(marks) == sorted(SERVER_STACK)
    assert nvim.state()["serving"] is True


def test_a_terminal_opened_loads_the_server_stack_before_any_client_connects(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    env, marks = _watching(tmp_path)
    nvim = nvim_factory(env=env)
    assert _at_rest(nvim, marks) == []
    nvim.api.command("terminal true")
    nvim.wait_state(lambda s: s.get("serving"), 30, "the server stack loaded")
    assert _loaded(marks) == sorted(SERVER_STACK)
    assert nvim.state()["sessions"] == []


def test_a_terminal_open_before_the_start_loads_the_server_stack_at_the_start(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    env, marks = _watching(tmp_path)
    nvim = nvim_factory(env=env, setup={"auto_start": False})
    nvim.api.command("terminal")  # a shell, where the user may run gemini later
    nvim.start()
    nvim.wait_state(lambda s: s.get("serving"), 30, "the server stack loaded")
    assert _loaded(marks) == sorted(SERVER_STACK)


def test_the_host_at_rest_loads_neither_the_sdks_client_nor_the_agent_stack(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    env, marks = _watching(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    cmd = [sys.executable, str(FAKE_AGENT)]
    nvim = nvim_factory(
        cwd=work, env=env, setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}}
    )
    assert _at_rest(nvim, marks) == []
    # A client's whole session: the server stack is loaded and has served.
    a_clients_session(nvim)
    assert not set(_loaded(marks)) & set(NEVER_FOR_A_CLI)
    # The stand-ins do watch the host: the panel's first use loads its protocol.
    the_panel_answers_hello(nvim)
    assert "acp" in {p.name for p in marks.iterdir()}
    assert "a2a" not in {p.name for p in marks.iterdir()}


@pytest.mark.usefixtures("interop")
def test_a_panel_session_and_a_clients_load_neither_the_acp_schema_nor_uvicorns_command_line(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    observer = tmp_path / "observer"
    observer.mkdir()
    (observer / "sitecustomize.py").write_text(RECORD_IMPORTS)
    imports = tmp_path / "imports"
    imports.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    nvim = nvim_factory(
        cwd=work,
        env={"PYTHONPATH": str(observer), "GEMINI_TEST_IMPORTS": str(imports)},
        setup={"agent": {"protocol": "acp", "acp": {"cmd": [sys.executable, str(FAKE_AGENT)]}}},
    )
    nvim.wait_running()
    host = nvim.lua("return vim.fn.jobpid(require('gemini_companion.host').channel)")
    # A whole panel session: the agent started, a prompt answered.
    the_panel_answers_hello(nvim)
    nvim.wait_state(lambda s: s.get("serving"), 30, "the server stack loaded")
    # A CLI's session on the MCP server.
    a_clients_session(nvim)
    imported = set((imports / str(host)).read_text().split())
    # The observer does watch the host: what serves both is there.
    assert {"acp.connection", "uvicorn.server", "mcp.server.lowlevel.server"} <= imported
    assert sorted(imported & set(NEVER_IMPORTED)) == []


def test_an_sdk_whose_server_asks_its_oauth_routes_for_other_names_gets_the_real_ones() -> None:
    """The stand-in for the SDK's OAuth routes (server_stack.py) gives way to the real
    module when the low-level server asks it for a name it lacks (another SDK)."""
    import subprocess

    rplugin = Path(__file__).parent.parent / "rplugin" / "python3"
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(rplugin)!r})\n"
        "from gemini_companion.sdk import stand_in\n"
        "stand_in('mcp.server.auth.routes')  # one lacking every name\n"
        "from gemini_companion.server_stack import import_server_stack\n"
        "import_server_stack()\n"
        "import mcp.server.auth.routes as routes\n"
        "from mcp.server.lowlevel import Server\n"
        "print(routes.create_auth_routes.__module__, Server.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.split() == ["mcp.server.auth.routes", "Server"], done.stderr
