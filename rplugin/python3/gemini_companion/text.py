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

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

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


# Text is checked and written in slices of this many characters: a copy of a slice,
# never of the whole text (an openDiff proposal can be 64 MiB).
SLICE = 1 << 20


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
    if text.isascii():
        return
    for start in range(0, len(text), SLICE):
        try:
            text[start : start + SLICE].encode("utf-8")
        except UnicodeEncodeError as exc:
            line = text.count("\n", 0, start + exc.start) + 1
            raise InvalidTextError(f"it is not valid Unicode text (line {line})") from None


def buffer_options(text: str) -> tuple[bool, str]:
    """``('eol', 'fileformat')`` of ``text`` as :func:`to_buffer` decides them, without
    copying it."""
    eol = text.endswith("\n")
    endings = text.count("\n")
    # dos when every line ending is CRLF ("\r\n" cannot overlap itself)
    return eol, DOS if endings and text.count("\r\n") == endings else UNIX


def write_body(text: str, file: BinaryIO) -> None:
    """Write the body :func:`to_buffer` would give for ``text`` (UTF-8) to ``file``, a
    slice at a time."""
    eol, fileformat = buffer_options(text)
    end = len(text) - (2 if eol and fileformat == DOS else 1 if eol else 0)
    start = 0
    while start < end:
        stop = min(start + SLICE, end)
        if fileformat == DOS and text[stop - 1] == "\r" and stop < end:
            stop += 1  # a CRLF is never cut in two
        piece = text[start:stop]
        if fileformat == DOS:
            piece = piece.replace("\r\n", "\n")
        file.write(piece.encode("utf-8"))
        start = stop


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


def take_text_file(name: str) -> str:
    """The text of a file diff.lua handed over (a big proposal), which is removed.
    Bytes that are not UTF-8 are kept as pynvim keeps them in strings
    (``surrogateescape``), for :func:`check_text` to refuse."""
    try:
        with open(name, "rb") as file:
            data = file.read()
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)
    return data.decode("utf-8", "surrogateescape")


def received_body(body: Any) -> str:
    """A proposal's body as diff.lua sends it: a string, or ``{file = path}`` for a
    big one (read and removed here; :class:`OSError` if that fails)."""
    if isinstance(body, Mapping):
        name = body.get("file")
        if not isinstance(name, str) or not name:
            raise OSError(f"no file named in {dict(body)!r}")
        return take_text_file(name)
    return str(body)


def discard_handed_over(view: Any) -> None:
    """Remove the file of a closed view's text nobody reads (``_close``'s answer)."""
    name = view.get("text_file") if isinstance(view, Mapping) else None
    if isinstance(name, str) and name:
        with contextlib.suppress(OSError):
            os.unlink(name)
