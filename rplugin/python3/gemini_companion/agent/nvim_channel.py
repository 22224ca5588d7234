"""The agent panel's own msgpack-rpc connection to Neovim (issue 25 items 2 and 3).

Neovim gives every job it starts the address of its RPC server (``$NVIM``); the
host is one. The panel's batches (view.py) go over a connection of the session's
own to that address, from the session's loop: a chunk reaches Neovim without a
hop through pynvim's thread, which cost a thread wake-up each way (about 0.12 ms
on a 2-core machine, and a third of the host's CPU per chunk). Nothing listens:
the host connects to Neovim's own socket, as any client of Neovim does. Without
the address, or once the connection fails, batches go through pynvim as before.

Use on one asyncio loop only (the session's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

log = logging.getLogger(__name__)

_READ = 256 * 1024


class NvimChannelError(ConnectionError):
    """The connection to Neovim failed or closed."""


class NvimChannel:
    """Requests to Neovim on a connection of their own; answers resolve futures."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import msgpack  # type: ignore[import-untyped]  # pynvim's dependency

        self._reader = reader
        self._writer = writer
        self._packer = msgpack.Packer()
        self._unpacker = msgpack.Unpacker(raw=False)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 1
        self.closed = False
        self._task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, address: str) -> NvimChannel | None:
        """A channel to the Neovim at ``address`` (a socket path), or None."""
        try:
            if ":" in address and not address.startswith("/"):
                host, _, port = address.rpartition(":")
                if host not in ("127.0.0.1", "localhost", "::1"):
                    return None  # only a local Neovim
                reader, writer = await asyncio.open_connection(host, int(port))
            else:
                reader, writer = await asyncio.open_unix_connection(address)
        except (OSError, ValueError, AttributeError) as exc:  # no Unix sockets: Windows
            log.info("no channel of the panel's own to Neovim (%s): %s", address, exc)
            return None
        return cls(reader, writer)

    def request(self, method: str, args: list[Any]) -> asyncio.Future[Any]:
        """Send a request; the future holds Neovim's answer or the error."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.closed:
            future.set_exception(NvimChannelError("the panel's channel to Neovim is closed"))
            return future
        request_id = self._next_id
        self._next_id += 1
        self._pending[request_id] = future
        self._writer.write(self._packer.pack([0, request_id, method, args]))
        return future

    async def _read(self) -> None:
        try:
            while data := await self._reader.read(_READ):
                self._unpacker.feed(data)
                for message in self._unpacker:
                    self._received(message)
        except Exception as exc:  # a broken connection, or bytes that are not msgpack-rpc
            log.warning("the panel's channel to Neovim failed: %s", exc)
        finally:
            self._close()

    def _received(self, message: Any) -> None:
        if not isinstance(message, list) or len(message) != 4 or message[0] != 1:
            return  # Neovim's notifications (nvim_error_event) and requests: not ours
        future = self._pending.pop(message[1], None)
        if future is None or future.done():
            return
        error, result = message[2], message[3]
        if error:
            text = error[1] if isinstance(error, list) and len(error) > 1 else error
            future.set_exception(RuntimeError(str(text)))
        else:
            future.set_result(result)

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(NvimChannelError("the panel's channel to Neovim closed"))
        with contextlib.suppress(Exception):
            self._writer.close()

    def close(self) -> None:
        """Close the connection; what waits fails."""
        self._task.cancel()
        self._close()
