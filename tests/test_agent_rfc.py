"""The A2A transport against an RFC-conformant agent (tests/agent_fakes/rfc_agent.py,
a2a-sdk's server side) over real HTTP: the RFC's encoding read and answered, the
card's extension version checked."""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any

import pytest
from agent_fakes.rfc_agent import rfc_agent
from gemini_companion.agent import devtool
from gemini_companion.agent.a2a import A2ATransport
from gemini_companion.agent.model import (
    AgentEvent,
    MessageChunk,
    Prompt,
    SessionUpdate,
    ThoughtChunk,
    ToolCallUpdate,
)
from gemini_companion.agent.transport import TransportContext, TransportError


class Sink:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def emit(self, event: AgentEvent) -> None:
        self.events.append(event)

    def calls(self, call_id: str) -> list[str]:
        return [
            e.call.status
            for e in self.events
            if isinstance(e, ToolCallUpdate) and e.call.id == call_id
        ]

    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, MessageChunk))

    def session(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for e in self.events:
            if isinstance(e, SessionUpdate):
                out.update(e.values)
        return out


class Editor:
    def agent_draw(self, ops: list[dict[str, Any]]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(None)
        return future


def transport(url: str, workspace: Path) -> A2ATransport:
    context = TransportContext(
        workspace=str(workspace),
        env={},
        editor=Editor(),
        options={"url": url},  # type: ignore[arg-type]
    )
    return A2ATransport(context)


def test_text_thought_and_a_confirmed_tool_call_in_the_rfc_encoding(tmp_path: Path) -> None:
    async def main() -> None:
        with rfc_agent() as (url, agent):
            t, sink = transport(url, tmp_path), Sink()
            await t.start(sink)
            try:
                assert t.dialect == devtool.RFC
                await t.prompt(Prompt("hello"))
                assert "RFC hello" in sink.text()
                thoughts = [e for e in sink.events if isinstance(e, ThoughtChunk)]
                assert thoughts == [ThoughtChunk("what to say", "Considering")]
                assert agent.settings == [{"workspace_path": str(tmp_path)}]
                assert sink.session()["dialect"] == "rfc"

                await t.prompt(Prompt("now shell"))
                pending = [
                    e.call
                    for e in sink.events
                    if isinstance(e, ToolCallUpdate) and e.call.id == "sh-1"
                ]
                conf = pending[0].confirmation
                assert conf is not None and conf.kind == "exec"
                assert [o.id for o in conf.options] == ["proceed_once", "proceed_always", "cancel"]
                assert agent.confirmations == []  # nothing answered without the user
                await t.answer("sh-1", "proceed_once", None)
                assert agent.confirmations == [
                    {"tool_call_id": "sh-1", "selected_option_id": "proceed_once"}
                ]
                assert sink.calls("sh-1") == ["pending", "executing", "succeeded"]
                assert "After the tool." in sink.text()
            finally:
                await t.stop()

    asyncio.run(main())


def test_an_edit_answer_carries_the_users_content_and_it_lands(tmp_path: Path) -> None:
    async def main() -> None:
        target = tmp_path / "file.txt"
        with rfc_agent() as (url, agent):
            t, sink = transport(url, tmp_path), Sink()
            await t.start(sink)
            try:
                await t.prompt(Prompt(f"please edit {target}"))
                call = next(
                    e.call for e in sink.events if isinstance(e, ToolCallUpdate) and e.call.id
                )
                assert call.confirmation is not None
                assert (call.confirmation.kind, call.confirmation.file_path) == (
                    "edit",
                    str(target),
                )
                await t.answer(call.id, "proceed_once", "the user's version\n")
                assert agent.confirmations[-1]["file_details"] == {
                    "new_content": "the user's version\n"
                }
                assert target.read_text() == "the user's version\n"
            finally:
                await t.stop()

    asyncio.run(main())


def test_a_card_with_extension_v1_is_refused(tmp_path: Path) -> None:
    async def main() -> None:
        with rfc_agent(devtool.EXTENSION_URI.replace("/v0/", "/v1/")) as (url, _):
            t = transport(url, tmp_path)
            with pytest.raises(TransportError, match=r"incompatible agent: .*version 1"):
                await t.start(Sink())

    asyncio.run(main())
