"""Who may talk to the A2A server the plugin starts, and what the plugin writes for
it: the real ``@google/gemini-cli-a2a-server`` 0.25.2 (tests/a2a_server) against
the fake Gemini API (tests/fake_gemini.py), driven through a real Neovim, and a
second local user (``nobody``) where the tests run as root."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from agent_setup import START, wait_agent, wait_transcript
from fake_gemini import FakeGemini, call_turn, text_turn
from harness import Nvim, process_env, wait_for
from test_agent_a2a import pytestmark as a2a_server_installed
from test_hardening import python_for_everyone

pytestmark = a2a_server_installed
NOBODY = 65534
TOKEN_VAR = "GEMINI_COMPANION_A2A_TOKEN"


# What the second user runs: one HTTP request to the plugin's A2A server; prints
# the status and the first bytes of the answer as JSON.
OTHER_USER_REQUEST = """
import json, sys, urllib.request, urllib.error
method, url, body, headers = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
request = urllib.request.Request(url, data=body.encode() or None, method=method, headers=headers)
try:
    with urllib.request.urlopen(request, timeout=60) as response:
        status, text = response.status, response.read(4000).decode("utf-8", "replace")
except urllib.error.HTTPError as error:
    status, text = error.code, error.read(4000).decode("utf-8", "replace")
print(json.dumps({"status": status, "text": text}))
"""


def autoexecute_stream(workspace: Path, text: str) -> str:
    """A ``message/stream`` asking the server to run tools without asking anyone."""
    message = {
        "kind": "message",
        "role": "user",
        "messageId": "from-another-user",
        "parts": [{"kind": "text", "text": text}],
        "metadata": {
            "coderAgent": {
                "kind": "agent-settings",
                "workspacePath": str(workspace),
                "autoExecute": True,
            }
        },
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {"message": message}}
    )


def as_user(uid: int, method: str, url: str, body: str = "", **headers: str) -> dict[str, Any]:
    python = python_for_everyone()
    if python is None:
        pytest.skip("no Python 3.10+ that another user may run")
    result = subprocess.run(
        [python, "-c", OTHER_USER_REQUEST, method, url, body, json.dumps(headers)],
        user=uid,
        group=uid,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        cwd="/",
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def request(method: str, url: str, body: str = "", **headers: str) -> int:
    data = body.encode() or None
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data=data, method=method, headers=headers), timeout=60
        ) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as a second local user")
def test_another_local_user_gets_nothing_from_the_a2a_server_and_nothing_runs(
    agent_nvim: Nvim, fake: FakeGemini, workspace: Path
) -> None:
    nvim = agent_nvim
    fake.add(text_turn("The plugin's own prompt works."))
    nvim.api.command("GeminiAgent hello")
    wait_transcript(nvim, "The plugin's own prompt works.", START)
    state = wait_agent(nvim, "idle", lambda s: s["state"] == "idle")
    base = state["url"]
    port = int(base.rsplit(":", 1)[1])
    asked = len(fake.stream_requests())

    # Another user on the machine, as an attacker would: a stream that runs a shell
    # command without asking, with a foreign Host and Origin; then plainly.
    marker = workspace / "ran-for-nobody"
    fake.add(
        call_turn("run_shell_command", {"command": f"touch {marker}", "description": "x"}),
        text_turn("Done for you."),
    )
    foreign = {"Host": f"evil.example:{port}", "Origin": "http://evil.example"}
    plain = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    for headers in ({**plain, **foreign}, plain):
        answer = as_user(NOBODY, "POST", base + "/", autoexecute_stream(workspace, "go"), **headers)
        assert answer["status"] in (401, 403), answer
        assert "Done for you" not in answer["text"]
    for path in ("/tasks/metadata", "/.well-known/agent-card.json", "/listCommands"):
        answer = as_user(NOBODY, "GET", base + path)
        assert answer["status"] in (401, 403), (path, answer)
    assert not marker.exists()
    assert len(fake.stream_requests()) == asked  # the model never heard of it

    # Without the secret, the same user is refused too; with it, a foreign Host or
    # Origin (a web page rebinding a name to 127.0.0.1) still is.
    assert request("GET", base + "/tasks/metadata") == 401
    token = process_env(state["pid"])[TOKEN_VAR]
    bearer = {"Authorization": f"Bearer {token}"}
    assert request("GET", base + "/tasks/metadata", **bearer, Host=foreign["Host"]) == 403
    assert request("GET", base + "/tasks/metadata", **bearer, Origin=foreign["Origin"]) == 403
    assert request("GET", base + "/listCommands", Authorization="Bearer wrong") == 401
    assert request("GET", base + "/listCommands", **bearer) == 200

    # The plugin itself still talks to it: a confirmation round trip.
    fake.turns.clear()  # what the refused requests would have got
    fake.add(
        call_turn("run_shell_command", {"command": "true", "description": "noop"}),
        text_turn("Ran it."),
    )
    nvim.api.command("GeminiAgent run true")
    wait_agent(nvim, "the confirmation", lambda s: bool(s["pending"]))
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "Ran it.")


def test_the_servers_children_inherit_neither_the_secret_nor_the_preload(
    agent_nvim: Nvim, fake: FakeGemini, workspace: Path
) -> None:
    nvim = agent_nvim
    dump = workspace / "env.txt"
    fake.add(
        call_turn("run_shell_command", {"command": f"env > {dump}", "description": "env"}),
        text_turn("Dumped."),
    )
    nvim.api.command("GeminiAgent dump the environment")
    wait_agent(nvim, "the confirmation", lambda s: bool(s["pending"]), START)
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "Dumped.")
    wait_for(lambda: dump.exists() and dump.read_text(), 30, "the dump")
    text = dump.read_text()
    assert TOKEN_VAR not in text
    assert "loopback.cjs" not in text
