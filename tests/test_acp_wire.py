"""wire.py's reading of the agent's lines (issue 23 items 5 and 6): what a hostile
agent can put on a line, parsed as the transport parses it. The end-to-end view of
the same (the panel goes on, the next prompt works) is in test_agent_consent.py."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from gemini_companion.agent.acp.wire import MAX_DEPTH, RefusedMessageError, parse_message


def test_a_well_formed_message_is_taken_as_it_is() -> None:
    line = b'{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{"path":"/a"}}'
    assert parse_message(line) == json.loads(line)


def test_lines_that_are_not_json_rpc_are_garbage_not_errors() -> None:
    assert parse_message(b"Loaded cached credentials.") is None
    assert parse_message(b'{"id": 1}') is None
    assert parse_message(b"[1, 2]") is None


def test_lone_surrogates_and_invalid_utf8_become_replacement_characters() -> None:
    line = b'{"jsonrpc":"2.0","method":"m","params":{"t":"a\\ud800b","\\udfff":["\\ud83d\\ude00"]}}'
    message = parse_message(line)
    assert message is not None
    assert message["params"] == {"t": "a\ufffdb", "\ufffd": ["\U0001f600"]}
    bad = b'{"jsonrpc":"2.0","method":"m","params":{"t":"x\xff\xfey"}}'
    assert parse_message(bad) == {
        "jsonrpc": "2.0",
        "method": "m",
        "params": {"t": "x\ufffd\ufffdy"},
    }


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 3000])
def test_deep_nesting_is_refused_with_the_envelope_when_it_can_be_read(depth: int) -> None:
    nested = "[" * depth + "]" * depth
    line = f'{{"jsonrpc":"2.0","id":7,"method":"m","params":{nested}}}'.encode()
    with pytest.raises(RefusedMessageError, match="nested more than") as info:
        parse_message(line)
    if depth < 900:  # parsed, then refused: the request can be answered
        assert info.value.envelope == {"id": 7, "method": "m"}


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":[1],"result":{}}',
        b'{"jsonrpc":"2.0","id":true,"result":{}}',
        b'{"jsonrpc":"2.0","result":{}}',
        b'{"jsonrpc":"2.0","id":1,"method":42}',
    ],
)
def test_envelopes_the_connection_would_choke_on_are_refused(line: bytes) -> None:
    with pytest.raises(RefusedMessageError):
        parse_message(line)


def test_paths_the_agent_names_in_tool_updates_are_shown_with_control_characters_escaped() -> None:
    from gemini_companion.agent.acp import messages as schema
    from gemini_companion.agent.acp.events import UpdateTranslator

    update = schema.ToolCallStart(
        session_update="tool_call",
        tool_call_id="t",
        title="Edit",
        kind="edit",
        status="pending",
        locations=[schema.ToolCallLocation(path="/w/x\nlua vim.g.pwned = 1", line=3)],
        content=[
            schema.FileEditToolCallContent(
                type="diff", path="/w/a\x1b[2Jb", old_text="a\n", new_text="b\n"
            )
        ],
    )
    [event] = UpdateTranslator().translate(update)
    call = event.call  # type: ignore[union-attr]
    assert call.locations == ("/w/x\\nlua vim.g.pwned = 1:3",)
    assert "a\\x1b[2Jb" in call.live_output and "\x1b" not in call.live_output


def test_an_update_right_after_a_request_or_an_answer_is_handled_after_what_they_start() -> None:
    """session/update takes the fast path past the ``acp`` package's tasks
    (ChildStdio's ``on_update``); an answer to a request of ours, or a request of
    the agent's, written just before it still sets its awaiting caller or its
    handler going first (the caller of ``session/new`` records the session the
    updates after it are for), and an update sent as a request goes the package's
    way."""
    from acp.connection import Connection
    from gemini_companion.agent.acp.wire import ChildStdio

    update = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}
    lines = [
        {"jsonrpc": "2.0", "id": 0, "result": {"sessionId": "s"}},
        {"jsonrpc": "2.0", "method": "session/update", "params": update},
        {"jsonrpc": "2.0", "id": 1, "method": "session/request_permission", "params": {}},
        {"jsonrpc": "2.0", "method": "session/update", "params": update},
        {"jsonrpc": "2.0", "id": 2, "method": "session/update", "params": update},
    ]
    # The agent answers once it has read the request.
    script = (
        "import sys; sys.stdin.readline(); sys.stdout.write(sys.argv[1]); sys.stdout.flush();"
        " sys.stdin.read()"
    )
    text = "".join(json.dumps(line) + "\n" for line in lines)

    async def main() -> list[str]:
        seen: list[str] = []
        answered = asyncio.Event()

        async def handler(method: str, params: Any, is_notification: bool) -> Any:
            seen.append(f"{method} (handler)")
            if method == "session/update":
                answered.set()
            return {}

        async def caller() -> None:
            await connection.send_request("session/new", {})
            seen.append("session/new answered")

        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            script,
            text,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        stdio = ChildStdio(process, lambda line: None, on_update=lambda p: seen.append("update"))
        connection = Connection(handler, stdio)
        try:
            await asyncio.wait_for(asyncio.gather(caller(), answered.wait()), 30)
        finally:
            await connection.close()
            process.kill()
            await process.wait()
        return seen

    assert asyncio.run(main()) == [
        "session/new answered",
        "update",
        "session/request_permission (handler)",
        "update",
        "session/update (handler)",
    ]


def test_updates_are_taken_in_the_pipes_read_in_order_around_an_answer() -> None:
    """A ``session/update`` is handled in the callback that reads the agent's pipe,
    with no task of its own (issue 25 item 3); an answer read between two updates
    still sets its caller going before the update after it is handled."""
    from acp.connection import Connection
    from gemini_companion.agent.acp.wire import ChildStdio

    update = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}
    lines = [
        {"jsonrpc": "2.0", "method": "session/update", "params": update},
        {"jsonrpc": "2.0", "id": 0, "result": {"sessionId": "s"}},
        {"jsonrpc": "2.0", "method": "session/update", "params": update},
    ]
    # Each line once the client says so (the first: once it has sent its request).
    script = (
        "import json, sys\n"
        "for line in json.loads(sys.argv[1]):\n"
        "    sys.stdin.readline(); sys.stdout.write(json.dumps(line) + '\\n'); sys.stdout.flush()\n"
        "sys.stdin.read()\n"
    )

    async def main() -> list[Any]:
        seen: list[Any] = []
        done = asyncio.Event()

        async def handler(method: str, params: Any, is_notification: bool) -> Any:
            seen.append(f"{method} (handler)")
            return {}

        def on_update(params: Any) -> None:
            seen.append(("update", asyncio.current_task() is None))
            assert process.stdin is not None
            process.stdin.write(b"next\n")
            if len(seen) == 3:
                done.set()

        async def caller() -> None:
            await connection.send_request("session/new", {})
            seen.append("session/new answered")
            assert process.stdin is not None
            process.stdin.write(b"next\n")

        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            script,
            json.dumps(lines),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        stdio = ChildStdio(process, lambda line: None, on_update=on_update)
        connection = Connection(handler, stdio)
        try:
            await asyncio.wait_for(asyncio.gather(caller(), done.wait()), 30)
        finally:
            await connection.close()
            process.kill()
            await process.wait()
        return seen

    assert asyncio.run(main()) == [("update", True), "session/new answered", ("update", True)]
