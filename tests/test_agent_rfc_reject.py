"""A2A (RFC encoding) side of issue 21 item 4: a rejection with no reject option
offered never selects an option; the task is cancelled instead. Against the RFC
agent of tests/agent_fakes/rfc_agent.py (a2a-sdk server, real HTTP)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_fakes.rfc_agent import rfc_agent
from gemini_companion.agent.model import Prompt
from test_agent_rfc import Sink, transport


def test_a_rejection_without_a_reject_option_cancels_the_task_and_selects_nothing(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        with rfc_agent() as (url, agent):
            t, sink = transport(url, tmp_path), Sink()
            await t.start(sink)
            try:
                await t.prompt(Prompt("several"))
                await t.answer("info-1", None, None)
                assert agent.confirmations == []
                assert agent.cancels == [t.task_id]
            finally:
                await t.stop()

    asyncio.run(main())
