"""What the plugin's Python host loads at rest, and what only the agent panel loads
(issue 25 item 4: the host's memory at rest).

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

import httpx2
from harness import Nvim, wait_for
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

# The SDK's client side (an HTTP client, a TLS and cryptography stack) and the agent
# panel's protocol packages.
WATCHED = ("httpx2", "cryptography", "acp", "a2a")
FAKE_AGENT = Path(__file__).parent / "agent_fakes" / "acp_agent.py"


def _watching(tmp_path: Path) -> tuple[dict[str, str], Path]:
    marks = Path(tempfile.mkdtemp(dir=tmp_path))
    folders = []
    for name in WATCHED:
        folder = Path(tempfile.mkdtemp(dir=tmp_path))
        (folder / f"{name}.py").write_text(MARK_MODULE)
        folders.append(str(folder))
    return {"PYTHONPATH": ":".join(folders), "GEMINI_TEST_MARKS": str(marks)}, marks


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
    state = nvim.wait_running()
    # A client's whole session: the server stack is loaded and has served.
    url = f"http://127.0.0.1:{state['port']}/mcp"
    with httpx2.Client(timeout=30) as http:
        headers = open_raw_session(http, url, nvim.token())
        listed = http.post(
            url,
            content=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            headers=headers,
        )
        assert "openDiff" in listed.text
    assert sorted(p.name for p in marks.iterdir()) == []
    # The stand-ins do watch the host: the panel's first use loads its protocol.
    nvim.api.command("GeminiAgent hello")
    wait_for(
        lambda: (
            "echo: hello"
            in "\n".join(nvim.lua("return require('gemini_companion.agent').transcript()"))
        ),
        60,
        "the fake agent's answer",
    )
    assert "acp" in {p.name for p in marks.iterdir()}
    assert "a2a" not in {p.name for p in marks.iterdir()}
