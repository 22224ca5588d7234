"""ACP on the wire: JSON-RPC 2.0, one message a line, on the child's pipes.

:class:`ChildStdio` is the ``acp`` package's message transport over the child's
stdin and stdout (its low-level ``Connection`` runs on it); :class:`AgentError`
is a JSON-RPC error the agent answered with.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..transport import TransportError

PROTOCOL_VERSION = 1

# One JSON-RPC message a line; a line longer than this is not a message we take.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

AUTH_REQUIRED = -32000
"""The error code of a request the agent refuses until the client logs in."""


class ChildStdio:
    """The child's stdin/stdout as the ``acp`` package's message transport.

    Lines that are not JSON-RPC messages (a library printing to stdout) are
    reported through ``on_garbage`` and skipped; a blocked reader never holds a
    message longer than :data:`MAX_MESSAGE_BYTES`.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        on_garbage: Callable[[bytes], None],
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._on_garbage = on_garbage
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
                message = json.loads(stripped)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("jsonrpc") == "2.0":
                return message
            self._on_garbage(stripped)

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
