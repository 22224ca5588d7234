"""The agent panel's protocol-neutral core (agent/session.py, view.py, render.py),
driven by the scripted transport, without Neovim: what the panel is told to draw
and what reaches the agent."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from pathlib import Path
from typing import Any

import pytest
from agent_fakes.scripted_transport import ScriptedTransport
from gemini_companion.agent import render
from gemini_companion.agent.model import Confirmation, Option, ToolCall
from gemini_companion.agent.session import AgentSession
from gemini_companion.agent.transport import TransportContext
from gemini_companion.agent.view import CUT, MAX_LINE, PanelView
from harness import json_lines


class FakeEditor:
    """Records the batches the view sends; ``hold`` keeps them 'being drawn'."""

    def __init__(self) -> None:
        self.batches: list[list[dict[str, Any]]] = []
        self.held: list[concurrent.futures.Future[Any]] = []
        self.hold = False
        self.messages: list[str] = []

    def publish_state(self, state: Any) -> None:
        pass

    def notify(self, message: str, level: int = 2) -> None:
        self.messages.append(message)

    def agent_draw(self, ops: list[dict[str, Any]]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.batches.append(list(ops))
        if self.hold:
            self.held.append(future)
        else:
            future.set_result(None)
        return future

    def release(self) -> None:
        held, self.held = self.held, []
        for f in held:
            f.set_result(None)

    def ops(self) -> list[dict[str, Any]]:
        return [op for batch in self.batches for op in batch]

    def text(self) -> str:
        """The transcript as the ops build it (blocks replaced, appends joined)."""
        blocks: dict[int, list[str]] = {}
        for op in self.ops():
            if op["op"] == "block":
                blocks[op["id"]] = list(op["lines"])
            elif op["op"] == "append":
                lines = blocks.setdefault(op["id"], ["", ""])
                pieces = op["text"].split("\n")
                lines[-1] += pieces[0]
                lines.extend(op["prefix"] + p for p in pieces[1:])
        return "\n".join(line for _, lines in sorted(blocks.items()) for line in lines)

    def states(self) -> list[dict[str, Any]]:
        return [op["state"] for op in self.ops() if op["op"] == "state"]


class Recorder:
    def __init__(self) -> None:
        self.opened: list[tuple[str, str, str]] = []
        self.closed: list[str] = []

    async def open(self, call_id: str, file_path: str, new_content: str) -> None:
        self.opened.append((call_id, file_path, new_content))

    def close(self, call_id: str) -> None:
        self.closed.append(call_id)

    def expect(self, call_id: str, file_path: str, new_content: str) -> None:
        pass

    async def settle(self, call_id: str, accepted: bool, content: str | None) -> bool:
        return False

    def turn_ended(self) -> None:
        pass


@pytest.fixture
def log_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "transport.jsonl"
    monkeypatch.setenv("SCRIPTED_TRANSPORT_LOG", str(path))
    return path


def received(path: Path) -> list[dict[str, Any]]:
    return json_lines(path)


def make(tmp_path: Path) -> tuple[AgentSession, FakeEditor, Recorder]:
    editor = FakeEditor()
    context = TransportContext(workspace=str(tmp_path), env={}, editor=editor)
    review = Recorder()
    session = AgentSession(ScriptedTransport(context), PanelView(editor), review)
    return session, editor, review


async def settle(session: AgentSession) -> None:
    for _ in range(20):
        await asyncio.sleep(0)
    await session.view.drained()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_prompt_streams_its_answer_into_one_message_block(tmp_path: Path, log_file: Path) -> None:
    async def main() -> None:
        session, editor, _ = make(tmp_path)
        session.request("prompt", {"text": "hi there"})
        await settle(session)
        assert "▍ You\nhi there\n\n▍ Gemini\n\nHello, world" in editor.text()
        assert session.state()["state"] == "idle"
        assert session.state()["commands"] == ["memory", "memory add", "memory show", "about"]
        assert [r["call"] for r in received(log_file)] == ["start", "prompt"]

    run(main())


def test_a_tool_call_is_one_block_updated_in_place_and_waits_for_the_user(
    tmp_path: Path, log_file: Path
) -> None:
    async def main() -> None:
        session, editor, _ = make(tmp_path)
        session.request("prompt", {"text": "shell"})
        await settle(session)
        state = session.state()
        assert state["state"] == "waiting"
        assert state["pending"] == [
            {
                "id": "call-1",
                "kind": "exec",
                "title": "Run ls -la",
                "options": [
                    {"id": "proceed_once", "name": "Allow once", "kind": "allow_once"},
                    {"id": "proceed_always", "name": "Allow always", "kind": "allow_always"},
                    {"id": "cancel", "name": "Reject", "kind": "reject_once"},
                ],
                "command": "ls -la",
                "directory": "/w",
            }
        ]
        assert "? Waiting for you: Run ls -la" in editor.text()
        # Nothing was answered on the user's behalf.
        assert [r["call"] for r in received(log_file)] == ["start", "prompt"]
        session.request("answer", {})
        await settle(session)
        assert received(log_file)[-1] == {
            "call": "answer",
            "call_id": "call-1",
            "option": "proceed_once",
            "new_content": None,
        }
        text = editor.text()
        assert text.count("[tool] run_shell_command") == 1
        assert "[tool] run_shell_command: ls -la (done)" in text
        assert "After the tool." in text
        assert session.state()["state"] == "idle"
        assert session.state()["pending"] == []

    run(main())


def test_pending_confirmations_queue_and_are_answered_oldest_first(
    tmp_path: Path, log_file: Path
) -> None:
    async def main() -> None:
        session, editor, _ = make(tmp_path)
        session.request("prompt", {"text": "two"})
        await settle(session)
        assert [p["id"] for p in session.state()["pending"]] == ["call-1", "call-2"]
        assert editor.text().count("Waiting for you") == 2
        session.request("reject", {})
        await settle(session)
        assert received(log_file)[-1]["call_id"] == "call-1"
        assert received(log_file)[-1]["option"] == "cancel"
        assert [p["id"] for p in session.state()["pending"]] == ["call-2"]
        session.request("answer", {"option": "nonsense"})
        await settle(session)
        assert any("choose one of proceed_once" in m for m in editor.messages) or any(
            "choose one of" in op.get("text", "") for op in editor.ops()
        )
        session.request("answer", {"option": "proceed_always"})
        await settle(session)
        assert received(log_file)[-1]["option"] == "proceed_always"
        assert session.state()["state"] == "idle"

    run(main())


def test_an_edit_opens_the_review_and_its_answer_carries_the_users_text(
    tmp_path: Path, log_file: Path
) -> None:
    async def main() -> None:
        session, _, review = make(tmp_path)
        session.request("prompt", {"text": "edit"})
        await settle(session)
        path = str(tmp_path / "edited.txt")
        assert review.opened == [("edit-1", path, "proposed\n")]
        await session.edit_answered("edit-1", True, "user's version\n")
        await settle(session)
        assert received(log_file)[-1] == {
            "call": "answer",
            "call_id": "edit-1",
            "option": "proceed_once",
            "new_content": "user's version\n",
        }

    run(main())


def test_an_edit_accepted_unchanged_sends_no_modified_content(
    tmp_path: Path, log_file: Path
) -> None:
    async def main() -> None:
        session, _, _ = make(tmp_path)
        session.request("prompt", {"text": "edit"})
        await settle(session)
        await session.edit_answered("edit-1", True, "proposed\n")
        await settle(session)
        assert received(log_file)[-1]["new_content"] is None
        assert received(log_file)[-1]["option"] == "proceed_once"

    run(main())


def test_an_edit_answered_in_the_panel_closes_its_diff(tmp_path: Path, log_file: Path) -> None:
    async def main() -> None:
        session, _, review = make(tmp_path)
        session.request("prompt", {"text": "edit"})
        await settle(session)
        session.request("reject", {})
        await settle(session)
        assert review.closed == ["edit-1"]
        assert received(log_file)[-1]["option"] == "cancel"

    run(main())


def test_a_prompt_while_busy_is_refused_and_cancel_frees_the_agent(
    tmp_path: Path, log_file: Path
) -> None:
    async def main() -> None:
        session, editor, _ = make(tmp_path)
        session.request("prompt", {"text": "slow"})
        await settle(session)
        assert session.state()["state"] == "working"
        session.request("prompt", {"text": "second"})
        await settle(session)
        assert any("busy" in m for m in editor.messages) or any(
            "busy" in op.get("text", "") for op in editor.ops()
        )
        assert [r.get("text") for r in received(log_file) if r["call"] == "prompt"] == ["slow"]
        session.request("cancel", {})
        await settle(session)
        assert session.state()["state"] == "idle"
        session.request("prompt", {"text": "again"})
        await settle(session)
        assert editor.text().endswith("Hello, world")

    run(main())


def test_thoughts_have_their_subject_on_the_first_line(tmp_path: Path, log_file: Path) -> None:
    async def main() -> None:
        session, editor, _ = make(tmp_path)
        session.request("prompt", {"text": "think"})
        await settle(session)
        assert "┆ Thought: Planning\n┆ Reading the files\n┆ then more\n\nThought done." in (
            editor.text()
        )

    run(main())


def test_chunks_arriving_while_a_batch_is_drawn_join_the_next_one(
    tmp_path: Path, log_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What is pushed while a batch is in flight, not within a frame of the last
    # (test_agent_acp_stream.py has the frame): batches go as soon as they may.
    monkeypatch.setattr("gemini_companion.agent.view.FRAME", 0.0)

    async def main() -> None:
        session, editor, _ = make(tmp_path)
        session.request("prompt", {"text": "warm up"})
        await settle(session)
        before = len(editor.batches)
        editor.hold = True
        session.request("prompt", {"text": "stream 100000"})
        for _ in range(5000):
            await asyncio.sleep(0)
            if editor.held and len(received(log_file)) >= 3:
                break
        # Everything streamed while the first batch was "being drawn" waits, then
        # goes as one batch with one append.
        for _ in range(2000):
            await asyncio.sleep(0)
        assert len(editor.batches) == before + 1
        editor.hold = False
        editor.release()
        await settle(session)
        later = editor.batches[before + 1 :]
        assert len(later) <= 2
        appends = [op for batch in later for op in batch if op["op"] == "append"]
        assert len(appends) == 1
        assert editor.text().count("x" * 99) == 100000 // 100

    run(main())


def test_a_start_failure_is_shown_and_the_next_prompt_tries_again(
    tmp_path: Path, log_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> None:
        session, editor, _ = make(tmp_path)
        monkeypatch.setenv("SCRIPTED_TRANSPORT_FAIL", "1")
        # The panel opens (connect) and sends its first prompt at once: both wait for
        # the one start, and its failure is shown once.
        session.request("connect", {})
        session.request("prompt", {"text": "hi"})
        await settle(session)
        assert session.state()["state"] == "error"
        assert editor.text().count("[Error] scripted start failure") == 1, editor.text()
        monkeypatch.delenv("SCRIPTED_TRANSPORT_FAIL")
        session.request("prompt", {"text": "hi"})
        await settle(session)
        assert editor.text().endswith("Hello, world")

    run(main())


def test_bad_requests_get_a_clear_message(tmp_path: Path, log_file: Path) -> None:
    async def main() -> None:
        session, editor, _ = make(tmp_path)
        session.request("prompt", {"text": 3})
        session.request("answer", {})
        await settle(session)
        texts = editor.messages + [op.get("text", "") for op in editor.ops()]
        assert any("'text' must be a string" in t for t in texts)
        assert any("nothing is waiting for an answer" in t for t in texts)

    run(main())


def test_default_options_follow_their_kind_not_their_id() -> None:
    conf = Confirmation(
        "exec",
        "t",
        (
            Option("yes", "Yes", "allow_always"),
            Option("once", "Once", "allow_once"),
            Option("no", "No", "reject_once"),
        ),
    )
    assert conf.option(None) == Option("once", "Once", "allow_once")
    assert conf.option(None, reject=True) == Option("no", "No", "reject_once")
    assert conf.option("allow_always") == Option("yes", "Yes", "allow_always")
    assert conf.option("missing") is None


def test_long_tool_output_is_cut_to_its_last_lines() -> None:
    output = "\n".join(f"line {i}" for i in range(1000))
    lines = render.tool_lines(ToolCall("c", "shell", "executing", live_output=output))
    assert lines[-1] == "  │ line 999"
    assert f"  │ … {1000 - render.MAX_OUTPUT_LINES} earlier lines" in lines
    assert len(lines) < render.MAX_OUTPUT_LINES + 5


class ThreadedEditor:
    """Draws each batch on a thread of its own, as pynvim's loop answers them (the
    view's callbacks run there), one when the test says ``draw``."""

    def __init__(self) -> None:
        self.batches: list[list[dict[str, Any]]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.threads: list[str] = []
        self.sent = threading.Semaphore(0)
        self._go = threading.Semaphore(0)
        self._queue: queue.Queue[concurrent.futures.Future[Any] | None] = queue.Queue()
        self._worker = threading.Thread(target=self._draw, daemon=True, name="drawer")
        self._worker.start()

    def agent_draw(self, ops: list[dict[str, Any]]) -> concurrent.futures.Future[Any]:
        self.threads.append(threading.current_thread().name)
        self.batches.append([dict(op) for op in ops])
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put(future)
        self.sent.release()
        return future

    def draw(self) -> None:
        self._go.release()

    def _draw(self) -> None:
        while (future := self._queue.get()) is not None:
            self._go.acquire()
            self.in_flight -= 1
            future.set_result(None)

    def stop(self) -> None:
        self._queue.put(None)
        self._go.release()
        self._worker.join()


def test_a_stream_drawn_on_another_thread_goes_one_batch_at_a_time_in_order() -> None:
    """The answer to a batch comes on another thread (pynvim's) and hops to the
    session's loop, which sends the next (view.py: its state is the loop's only):
    one batch in flight, nothing lost or reordered, and drained() returns once the
    last one is drawn."""

    async def main() -> None:
        editor = ThreadedEditor()
        view = PanelView(editor)  # type: ignore[arg-type]
        built: list[str] = []

        def state() -> dict[str, Any]:
            built.append(threading.current_thread().name)
            return {"state": "working"}

        try:
            view.block(1, ["", ""], "message")
            n = 0
            for batch in range(20):
                for _ in range(50):
                    view.append(1, f"{n},")
                    n += 1
                if batch % 5 == 4:
                    view.state(state)
                if batch == 0:
                    await asyncio.to_thread(editor.sent.acquire)  # the first batch goes
                    continue
                editor.draw()  # the batch in flight is drawn: the next one goes
                assert await asyncio.to_thread(editor.sent.acquire, timeout=30)
            editor.draw()
            drained = asyncio.ensure_future(view.drained())
            await asyncio.wait_for(drained, 30)
        finally:
            editor.stop()
        ops = [op for batch in editor.batches for op in batch]
        text = "".join(op["text"] for op in ops if op["op"] == "append")
        assert text == "".join(f"{i}," for i in range(n))
        assert ops[0]["op"] == "block"
        assert len(editor.batches) == 20
        assert editor.most_in_flight == 1
        # Every batch, and the state, went from the loop: never from the drawer.
        assert [op["op"] for op in editor.batches[1]] == ["append"]
        assert [op["op"] for op in editor.batches[-1]] == ["append", "state"]
        assert set(editor.threads) == {"MainThread"}
        assert len(built) == 4 and "drawer" not in built

    run(main())


@pytest.mark.parametrize("prefix", ["", render.THOUGHT])
def test_a_line_grown_by_chunks_with_newlines_is_cut_at_the_limit_counting_its_prefix(
    prefix: str,
) -> None:
    """view.py counts each transcript line's length across chunks without a loop over
    their lines: a line that a later chunk makes too long is still cut where it
    passes :data:`MAX_LINE`, the prefix of a new line counted in it."""

    async def main() -> None:
        editor = FakeEditor()
        view = PanelView(editor)  # type: ignore[arg-type]
        view.block(1, ["", prefix], "thought" if prefix else "message")
        room = MAX_LINE - len(prefix)
        for chunk in [
            "x" * 6000,
            "x" * 3000 + "\n" + "y" * (room - 1000),
            "y" * 2000 + "\n" + "z" * (room - 10),
            "z" * 10 + "\nw",
            "\n" + "v" * room,
        ]:
            view.append(1, chunk, prefix)
            await asyncio.sleep(0)
        await view.drained()
        lines = editor.text().split("\n")
        assert lines[1:] == [
            prefix + "x" * 9000,
            prefix + "y" * room + CUT,
            prefix + "z" * room,
            prefix + "w",
            prefix + "v" * room,
        ]

    run(main())
