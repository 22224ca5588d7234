"""Big ``openDiff`` bodies read once: the proposal is set aside, the SDK gets the rest.

The mcp SDK reads a request body as a list of chunks joined into bytes, parses it to
Python objects and validates them with pydantic; with our text conversion and the
RPC to Neovim, an ``openDiff`` of N MiB cost the host about 7 N MiB at its peak
(issue 14). Here, in front of the SDK, a POST of at least :data:`BIG_PROPOSAL_BYTES`
with a ``Content-Length`` is read into one preallocated buffer and parsed once. If
it is a ``tools/call`` of ``openDiff``, its ``newContent`` string is kept in the
:class:`ProposalStash` under a random key and the SDK gets the same message with the
key in its place: a body of a few hundred bytes, checked as any other (session,
headers, JSON-RPC), answered as any other. The diff controller takes the string back
by its key (:func:`take_proposal`). Anything else is handed on as it came.

The proposal's JSON string, escaped as the client sent it, is also kept, on disk
(:class:`KeptProposal`: a private folder, a 0600 file): an accept of the proposal
unchanged sends those very bytes back in ``ide/diffAccepted``, with nothing decoded
or encoded again (diff.py).

A key starts with a NUL and ends with 32 random hex digits: a client cannot guess
one, and a ``newContent`` that looks like one is refused anyway (no NUL is ever
shown).

Big blocks are given back to the system as soon as they are freed, and what is left
free after a big request is too (allocator.py), so the host returns near its size
before the request.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from .allocator import allocator, release_memory
from .security import ASGIApp, Message, Receive, Scope, Send

# Bodies (and answers) from this size on are handled here; smaller ones pass as they
# are, at no cost. Below it the SDK's copies cost less than a MiB or two.
BIG_PROPOSAL_BYTES = 256 * 1024

log = logging.getLogger(__name__)

_KEY_PREFIX = "\0gemini-companion-proposal:"

# The standard library's JSON string decoder (its C one), which typeshed does not name.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class KeptProposal:
    """A proposal's JSON string token (quotes included), bytes as the client sent
    them, in a file of its own (0600, in a 0700 folder) until :meth:`discard`."""

    def __init__(self, folder: str, path: str) -> None:
        self.folder = folder
        self.path = path

    @classmethod
    def write(cls, text: str, start: int, end: int) -> KeptProposal:
        """``text[start:end]`` written (UTF-8) to a new private file."""
        folder = tempfile.mkdtemp(prefix="gemini-companion-accept-")
        kept = cls(folder, os.path.join(folder, "newContent.json"))
        try:
            fd = os.open(kept.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with open(fd, "wb") as file:
                step = 1 << 16  # a small slice at a time: the text is held twice already
                for at in range(start, end, step):
                    file.write(text[at : min(at + step, end)].encode("utf-8"))
        except BaseException:
            kept.discard()
            raise
        return kept

    def read_between(self, prefix: bytes, suffix: bytes) -> bytearray:
        """``prefix``, the kept bytes and ``suffix`` in one buffer, read in place."""
        with open(self.path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            out = bytearray(len(prefix) + size + len(suffix))
            out[: len(prefix)] = prefix
            with memoryview(out) as view:
                filled = len(prefix)
                while filled < len(prefix) + size:
                    count = file.readinto(view[filled : len(prefix) + size])
                    if not count:
                        raise OSError(f"{self.path} is shorter than it was")
                    filled += count
            out[len(prefix) + size :] = suffix
        return out

    def discard(self) -> None:
        """Remove the file and its folder (again: nothing happens)."""
        shutil.rmtree(self.folder, ignore_errors=True)


class ProposalStash:
    """``newContent`` strings set aside for the request that carried them, each with
    its escaped form kept on disk (or None). Used on the server loop only."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, KeptProposal | None]] = {}

    def put(self, content: str, kept: KeptProposal | None = None) -> str:
        key = _KEY_PREFIX + os.urandom(16).hex()
        self._held[key] = (content, kept)
        return key

    def take(self, key: str) -> tuple[str, KeptProposal | None] | None:
        """The content and its kept form, now the caller's (who discards the latter)."""
        return self._held.pop(key, None) if key.startswith(_KEY_PREFIX) else None

    def discard(self, key: str) -> None:
        held = self._held.pop(key, None)
        if held is not None and held[1] is not None:
            held[1].discard()

    def __len__(self) -> int:
        return len(self._held)


# One per host: keys are random, and the server loop is the only user.
stash = ProposalStash()


def take_proposal(arguments: Any) -> tuple[Any, KeptProposal | None]:
    """``arguments`` of an ``openDiff`` call with the proposal set aside by
    :class:`BigProposals` put back (a new mapping), with its kept escaped form (the
    caller's to discard, or None); else ``(arguments, None)``."""
    if isinstance(arguments, Mapping):
        key = arguments.get("newContent")
        if isinstance(key, str):
            held = stash.take(key)
            if held is not None:
                return {**arguments, "newContent": held[0]}, held[1]
    return arguments, None


