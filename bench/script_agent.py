"""A scripted ACP agent on stdio for the benches (bench/long_chat.py,
bench/hostile_lines.py): it plays turns written in a JSON file, over a real pipe,
at a set pace. Built on the agent side of the official ``agent-client-protocol``
package (as tests/agent_fakes/acp_agent.py).

Usage: python bench/script_agent.py SCRIPT.json

SCRIPT.json: ``{"turns": [[EVENT, ...], ...]}``, an EVENT one of
- ``["text", TEXT]``: an answer chunk; ``["thought", TEXT]``: a thought chunk;
- ``["tool", ID, TITLE, OUTPUT]``: a tool call started, then completed with OUTPUT;
- ``["pause", MS]``: wait.

The prompt ``turn N`` plays turn N; ``paced N SIZE MS`` plays turn N's text in
chunks of SIZE bytes, MS apart, each chunk preceded by ``<t=NANOSECONDS>``
(CLOCK_MONOTONIC, as Neovim's ``vim.uv.hrtime()``) when SIZE is over 200; anything
else is answered ``echo: <text>``. Every update is written on stdout at once, in
order (not through the SDK's sender task, whose own cost is not the panel's).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, run_agent, schema

# The tests' scripted agent writes updates the same way: one writer for both.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from agent_fakes.acp_agent import write_update


def chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


class ScriptAgent:
    def __init__(self, script: dict[str, Any]) -> None:
        self.turns: list[list[list[Any]]] = script["turns"]

    def on_connect(self, conn: Any) -> None:
        pass

    async def initialize(self, protocol_version: int, **kwargs: Any) -> schema.InitializeResponse:
        return schema.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(load_session=False),
            agent_info=schema.Implementation(name="bench-script-agent", version="0.0.1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> schema.NewSessionResponse:
        return schema.NewSessionResponse(session_id=str(uuid.uuid4()))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def play(self, session_id: str, events: list[list[Any]]) -> None:
        for event in events:
            kind = event[0]
            if kind == "text":
                write_update(session_id, chunk("agent_message_chunk", event[1]))
            elif kind == "thought":
                write_update(session_id, chunk("agent_thought_chunk", event[1]))
            elif kind == "tool":
                _, call_id, title, output = event
                start = {"toolCallId": call_id, "title": title, "kind": "read"}
                start.update(sessionUpdate="tool_call", status="in_progress")
                write_update(session_id, start)
                content = [{"type": "content", "content": {"type": "text", "text": output}}]
                write_update(
                    session_id,
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "status": "completed",
                        "content": content,
                    },
                )
            elif kind == "pause":
                await asyncio.sleep(event[1] / 1000)

    async def paced(self, session_id: str, events: list[list[Any]], size: int, ms: int) -> None:
        text = "".join(e[1] for e in events if e[0] == "text")
        for i in range(0, len(text), size):
            piece = text[i : i + size]
            if size > 200:
                piece = f"<t={time.monotonic_ns()}>" + piece
            write_update(session_id, chunk("agent_message_chunk", piece))
            if ms:
                await asyncio.sleep(ms / 1000)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> Any:
        words = " ".join(getattr(p, "text", "") for p in prompt).split()
        if words[:1] == ["turn"]:
            await self.play(session_id, self.turns[int(words[1])])
        elif words[:1] == ["paced"]:
            n, size, ms = (int(w) for w in words[1:4])
            await self.paced(session_id, self.turns[n], size, ms)
        else:
            write_update(session_id, chunk("agent_message_chunk", "echo: " + " ".join(words)))
        return schema.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        loaded = json.load(f)
    asyncio.run(run_agent(ScriptAgent(loaded)))  # type: ignore[arg-type]
