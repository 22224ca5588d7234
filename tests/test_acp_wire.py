"""wire.py's reading of the agent's lines (issue 23 items 5 and 6): what a hostile
agent can put on a line, parsed as the transport parses it. The end-to-end view of
the same (the panel goes on, the next prompt works) is in test_agent_consent.py."""

from __future__ import annotations

import json

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
    from acp import schema
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
