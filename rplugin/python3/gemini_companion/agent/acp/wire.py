"""ACP on the wire: JSON-RPC 2.0, one message a line, on the child's pipes.

:class:`ChildStdio` is the ``acp`` package's message transport over the child's
stdin and stdout (its low-level ``Connection`` runs on it); :class:`AgentError`
is a JSON-RPC error the agent answered with.

What the agent writes is untrusted: :func:`parse_message` takes a line only as a
well-formed JSON-RPC message. Invalid UTF-8 and lone surrogates (``"\\ud800"``)
become U+FFFD, so no text that Neovim cannot take goes further; a message nested
deeper than :data:`MAX_DEPTH` is refused (the agent gets an error for a request,
a request of ours gets an error answer, a notification is dropped), as is an
envelope the ``acp`` package would choke on (an id that is not a number or a
string, no method and no id): the connection stays up and the panel says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from .. import burst
from ..transport import TransportError, plugin_version

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1

CLIENT_INFO = {"name": "gemini-companion.nvim", "title": "Gemini companion for Neovim"}


def initialize_params() -> dict[str, Any]:
    """``initialize``'s parameters: handshake.py's first request, also written to
    the agent as it starts (prespawn.py)."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
        "clientInfo": {**CLIENT_INFO, "version": plugin_version()},
    }


# One JSON-RPC message a line; a line longer than this is not a message we take.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

AUTH_REQUIRED = -32000
"""The error code of a request the agent refuses until the client logs in."""

MAX_DEPTH = 100
"""The deepest nesting of arrays and objects taken in a message from the agent
(ACP's own messages nest under ten; a tool's raw input a little more)."""

INVALID_REQUEST = -32600

# A \uD800-\uDFFF escape: the only way a lone surrogate gets into parsed JSON.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")

_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class RefusedMessageError(ValueError):
    """A JSON-RPC message from the agent that is not taken, and why; ``message`` is
    the envelope (``id``, ``method``) when it could be read."""

    def __init__(self, why: str, envelope: Mapping[str, Any] | None = None) -> None:
        super().__init__(why)
        self.envelope = dict(envelope or {})


