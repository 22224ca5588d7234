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

from ..transport import TransportError

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1

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
        message = json.loads(text)
    except RecursionError:
        raise RefusedMessageError(f"a message nested more than {MAX_DEPTH} levels deep") from None
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    envelope = {k: message[k] for k in ("id", "method") if k in message}
    mid, method = message.get("id"), message.get("method")
    if (mid is not None and not isinstance(mid, (int, str))) or isinstance(mid, bool):
        raise RefusedMessageError("a message whose id is not a number or a string")
    if method is not None and not isinstance(method, str):
        raise RefusedMessageError("a message whose method is not a string", envelope)
    if method is None and "id" not in message:
        raise RefusedMessageError("a message with neither a method nor an id")
    _clean(message, surrogates=bool(_SURROGATE_ESCAPE.search(text)), envelope=envelope)
    return message


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

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._lock:
            if self._stdin.is_closing():
                raise ConnectionError("the agent's stdin is closed")
            try:
                self._stdin.write(data)
                await self._stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise ConnectionError(f"the agent's stdin is closed: {exc}") from exc

    async def receive(self) -> dict[str, Any] | None:
        while True:
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
                chunks.append(exc.partial)
                return b"".join(chunks) or None
            except asyncio.LimitOverrunError as exc:
                chunk = await self._stdout.readexactly(exc.consumed)
                size += len(chunk)
                if size <= MAX_MESSAGE_BYTES:
                    chunks.append(chunk)
                continue
            if size + len(chunk) > MAX_MESSAGE_BYTES:
                return b"<a line of more than %d bytes>" % MAX_MESSAGE_BYTES
            chunks.append(chunk)
            return b"".join(chunks)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._stdin.close()


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