class BigProposals:
    """ASGI layer in front of the IDE endpoint's SDK app (see the module's docstring).

    RequestGuard has already checked the token and refused bodies over the limit."""

    def __init__(self, app: ASGIApp, *, threshold: int = BIG_PROPOSAL_BYTES) -> None:
        self._app = app
        self._threshold = threshold
        allocator.tune()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is None or length < self._threshold:
            await self._small_request(scope, receive, send)
            return
        body = await _read_body(receive, length)
        if body is None:  # the client went away before sending it all
            return
        key, small = _set_aside(body)
        if small is None:
            # Not an openDiff: the SDK gets the body as it came (one bytes object,
            # which its join of one chunk keeps as it is).
            whole = bytes(body)
            del body
            await self._app(scope, _replay(whole, receive), send)
            del whole
        else:
            del body
            headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(small)).encode()))
            try:
                await self._app({**scope, "headers": headers}, _replay(small, receive), send)
            finally:
                stash.discard(key)  # the SDK refused it before the tool ran
        release_memory()

    async def _small_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handed on as it is; memory is released after a big answer (closeDiff's)."""
        big = False

        async def watched_send(message: Message) -> None:
            nonlocal big
            if message["type"] == "http.response.body":
                big = big or len(message.get("body", b"")) >= self._threshold
            await send(message)

        await self._app(scope, receive, watched_send)
        if big:
            await self._flush(scope)
            release_memory()

    async def _flush(self, scope: Scope) -> None:
        """Run a ``ping`` through the SDK for the same session, its answer dropped.

        The SDK's router keeps the last message it sent in a loop variable until the
        next one: after a big closeDiff answer that held the whole text (16 MiB for
        a 16 MiB file) until the client's next request."""
        ping = json.dumps(
            {"jsonrpc": "2.0", "id": f"gemini-companion-{os.urandom(8).hex()}", "method": "ping"}
        ).encode()
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(ping)).encode()))

        async def drop(message: Message) -> None:
            pass

        async def disconnected() -> Message:
            return {"type": "http.disconnect"}

        with contextlib.suppress(Exception):
            await self._app(
                {**scope, "headers": headers, "extensions": {}}, _replay(ping, disconnected), drop
            )


def _content_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # RequestGuard has answered 400 already
    return None


async def _read_body(receive: Receive, length: int) -> bytearray | None:
    """The body into one buffer of its announced size; None on a disconnect."""
    body = bytearray(length)
    view = memoryview(body)
    filled = 0
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            end = filled + len(chunk)
            if end > length:  # h11 keeps to Content-Length; never trust it blindly
                return None
            view[filled:end] = chunk
            filled = end
            if not message.get("more_body", False):
                break
    finally:
        view.release()
    if filled != length:
        del body[filled:]
    return body


def _set_aside(body: bytearray) -> tuple[str, bytes | None]:
    """``(key, small body)`` for an openDiff call, its proposal stashed under ``key``
    and ``body`` emptied; ``("", None)`` for anything else, ``body`` holding the
    bytes that came.

    Parsed with the standard library, which decodes the JSON string with no copy on
    the side (pydantic's parser held three times its size); where the two parsers
    differ (lone surrogates, which the SDK refuses), the SDK decides."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "", None  # the SDK answers the parse error
    body.clear()
    message, kept = _parse_keeping(text)
    if message is None:
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            message = None
    if not _is_open_diff(message) or not _surrogate_free(
        message["params"]["arguments"]["newContent"]
    ):
        if kept is not None:
            kept.discard()
        body[:] = text.encode("utf-8")  # the very bytes that came
        return "", None
    del text
    arguments = message["params"]["arguments"]
    key = stash.put(arguments["newContent"], kept)
    arguments["newContent"] = key
    # ASCII: any lone surrogate elsewhere stays escaped, for the SDK to refuse.
    return key, json.dumps(message).encode()


# Where an object's "newContent" member begins its string value. Inside a JSON string
# a quote is always escaped, so the closing quote of the name is a real one.
_NEW_CONTENT = re.compile(r'"newContent"[ \t\r\n]*:[ \t\r\n]*"')


def _parse_keeping(text: str) -> tuple[Any, KeptProposal | None]:
    """``text`` parsed, with an openDiff's ``newContent`` string token kept on disk
    as it came; ``(None, None)`` when it is not found so (the caller parses).

    The token found is decoded once, and the rest parsed with a marker in its place:
    only when the marker comes out as the call's ``newContent`` is the token known
    to be that value (a duplicate name, or the name in another place, fails that)."""
    for match in reversed(list(_NEW_CONTENT.finditer(text))):
        start = match.end() - 1
        try:
            content, end = _scanstring(text, start + 1, True)
        except ValueError:
            continue
        marker = _KEY_PREFIX + os.urandom(16).hex()
        try:
            message = json.loads(text[:start] + json.dumps(marker) + text[end:])
        except (ValueError, RecursionError):
            return None, None
        if not _is_open_diff(message) or message["params"]["arguments"]["newContent"] != marker:
            continue
        if not _surrogate_free(content):
            return None, None  # the SDK refuses it: no need to keep anything
        try:
            kept = KeptProposal.write(text, start, end)
        except OSError as exc:
            log.warning("the proposal's escaped form could not be kept: %s", exc)
            kept = None
        message["params"]["arguments"]["newContent"] = content
        return message, kept
    return None, None


def _is_open_diff(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return False
    params = message.get("params")
    if not isinstance(params, dict) or params.get("name") != "openDiff":
        return False
    arguments = params.get("arguments")
    return isinstance(arguments, dict) and isinstance(arguments.get("newContent"), str)


def _surrogate_free(text: str) -> bool:
    if text.isascii():
        return True
    slice_ = 1 << 20
    for start in range(0, len(text), slice_):
        try:
            text[start : start + slice_].encode("utf-8")
        except UnicodeEncodeError:
            return False
    return True


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then the connection's own messages
    (its body is read already: what comes is the disconnect)."""
    pending: list[bytes] = [body]

    async def replay() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replay