def parse_message(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC message on ``line``, its text made safe; None for a line that is
    not one (garbage); raises :class:`RefusedMessageError` for one that is not taken."""
    text = line.decode("utf-8", "replace")
    try:
        try:
            # json.loads without its two layers of Python and two regex matches.
            message, end = _scan(text, 0)
        except StopIteration:  # leading whitespace, or no value at all
            message, end = json.loads(text), len(text)
        if end != len(text) and not text[end:].isspace():
            return None  # more after the value: not one message
    except RecursionError:
        raise RefusedMessageError(f"a message nested more than {MAX_DEPTH} levels deep") from None
    except ValueError:
        return None
    if type(message) is not dict or message.get("jsonrpc") != "2.0":
        return None
    mid, method = message.get("id"), message.get("method")
    if mid is not None and (not isinstance(mid, (int, str)) or isinstance(mid, bool)):
        raise RefusedMessageError("a message whose id is not a number or a string")
    if method is not None and type(method) is not str:
        raise RefusedMessageError("a message whose method is not a string", _envelope(message))
    if method is None and "id" not in message:
        raise RefusedMessageError("a message with neither a method nor an id")
    surrogates = "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None
    # Fewer brackets than the limit cannot nest past it: most messages need no walk.
    if surrogates or text.count("{") + text.count("[") > MAX_DEPTH:
        _clean(message, surrogates=surrogates, envelope=_envelope(message))
    return message


def _envelope(message: Mapping[str, Any]) -> dict[str, Any]:
    return {k: message[k] for k in ("id", "method") if k in message}


def _clean(message: dict[str, Any], *, surrogates: bool, envelope: Mapping[str, Any]) -> None:
    """Refuse nesting past :data:`MAX_DEPTH`; with ``surrogates``, replace lone
    surrogates in every string (keys too) by U+FFFD. Iterative: no recursion."""
    stack: list[tuple[Any, int]] = [(message, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RefusedMessageError(
                f"a message nested more than {MAX_DEPTH} levels deep", envelope
            )
        if isinstance(node, dict):
            if surrogates and any(_SURROGATE.search(k) for k in node):
                fixed = {_SURROGATE.sub("\ufffd", k): v for k, v in node.items()}
                node.clear()
                node.update(fixed)
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        for key, value in list(items):
            if isinstance(value, str):
                if surrogates and _SURROGATE.search(value):
                    node[key] = _SURROGATE.sub("\ufffd", value)
            elif isinstance(value, (dict, list)):
                stack.append((value, depth + 1))


class ChildStdio:
    """The child's stdin/stdout as the ``acp`` package's message transport.

    Lines that are not JSON-RPC messages (a library printing to stdout) are
    reported through ``on_garbage`` and skipped; messages :func:`parse_message`
    refuses through ``on_refused`` (a request of the agent's is answered with an
    error, an answer to one of ours becomes an error answer); a blocked reader never
    holds a message longer than :data:`MAX_MESSAGE_BYTES`.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        on_garbage: Callable[[bytes], None],
        on_refused: Callable[[str], None] = lambda why: None,
        on_update: Callable[[Any], None] | None = None,
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._on_garbage = on_garbage
        self._on_refused = on_refused
        self._on_update = on_update
        # A request or notification was handed to the ``acp`` package, whose task
        # for it may not have started yet.
        self._handed_off = False
        self._lock = asyncio.Lock()
        # Updates are taken as the pipe's bytes arrive (_feed), while the reader holds
        # nothing and the receiving task waits for more: bytes handed to the reader
        # (everything else) and the bytes it has given back so far.
        self._inline = False
        self._given = 0
        self._consumed = 0
        self._feed_reader: Callable[[bytes], None] = self._stdout.feed_data
        if on_update is not None:
            # The pipe's protocol feeds its reader: this sees the bytes first.
            setattr(self._stdout, "feed_data", self._feed)  # noqa: B010
            # And the pipe itself, in its read's callback: asyncio's subprocess hands
            # what it reads on through a callback of its own, a turn of the loop later.
            transport = getattr(process, "_transport", None)
            pipe = transport.get_pipe_transport(1) if transport is not None else None
            if isinstance(pipe, asyncio.ReadTransport) and hasattr(pipe, "set_protocol"):
                pipe.set_protocol(_PipeReader(self._feed, pipe.get_protocol()))

    def _feed(self, data: bytes) -> None:
        """The agent's bytes as they arrive, in the pipe's callback: each whole line
        that is a ``session/update`` goes to ``on_update`` here, with no task, future
        or turn of the loop per chunk (issue 25 item 3), and what they draw goes to
        Neovim at the end (agent/burst.py); from the first line that is anything
        else (or a line not yet whole), the bytes go to the reader, and
        :meth:`receive` takes them in order as before."""
        if self._inline:
            start, size = 0, len(data)
            burst.begin()
            try:
                while start < size:
                    end = data.find(b"\n", start)
                    if end < 0 or not self._inline_update(data[start:end]):
                        break
                    start = end + 1
            finally:
                burst.end()
            if start == size:
                return
            self._inline = False
            if start:
                data = data[start:]
        self._given += len(data)
        self._feed_reader(data)

    def _inline_update(self, line: bytes) -> bool:
        """Take ``line`` here if it is a ``session/update`` (or blank); False to leave
        it, and what follows, to :meth:`receive`."""
        if b'"session/update"' not in line:
            return not line.strip()
        try:
            message = parse_message(line)
        except RefusedMessageError:
            return False
        if message is None or message.get("method") != "session/update" or "id" in message:
            return False
        assert self._on_update is not None
        try:
            self._on_update(message.get("params"))
        except Exception:
            log.exception("handling the agent's session/update failed")
        return True

    # The first message's line when it was written to the agent as it started
    # (prespawn.py): the package's identical first message is then not sent again,
    # and nothing the agent writes is received before it is "sent" (its answer
    # would find no request waiting).
    _written_already: bytes | None = None
    _first_sent: asyncio.Event | None = None

    def written_already(self, line: bytes | None) -> None:
        """``line`` was written to the agent before this transport existed."""
        if line is not None:
            self._written_already, self._first_sent = line, asyncio.Event()

    @staticmethod
    def encode(message: Mapping[str, Any]) -> bytes:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    async def send(self, message: dict[str, Any]) -> None:
        data = self.encode(message)
        early, self._written_already = self._written_already, None
        if self._first_sent is not None:
            self._first_sent.set()
        if data == early:
            return
        async with self._lock:
            if self._stdin.is_closing():
                raise ConnectionError("the agent's stdin is closed")
            try:
                self._stdin.write(data)
                await self._stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise ConnectionError(f"the agent's stdin is closed: {exc}") from exc

    async def receive(self) -> dict[str, Any] | None:
        if self._first_sent is not None:
            await self._first_sent.wait()
            self._first_sent = None
        while True:
            if self._on_update is not None and self._given == self._consumed:
                # Nothing read waits here: updates may be taken as they arrive, once
                # what was handed to the package has run its first step.
                if self._handed_off:
                    self._handed_off = False
                    await asyncio.sleep(0)
                    continue
                self._inline = True
            line = await self._read_line()
            if line is None:
                return None
            stripped = line.strip()
            if not stripped:
                continue
            try:
                message = parse_message(stripped)
            except RefusedMessageError as exc:
                self._on_refused(str(exc))
                answer = await self._refusal(exc)
                if answer is not None:
                    return answer
                continue
            if message is None:
                self._on_garbage(stripped)
                continue
            if (
                self._on_update is None
                or message.get("method") != "session/update"
                or "id" in message
            ):
                # The package runs a request or notification in a task of its own,
                # and settles an answer at once: who awaits it runs later.
                self._handed_off = True
                return message
            await self._update(message.get("params"))

    async def _update(self, params: Any) -> None:
        """A ``session/update``, the bulk of a stream, handed to ``on_update`` here
        rather than as a task of the ``acp`` package's (a task, a telemetry span and
        a loop turn a chunk, issue 25 item 3). The order stays the wire's: what a
        message handed to the package just before sets going (its handler's task, or
        the caller awaiting an answer: ``session/new``'s records the session the
        updates after it are for) runs first, as when the package ran the update in
        a task of its own."""
        assert self._on_update is not None
        if self._handed_off:
            self._handed_off = False
            await asyncio.sleep(0)  # what was scheduled so far runs its first step
        try:
            self._on_update(params)
        except Exception:
            log.exception("handling the agent's session/update failed")

    async def _refusal(self, exc: RefusedMessageError) -> dict[str, Any] | None:
        """A refused request is answered with an error; a refused answer to a
        request of ours is handed on as an error answer (the request fails rather
        than waiting for ever)."""
        mid, method = exc.envelope.get("id"), exc.envelope.get("method")
        if mid is None or not isinstance(mid, (int, str)):
            return None
        error = {"code": INVALID_REQUEST, "message": f"refused: {exc}"}
        if method is None:
            return {"jsonrpc": "2.0", "id": mid, "error": error}
        with contextlib.suppress(ConnectionError):
            await self.send({"jsonrpc": "2.0", "id": mid, "error": error})
        return None

    async def _read_line(self) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await self._stdout.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # end of the stream
                self._consumed += len(exc.partial)
                chunks.append(exc.partial)
                return b"".join(chunks) or None
            except asyncio.LimitOverrunError as exc:
                chunk = await self._stdout.readexactly(exc.consumed)
                self._consumed += len(chunk)
                size += len(chunk)
                if size <= MAX_MESSAGE_BYTES:
                    chunks.append(chunk)
                continue
            self._consumed += len(chunk)
            if size + len(chunk) > MAX_MESSAGE_BYTES:
                return b"<a line of more than %d bytes>" % MAX_MESSAGE_BYTES
            chunks.append(chunk)
            return b"".join(chunks)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._stdin.close()


class _PipeReader(asyncio.Protocol):
    """The agent's stdout pipe's protocol: its bytes to ``feed`` at once; its end to
    asyncio's own protocol for the pipe (which ends the reader and the process)."""

    def __init__(self, feed: Callable[[bytes], None], protocol: Any) -> None:
        self._feed = feed
        self._protocol = protocol

    def data_received(self, data: bytes) -> None:
        self._feed(data)

    def eof_received(self) -> bool | None:
        return self._protocol.eof_received()  # type: ignore[no-any-return]

    def connection_lost(self, exc: Exception | None) -> None:
        self._protocol.connection_lost(exc)


class AgentError(TransportError):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


def error_text(exc: Exception) -> str:
    """A JSON-RPC error's message, with its details when the message is generic."""
    message = str(exc)
    data = getattr(exc, "data", None)
    details = data.get("details") if isinstance(data, Mapping) else data
    if details and str(details) not in message:
        message = f"{message}: {details}"
    return message
