"""`:checkhealth gemini_companion` on the agent panel over A2A (issue 11, item 2):
the server command found and its version, credentials, the agent reached and the
development-tool extension's version; against the real server 0.25.2 (coderAgent
dialect, no extension declared) and the RFC fake (extension version 0)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from agent_fakes.rfc_agent import rfc_agent
from agent_setup import SERVER_BIN, START, a2a_setup, wait_agent, wait_transcript
from fake_gemini import fake_gemini, text_turn
from harness import Nvim, wait_for


def checkhealth(nvim: Nvim) -> str:
    nvim.api.command("checkhealth gemini_companion")
    report = "\n".join(nvim.api.current.buffer[:])
    nvim.api.command("bwipeout")
    return report


def agent_section(report: str) -> str:
    return report.split("agent panel", 1)[1]


@pytest.mark.skipif(not SERVER_BIN.exists(), reason="scripts/setup installs the A2A server (npm)")
def test_checkhealth_reports_the_real_a2a_server_and_the_agent_reached(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with fake_gemini() as fake:
        nvim = nvim_factory(cwd=work, setup=a2a_setup(fake, tmp_path / "home"))
        nvim.wait_running()
        report = agent_section(checkhealth(nvim))
        assert "protocol: a2a" in report
        assert f"A2A server 0.25.2 ({SERVER_BIN.resolve()})" in report or (
            f"A2A server 0.25.2 ({SERVER_BIN})" in report
        )
        assert "credentials for the A2A server are set" in report
        assert "gets Neovim's tools (MCP server nvim)" in report
        assert "the agent is not connected" in report

        fake.add(text_turn("Hi."))
        nvim.api.command("GeminiAgent hi")
        wait_transcript(nvim, "Hi.", START)
        url = wait_agent(nvim, "idle", lambda s: s["state"] == "idle")["url"]
        report = agent_section(checkhealth(nvim))
        assert f"at {url} (coder-agent dialect, no development-tool extension declared" in report
        assert "reached" in report


def test_checkhealth_reports_the_rfc_agents_extension_version(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    with rfc_agent() as (url, _agent):
        nvim = nvim_factory(cwd=tmp_path, setup={"agent": {"protocol": "a2a", "a2a": {"url": url}}})
        nvim.wait_running()
        report = agent_section(checkhealth(nvim))
        assert f"connects to the A2A agent at {url} (it does not get Neovim's tools)" in report
        nvim.api.command("GeminiAgent")
        wait_for(
            lambda: nvim.lua("return require('gemini_companion.agent').state().state") == "idle",
            30,
            "the RFC agent reached",
        )
        report = agent_section(checkhealth(nvim))
        assert "(rfc dialect, development-tool extension version 0: " in report
