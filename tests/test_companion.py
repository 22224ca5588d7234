"""The companion's lifecycle without Neovim: a real server on a real socket, real
HTTP clients, and a recording editor in Neovim's place (what it records is what
``host.lua`` would be told). Issue 15, items 1 and 2: one owner for the state, and
a server that fails cleans up."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Any

import httpx2
import pytest
from editor_double import RecordingEditor
from gemini_companion.companion import Companion, StartOptions
from gemini_companion.discovery import discovery_dir
from gemini_companion.server import CompanionServer
from lua_options import start_options
from mcp_client import mcp_client, open_raw_session

ERROR = 4


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def companion(tmp_path: Path) -> Any:
    editor = RecordingEditor()
    companion = Companion(editor, env={"TMPDIR": str(tmp_path)})
    yield companion
    companion.stop()


def options(project: Path) -> StartOptions:
    return StartOptions.from_lua(
        start_options(nvim_pid=1234567, workspace_dirs=[str(project)], keep_alive_seconds=0.2)
    )


def editor_of(companion: Companion) -> RecordingEditor:
    editor = companion._editor
    assert isinstance(editor, RecordingEditor)
    return editor


def token_of(companion: Companion) -> str:
    path = Path(companion.state()["discovery_file"])
    return str(json.loads(path.read_text())["authToken"])


class StreamingClient(threading.Thread):
    """Initializes a session and holds its SSE stream open until the server ends it;
    errors (the server going away mid-handshake) are the point, not a failure."""

    def __init__(self, port: int, token: str) -> None:
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.token = token
        self.session_id: str | None = None

    def run(self) -> None:
        try:
            with httpx2.Client(timeout=10) as http:
                headers = open_raw_session(http, self.url, self.token, "storm")
                self.session_id = headers["mcp-session-id"]
                get = {**headers, "Accept": "text/event-stream"}
                with http.stream("GET", self.url, headers=get) as stream:
                    for _ in stream.iter_lines():
                        pass
        except (httpx2.HTTPError, KeyError):
            pass


def test_a_start_stop_storm_with_connected_clients_leaves_no_stale_state(
    companion: Companion, project: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gemini_companion")
    editor = editor_of(companion)
    servers: list[CompanionServer] = []
    clients: list[StreamingClient] = []
    source = project / "a.py"
    source.write_text("x = 1\n")
    for round_ in range(12):
        companion.start(options(project))
        run = companion.run
        assert run is not None
        servers.append(run.server)
        client = StreamingClient(run.server.port, token_of(companion))
        client.start()
        clients.append(client)
        companion.context_event("buffer", [round_ + 1, str(source)])
        companion.context_event("focus", [round_ + 1, str(source), 1, 1])
        if round_ % 3 == 0:  # sometimes the client gets in first, sometimes not
            editor.wait_for(lambda e: e.states()[-1]["sessions"], "a session in the state")
        companion.stop()

    companion.start(options(project))
    run = companion.run
    assert run is not None
    last = StreamingClient(run.server.port, token_of(companion))
    last.start()
    state = editor.wait_for(
        lambda e: (s := e.states()[-1])["sessions"] and s, "the last client in the state"
    )
    assert state["running"] is True
    assert state["port"] == run.server.port
    assert [s["id"] for s in state["sessions"]] == [last.session_id]
    files = sorted(Path(discovery_dir({"TMPDIR": str(tmp_path)})).glob("*.json"))
    assert files == [Path(state["discovery_file"])]

    companion.stop()
    for server in [*servers, run.server]:
        assert server.join(10), "a server thread outlived its stop by 10 s"
    for client in [*clients, last]:
        client.join(10)
    final = editor.states()[-1]
    assert final["running"] is False
    assert final["sessions"] == [] and final["env"] == {}
    assert list(Path(discovery_dir({"TMPDIR": str(tmp_path)})).glob("*.json")) == []
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert problems == [], [r.getMessage() for r in problems]


def _kill_from_inside(server: CompanionServer, how: str) -> None:
    """End the server the way a bug would: its main task cancelled (an exception out
    of the loop), or Uvicorn told to exit by something other than stop()."""

    def kill() -> None:
        if how == "exception":
            for task in asyncio.all_tasks():
                if task.get_coro().__qualname__.endswith("_serve"):  # type: ignore[union-attr]
                    task.cancel()
        else:
            assert server._uvicorn is not None
            server._uvicorn.should_exit = True

    assert server.call_soon(kill)


@pytest.mark.parametrize("how", ["exception", "uvicorn returns"])
def test_a_server_that_dies_tells_the_diff_views_and_reports_stopped(
    companion: Companion, project: Path, how: str
) -> None:
    editor = editor_of(companion)
    companion.start(options(project))
    run = companion.run
    assert run is not None
    discovery_file = Path(companion.state()["discovery_file"])
    target = str(project / "new.py")
    with mcp_client(run.server.port, token_of(companion)) as client:
        result = client.call_tool("openDiff", {"filePath": target, "newContent": "x\n"})
        assert not result.get("isError"), result
        [(spec,)] = editor.of("open")
        _kill_from_inside(run.server, how)
        assert run.server.join(10), "the killed server's thread did not end"

    assert editor.of("orphan") == [(spec["id"],)], "the open view was not told"
    assert editor.of("stopped") == [()], "Lua was not told to stop forwarding"
    state = editor.states()[-1]
    assert state["running"] is False
    assert "stopped unexpectedly" in state["error"]
    assert state["env"] == {}
    assert not discovery_file.exists()
    [(message, _level)] = [m for m in editor.of("notify") if m[1] == ERROR]
    assert "stopped unexpectedly" in message
    assert companion.state() == state
    assert not companion.running

    # A later accept is not dropped silently: the view is told it cannot be sent.
    companion.diff_accepted(spec["id"], "x", True, "unix")
    assert editor.of("orphan")[-1] == (spec["id"],)
    assert len(editor.of("orphan")) == 2

    # And the companion starts again.
    companion.start(options(project))
    assert editor.states()[-1]["running"] is True


def test_a_run_stopped_before_any_client_ends_without_loading_its_server_stack(
    companion: Companion, project: Path
) -> None:
    editor = editor_of(companion)
    companion.start(options(project))
    run = companion.run
    assert run is not None
    # A question answered on the server loop: it runs, and has loaded nothing.
    done = threading.Event()
    assert run.server.call_soon(done.set)
    assert done.wait(10)
    assert not run.server.serving.is_set()
    assert run.server.streams is None
    companion.stop()
    assert run.server.join(10), "the server thread outlived its stop"
    assert not run.server.serving.is_set()
    assert editor.states()[-1]["running"] is False
    assert all(state.get("serving") is not True for state in editor.states())


def test_a_terminal_announced_loads_the_server_stack_and_says_serving(
    companion: Companion, project: Path
) -> None:
    editor = editor_of(companion)
    companion.start(options(project))
    run = companion.run
    assert run is not None
    companion.context_event("terminal", [])
    state = editor.wait_for(
        lambda e: (s := e.states()[-1]).get("serving") and s, "the serving state"
    )
    assert state["running"] is True and state["sessions"] == []
    assert run.server.serving.is_set()
    # A client is then answered as ever.
    with mcp_client(run.server.port, token_of(companion)) as client:
        listed = client.request("tools/list")
        assert {"openDiff", "closeDiff"} <= {tool["name"] for tool in listed["tools"]}
