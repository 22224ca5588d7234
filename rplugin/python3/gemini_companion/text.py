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
    """A buffer's content: its lines joined with ``\\n`` (one string crosses the RPC
    channel much faster than a list of lines), ``'eol'`` and ``'fileformat'``."""

    body: str
    eol: bool
    fileformat: str = UNIX

    @property
    def lines(self) -> list[str]:
        return self.body.split("\n")


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
    """The body (lines joined by ``\\n``), ``'eol'`` and ``'fileformat'`` of ``text``."""
    eol = text.endswith("\n")
    body = text[:-1] if eol else text
    endings = text.count("\n")
    # dos when every line ending is CRLF ("\r\n" cannot overlap itself)
    if endings and text.count("\r\n") == endings:
        if eol:
            body = body[:-1]  # the CR of the last CRLF
        return BufferText(body.replace("\r\n", "\n"), eol, DOS)
    return BufferText(body, eol, UNIX)


def from_body(body: str, eol: bool, fileformat: str = UNIX) -> str:
    """The bytes Neovim would write, with ``'fixeol'`` off, for the lines in ``body``."""
    if fileformat == DOS:
        separator = "\r\n"
    elif fileformat == "mac":
        separator = "\r"
    else:
        separator = "\n"
    if separator != "\n":
        body = body.replace("\n", separator)
    return body + separator if eol else body


def from_buffer(lines: list[str], eol: bool, fileformat: str = UNIX) -> str:
    """:func:`from_body` for a list of lines (an empty list is one empty line)."""
    return from_body("\n".join(lines), eol, fileformat)
