"""Where prompts go when ``agent.a2a.url`` is set: to that agent, whatever address
its card names (an RFC agent, tests/agent_fakes/rfc_agent.py, over real HTTP)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_fakes.rfc_agent import rfc_agent
from gemini_companion.agent.model import Notice, Prompt
from test_agent_rfc import Sink, transport


def test_a_card_naming_another_address_does_not_get_the_prompt(tmp_path: Path) -> None:
    async def main() -> None:
        # Another agent, on another loopback address.
        with (
            rfc_agent(host="127.0.0.2") as (decoy_url, decoy),
            rfc_agent(card_url=decoy_url + "/") as (url, configured),
        ):
            t, sink = transport(url, tmp_path), Sink()
            await t.start(sink)
            try:
                await t.prompt(Prompt("hello"))
                assert "RFC hello" in sink.text()
            finally:
                await t.stop()
        assert configured.settings == [{"workspace_path": str(tmp_path)}]
        assert decoy.settings == [] and decoy.extension_calls == []
        told = [e.text for e in sink.events if isinstance(e, Notice)]
        assert any(decoy_url in text and "agent.a2a.url" in text for text in told), told

    asyncio.run(main())


def test_a_card_naming_another_path_of_the_same_origin_is_followed(tmp_path: Path) -> None:
    async def main() -> None:
        # JSON-RPC only at /rpc/: a prompt reaches the agent only through the card's URL.
        with rfc_agent(rpc_path="/rpc/") as (url, agent):
            t, sink = transport(url, tmp_path), Sink()
            await t.start(sink)
            try:
                await t.prompt(Prompt("hello"))
            finally:
                await t.stop()
        assert "RFC hello" in sink.text()
        assert agent.settings == [{"workspace_path": str(tmp_path)}]
        assert ("commands/get", {}) in agent.extension_calls
        assert not [e for e in sink.events if isinstance(e, Notice)]

    asyncio.run(main())
