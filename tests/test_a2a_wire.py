"""The A2A client's bytes made valid text (agent/a2a/wire.py): only a lone
surrogate escape is replaced, never an escaped backslash or a surrogate pair."""

from __future__ import annotations

import json

from gemini_companion.agent.a2a.wire import clean_line


def test_a_lone_surrogate_escape_becomes_the_replacement_character() -> None:
    line, changed = clean_line(b'data: {"t": "a\\ud800b\\uDC00c"}\n')
    assert changed
    assert json.loads(line[6:]) == {"t": "a\ufffdb\ufffdc"}


def test_pairs_escaped_backslashes_and_valid_text_are_left_alone() -> None:
    for raw in (b'{"t": "\\ud83d\\ude00"}', b'{"t": "\\\\ud800"}', '{"t": "é \ufffd"}'.encode()):
        assert clean_line(raw) == (raw, False)


def test_bytes_that_are_not_utf8_become_the_replacement_character() -> None:
    line, changed = clean_line(b'{"t": "x\xff\xfey"}')
    assert changed and json.loads(line) == {"t": "x\ufffd\ufffdy"}
