"""File text <-> buffer lines, byte for byte.

A Neovim buffer holds lines plus two options that decide the bytes written:
``'eol'`` (is there a final newline) and ``'fileformat'`` (``dos`` writes CRLF).
``""`` and ``"\\n"`` are both one empty line and differ only in ``'eol'``
(platform-notes.md, "Buffer text and bytes"). As Neovim does when it reads a file,
a text whose every line ending is CRLF is shown as ``fileformat=dos`` without the
``\\r``; with mixed endings the ``\\r`` stays in the lines and the format is ``unix``.
Converting back gives the original text exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

UNIX = "unix"
DOS = "dos"


class InvalidTextError(ValueError):
    """Text that cannot be a buffer's content."""


@dataclass(frozen=True)
class BufferText:
    lines: list[str]
    eol: bool
    fileformat: str = UNIX


def check_text(text: str) -> None:
    """Raise :class:`InvalidTextError` for text a buffer cannot hold or UTF-8 cannot encode.

    NUL is stored as a newline inside Neovim's buffers and does not round-trip
    reliably through every path; lone surrogates (from JSON ``\\ud800`` escapes, or
    bytes that were not UTF-8) are not text at all.
    """
    index = text.find("\0")
    if index >= 0:
        line = text.count("\n", 0, index) + 1
        raise InvalidTextError(
            f"it contains a NUL character (line {line}); binary files cannot be diffed"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        raise InvalidTextError(f"it is not valid Unicode text (line {line})") from None


def to_buffer(text: str) -> BufferText:
    """Split ``text`` into the lines, ``'eol'`` and ``'fileformat'`` of a buffer."""
    lines = text.split("\n")
    eol = len(lines) > 1 and lines[-1] == ""
    if eol:
        lines.pop()
    if "\r" not in text:
        return BufferText(lines, eol, UNIX)
    # dos when every line that has an ending (all but an unterminated last one) ends in CR
    ended = lines if eol else lines[:-1]
    if ended and all(line.endswith("\r") for line in ended):
        if eol:
            lines = [line[:-1] for line in lines]
        else:
            lines = [line[:-1] for line in lines[:-1]] + [lines[-1]]
        return BufferText(lines, eol, DOS)
    return BufferText(lines, eol, UNIX)


def from_buffer(lines: list[str], eol: bool, fileformat: str = UNIX) -> str:
    """The bytes Neovim would write for these lines with ``'fixeol'`` off, as text."""
    if not lines:  # an API quirk; an empty buffer still has one line
        lines = [""]
    separator = "\r\n" if fileformat == DOS else "\r" if fileformat == "mac" else "\n"
    text = separator.join(lines)
    return text + separator if eol else text
