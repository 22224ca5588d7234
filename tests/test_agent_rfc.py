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
from gemini_companion.agent.a2a import devtool
from gemini_companion.agent.a2a.transport import A2ATransport
from gemini_companion.agent.model import (
    AgentEvent,
    CommandsUpdate,
    MessageChunk,
    Notice,
    Prompt,
    SessionUpdate,
    ThoughtChunk,
    ToolCallUpdate,
    TurnEnd,
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


def test_slash_commands_come_from_commands_get_and_run_with_command_execute(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        with rfc_agent() as (url, agent):
            t, sink = transport(url, tmp_path), Sink()
            await t.start(sink)
            try:
                assert agent.extension_calls[0] == ("commands/get", {})
                listed = [e for e in sink.events if isinstance(e, CommandsUpdate)][-1].commands
                names = [n for c in listed for n in c.names()]
                assert names == ["memory", "memory show", "memory add", "restore"]

                await t.prompt(Prompt("hello"))
                conversation = (t.task_id, t.context_id)
                await t.run_command("memory add", "tabs are wide")
                assert agent.extension_calls[-1] == (
                    "command/execute",
                    {"command_path": ["memory", "add"], "args": "tabs are wide"},
                )
                assert sink.text().endswith("Remembered: tabs are wide")
                await t.run_command("memory show", "")
                assert sink.text().endswith("Memory:\n- tabs are wide")
                # The command ran as a task of its own; prompts go on with the conversation.
                assert (t.task_id, t.context_id) == conversation

                # A command's confirmation is answered on the command's task.
                await t.run_command("restore", "v1")
                call = [e.call for e in sink.events if isinstance(e, ToolCallUpdate)][-1]
                assert call.id == "restore-1" and call.confirmation is not None
                assert call.confirmation.command == "git checkout v1"
                assert agent.confirmations == []
                await t.answer("restore-1", "proceed_once", None)
                assert sink.calls("restore-1") == ["pending", "executing", "succeeded"]
                assert (t.task_id, t.context_id) == conversation

                with pytest.raises(TransportError, match=r"/nope: unknown command /nope"):
                    await t.run_command("nope", "")
            finally:
                await t.stop()

    asyncio.run(main())


@pytest.mark.parametrize("how", ["pending", "asking", "ended", "working"])
def test_a_dropped_stream_is_followed_again_without_duplicates(tmp_path: Path, how: str) -> None:
    """The fake cuts the SSE connection mid-task; the task goes on. The transport
    resubscribes (and reads the task with tasks/get): what the break cost is shown
    once, a pending confirmation is still answerable, an ended task shows its end."""

    async def main() -> None:
        with rfc_agent() as (url, agent):
            t, sink = transport(url, tmp_path), Sink()
            await t.start(sink)
            try:
                await t.prompt(Prompt(f"drop {how}"))
                assert agent.drops == 1
                notices = [e.text for e in sink.events if isinstance(e, Notice)]
                assert "dropped while task" in notices[0]
                assert agent.subscriptions == [t.task_id]  # tasks/resubscribe was asked
                text = sink.text()
                if how == "asking":  # read back from the task's history, by its shape
                    thoughts = [e for e in sink.events if isinstance(e, ThoughtChunk)]
                    assert thoughts == [ThoughtChunk("run the tests", "Planning")]
                if how in ("pending", "asking"):
                    assert notices[-1].endswith("it is input-required.")
                    assert sink.calls("sh-drop") == ["pending"]  # restored once, still waiting
                    assert agent.confirmations == []
                    await t.answer("sh-drop", "proceed_once", None)
                    assert sink.calls("sh-drop") == ["pending", "executing", "succeeded"]
                    assert sink.text().endswith("After the tool.")
                    assert t.state == "completed"
                else:
                    after = "While you were away." if how == "ended" else "After the drop."
                    assert text == "Before the drop." + after  # nothing lost, nothing twice
                    assert notices[-1].endswith("it is completed.")
                    assert [e for e in sink.events if isinstance(e, TurnEnd)][-1].reason == (
                        "completed"
                    )
            finally:
                await t.stop()

    asyncio.run(main())


def test_mcp_and_info_confirmations_in_the_rfc_encoding(tmp_path: Path) -> None:
    async def main() -> None:
        with rfc_agent() as (url, agent):
            t, sink = transport(url, tmp_path), Sink()
            await t.start(sink)
            try:
                await t.prompt(Prompt("several"))
                calls = {e.call.id: e.call for e in sink.events if isinstance(e, ToolCallUpdate)}
                mcp, info = calls["mcp-1"].confirmation, calls["info-1"].confirmation
                assert mcp is not None and info is not None
                assert (mcp.kind, mcp.server, mcp.tool) == ("mcp", "nvim", "getDiagnostics")
                assert [o.id for o in mcp.options] == [
                    "proceed_always_server",
                    "proceed_always_tool",
                    "proceed_once",
                    "cancel",
                ]
                assert info.kind == "info"
                assert info.description == "Fetch https://example.com/docs and summarise it"
                await t.answer("mcp-1", "proceed_always_tool", None)
                assert agent.confirmations == [
                    {"tool_call_id": "mcp-1", "selected_option_id": "proceed_always_tool"}
                ]
                assert t.state == "input-required"  # two still wait
            finally:
                await t.stop()

    asyncio.run(main())
