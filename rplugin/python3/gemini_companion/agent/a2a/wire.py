"""What comes from an A2A agent over HTTP, made valid text before a2a-sdk reads it.

A lone surrogate in a JSON string (``"\\ud800"``: JSON allows the escape, Unicode
has no such character) made a2a-sdk's protobuf parsing raise on the event that
carried it: the text after it was lost, the stream taken for broken, the task
followed again and the same event refused again (issue 23 item 5). Invalid UTF-8
fails its strict ``decode`` of a response that is not a stream. Both are fixed
here, in the bytes, before the SDK parses them (:class:`CleanTextTransport`, the
``httpx`` transport of the A2A client): every line of a response is decoded as
UTF-8 with invalid bytes replaced by U+FFFD, and each ``\\uD800``-``\\uDFFF``
escape that is not half of a pair becomes ``\\ufffd``; the user is told once per
response (``on_replaced``). Lines are kept whole (an escape never spans a line),
so the work is linear in what arrives.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable

import httpx

# An escaped backslash (skipped whole, so ``\\\\ud800`` is text), a surrogate pair
# (kept), or a lone surrogate escape (replaced).
_ESCAPES = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def clean_line(line: bytes) -> tuple[bytes, bool]:
    """``line`` as valid UTF-8 with no lone surrogate escape; whether it changed."""
    try:
        text, changed = line.decode("utf-8"), False
    except UnicodeDecodeError:
        text, changed = line.decode("utf-8", "replace"), True
    if "\\u" in text or "\\U" in text:

        def fix(match: re.Match[str]) -> str:
            nonlocal changed
            found = match.group(0)
            if found == "\\\\" or len(found) == 12:
                return found
            changed = True
            return "\\ufffd"

        text = _ESCAPES.sub(fix, text)
    return (text.encode("utf-8") if changed else line), changed


class _CleanStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, on_replaced: Callable[[], None]) -> None:
        self._inner = inner
        self._on_replaced = on_replaced
        self._told = False

    def _clean(self, data: bytes) -> bytes:
        cleaned, changed = clean_line(data)
        if changed and not self._told:
            self._told = True
            self._on_replaced()
        return cleaned

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held: list[bytes] = []  # the start of a line not yet ended
        async for chunk in self._inner:
            end = chunk.rfind(b"\n")
            if end < 0:
                held.append(chunk)
                continue
            held.append(chunk[: end + 1])
            yield self._clean(b"".join(held))
            held = [chunk[end + 1 :]] if end + 1 < len(chunk) else []
        if held:
            yield self._clean(b"".join(held))

    async def aclose(self) -> None:
        await self._inner.aclose()


class CleanTextTransport(httpx.AsyncBaseTransport):
    """An ``httpx`` transport whose responses are valid text for a2a-sdk."""

    def __init__(self, inner: httpx.AsyncBaseTransport, on_replaced: Callable[[], None]) -> None:
        self._inner = inner
        self._on_replaced = on_replaced

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _CleanStream(response.stream, self._on_replaced)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
