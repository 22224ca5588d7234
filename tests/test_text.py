"""The text <-> buffer-lines conversion behind the diff view, without Neovim."""

from __future__ import annotations

import pytest
from gemini_companion.text import DOS, UNIX, InvalidTextError, check_text, from_buffer, to_buffer
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("text", "lines", "eol", "fileformat"),
    [
        ("", [""], False, UNIX),
        ("\n", [""], True, UNIX),
        ("a", ["a"], False, UNIX),
        ("a\n", ["a"], True, UNIX),
        ("a\n\n", ["a", ""], True, UNIX),
        ("a\r\nb\r\n", ["a", "b"], True, DOS),
        ("a\r\nb", ["a", "b"], False, DOS),
        ("a\r\nb\n", ["a\r", "b"], True, UNIX),
        ("\r", ["\r"], False, UNIX),
        ("a\r\r\n", ["a\r"], True, DOS),
    ],
)
def test_text_becomes_the_lines_eol_and_fileformat_neovim_would_read(
    text: str, lines: list[str], eol: bool, fileformat: str
) -> None:
    buffer = to_buffer(text)
    assert (buffer.lines, buffer.eol, buffer.fileformat) == (lines, eol, fileformat)
    assert from_buffer(buffer.lines, buffer.eol, buffer.fileformat) == text


@given(st.text())
def test_any_text_round_trips(text: str) -> None:
    buffer = to_buffer(text)
    assert all("\n" not in line for line in buffer.lines)
    assert from_buffer(buffer.lines, buffer.eol, buffer.fileformat) == text


def test_nul_and_lone_surrogates_are_not_text() -> None:
    with pytest.raises(InvalidTextError, match=r"NUL character \(line 3\)"):
        check_text("a\nb\nc\0")
    with pytest.raises(InvalidTextError, match=r"not valid Unicode text \(line 2\)"):
        check_text("ok\n\ud800")
    check_text("tabs\t, CR\r, emoji 😀, U+FFFD \ufffd")
