"""The scripted ACP agent (acp_agent.py) with ``loadSession``, for the history's
tests: each session's conversation is kept in a file of the folder given as
``--store DIR`` (``DIR/<session id>.json``: a list of ``[role, text]``), so a
session made by one agent process loads in another (a restart of Neovim).
``session/load`` replays the conversation as ``user_message_chunk`` and
``agent_message_chunk`` updates; an id with no file there is answered with the
JSON-RPC error ``Invalid session identifier`` (what Gemini CLI 0.61.0 answers
for a conversation it lost). A prompt is answered ``echo: <text>``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent, schema
from acp.helpers import text_block, update_agent_message, update_user_message

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from acp_agent import FakeAgent

STORE = Path(sys.argv[sys.argv.index("--store") + 1])


def _file(session_id: str) -> Path:
    return STORE / f"{session_id}.json"


class HistoryAgent(FakeAgent):
    async def initialize(self, protocol_version: int, **kwargs: Any) -> schema.InitializeResponse:
        return schema.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(load_session=True),
            agent_info=schema.Implementation(name="fake-history-agent", version="0.0.1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> schema.NewSessionResponse:
        response = await super().new_session(cwd, **kwargs)
        _file(response.session_id).write_text("[]")
        return response

    async def load_session(
        self, cwd: str, session_id: str, **kwargs: Any
    ) -> schema.LoadSessionResponse:
        try:
            turns = json.loads(_file(session_id).read_text())
        except FileNotFoundError:
            raise RequestError(-32603, "Invalid session identifier") from None
        for role, text in turns:
            update = update_user_message if role == "user" else update_agent_message
            await self._client.session_update(session_id, update(text_block(text)))
        return schema.LoadSessionResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> Any:
        words = " ".join(getattr(p, "text", "") for p in prompt)
        answer = "echo: " + " ".join(words.split())
        turns = json.loads(_file(session_id).read_text())
        _file(session_id).write_text(json.dumps([*turns, ["user", words], ["agent", answer]]))
        await self._say(session_id, answer)
        return schema.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(HistoryAgent()))  # type: ignore[arg-type]
