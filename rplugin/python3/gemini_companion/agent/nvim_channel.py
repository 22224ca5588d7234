"""The agent panel's own msgpack-rpc connection to Neovim (issue 25 items 2 and 3).

Neovim gives every job it starts the address of its RPC server (``$NVIM``); the
host is one. The panel's batches (view.py) go over a connection of the session's
own to that address, from the session's loop: a chunk reaches Neovim without a
hop through pynvim's thread, which cost a thread wake-up each way (about 0.12 ms
on a 2-core machine, and a third of the host's CPU per chunk). Nothing listens:
the host connects to Neovim's own socket, as any client of Neovim does. Without
the address, or once the connection fails, batches go through pynvim as before.

Neovim's answers are read when they matter, not as they come: a batch's answer
(it is drawn) is needed only when the next batch is ready to go, and is there by
then in a steady stream. So the socket is watched only while something waits for
an answer (:meth:`NvimChannel.watch`, and every :meth:`~NvimChannel.request`);
otherwise :meth:`~NvimChannel.poll` reads what arrived, without waiting. A chunk
then costs the host one wake-up (the agent's pipe), not two (issue 25 item 3).

Use on one asyncio loop only (the session's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_READ = 64 * 1024

Answered = Callable[[str | None, Any], None]
"""Called with Neovim's answer to a request: (the error's text or None, the result)."""


class NvimChannelError(ConnectionError):
    """The connection to Neovim failed or closed."""


class NvimChannel:
    """Requests to Neovim on a connection of their own, on a non-blocking socket."""

    def __init__(self, sock: socket.socket) -> None:
        import msgpack  # type: ignore[import-untyped]  # pynvim's dependency

        self._sock = sock
        self._fd = sock.fileno()
        self._loop = asyncio.get_running_loop()
        self._pack = msgpack.Packer().pack
        self._unpacker = msgpack.Unpacker(raw=False)
        self._answered: dict[int, Answered] = {}
        self._futures = 0  # requests whose future waits: the socket is watched meanwhile
        self._next_id = 1
        self._out = bytearray()  # what the socket did not take yet
        # Read into a buffer of its own: no allocation of _READ bytes per read.
        self._buffer = bytearray(_READ)
        self._view = memoryview(self._buffer)
        self._wanted = False  # watch() asked for
        self._watching = False
        self.closed = False

    @classmethod
    async def connect(cls, address: str) -> NvimChannel | None:
        """A channel to the Neovim at ``address`` (a socket path), or None."""
        loop = asyncio.get_running_loop()
        targets: list[tuple[int, Any]]
        try:
            if ":" in address and not address.startswith("/"):
                host, _, port = address.rpartition(":")
                if host not in ("127.0.0.1", "localhost", "::1"):
                    return None  # only a local Neovim
                infos = await loop.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
                targets = [(int(family), target) for family, _, _, _, target in infos]
            else:
                targets = [(int(socket.AF_UNIX), address)]
        except (OSError, ValueError, AttributeError) as exc:  # Windows: no AF_UNIX
            log.info("no channel of the panel's own to Neovim (%s): %s", address, exc)
            return None
        failure: Exception = OSError("no address")
        for family, target in targets:  # localhost: ::1 or 127.0.0.1, whichever listens
            try:
                # Inside the try: a family the host has disabled (IPv6 off, while
                # localhost still resolves to ::1) fails here, and the next is tried.
                sock = socket.socket(family, socket.SOCK_STREAM)
            except (OSError, ValueError) as exc:
                failure = exc
                continue
            try:
                if family != socket.AF_UNIX:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.setblocking(False)
                await loop.sock_connect(sock, target)
            except (OSError, ValueError) as exc:
                sock.close()
                failure = exc
                continue
            return cls(sock)
        log.info("no channel of the panel's own to Neovim (%s): %s", address, failure)
        return None

    # -- requests --------------------------------------------------------------------------

    def call(self, method: str, args: list[Any], answered: Answered) -> bool:
        """Send a request: True, and ``answered`` is called with Neovim's answer once
        it is read (watched for, or found by :meth:`poll`), or with an error if the
        connection closes first. False when the channel is closed, or fails as the
        request is written (none of it sent): ``answered`` is never called, and the
        caller sends it another way (a panel's batch is never lost to a closed
        channel)."""
        if self.closed:
            return False
        request_id = self._next_id
        self._next_id = request_id + 1
        data = self._pack([0, request_id, method, args])
        if self._out:
            self._out += data
        else:
            # _write(), inline: one call less per streamed chunk.
            try:
                sent = self._sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._fail(exc)
                return False  # none of it sent
            if sent < len(data):
                self._out += data[sent:]
                self._loop.add_writer(self._fd, self._writable)
        self._answered[request_id] = answered
        return True

    def request(self, method: str, args: list[Any]) -> asyncio.Future[Any]:
        """Send a request; the future holds Neovim's answer or the error (the socket
        is watched until it is answered)."""
        future: asyncio.Future[Any] = self._loop.create_future()

        def answered(error: str | None, result: Any) -> None:
            self._futures -= 1
            self._update_watch()
            if future.done():
                return
            if error is None:
                future.set_result(result)
            elif self.closed:
                future.set_exception(NvimChannelError(error))
            else:
                future.set_exception(RuntimeError(error))

        self._futures += 1
        if not self.call(method, args, answered):
            answered("the panel's channel to Neovim is closed", None)
            return future
        self._update_watch()
        return future

    def watch(self, on: bool) -> None:
        """Be woken by Neovim's answers (``on``), or read them only when polled."""
        self._wanted = on
        self._update_watch()

    def poll(self) -> None:
        """Read the answers that arrived, without waiting: their callbacks run here."""
        if not self.closed:
            self._readable()

    # -- the socket ---------------------------------------------------------------------

    def _update_watch(self) -> None:
        want = (self._wanted or self._futures > 0) and not self.closed
        if want == self._watching:
            return
        self._watching = want
        if want:
            self._loop.add_reader(self._fd, self._readable)
        else:
            self._loop.remove_reader(self._fd)

    def _writable(self) -> None:
        try:
            sent = self._sock.send(self._out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._fail(exc)
            return
        del self._out[:sent]
        if not self._out:
            self._loop.remove_writer(self._fd)

    def _readable(self) -> None:
        try:
            size = self._sock.recv_into(self._buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._fail(exc)
            return
        if not size:
            self._fail(None)
            return
        self._unpacker.feed(self._view[:size])
        try:
            for message in self._unpacker:
                self._received(message)
        except Exception as exc:  # bytes that are not msgpack-rpc
            self._fail(exc)

    def _received(self, message: Any) -> None:
        if not isinstance(message, list) or len(message) != 4 or message[0] != 1:
            return  # Neovim's notifications (nvim_error_event) and requests: not ours
        answered = self._answered.pop(message[1], None)
        if answered is None:
            return
        error, result = message[2], message[3]
        try:
            if error:
                text = error[1] if isinstance(error, list) and len(error) > 1 else error
                answered(str(text), None)
            else:
                answered(None, result)
        except Exception:
            # The caller's failure, not the connection's: it stays open for the rest.
            log.exception("a callback of an answer from Neovim failed")

    def _fail(self, exc: BaseException | None) -> None:
        if exc is not None:
            log.warning("the panel's channel to Neovim failed: %s", exc)
        self.close()

    def close(self) -> None:
        """Close the connection; what waits for an answer is told it failed."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            if self._watching:
                self._loop.remove_reader(self._fd)
            if self._out:
                self._loop.remove_writer(self._fd)
        self._watching = False
        with contextlib.suppress(OSError):
            self._sock.close()
        answered, self._answered = self._answered, {}
        for callback in answered.values():
            try:
                callback("the panel's channel to Neovim closed", None)
            except Exception:
                log.exception("a callback of an answer from Neovim failed")


async def connect_own(address: str, host_pid: int) -> NvimChannel | None:
    """A channel to the Neovim at ``address`` if that Neovim says its host is the
    process ``host_pid`` (an address inherited from another Neovim is not this
    panel's), else None."""
    from ..nvim_editor import host_pid_request

    channel = await NvimChannel.connect(address)
    if channel is None:
        return None
    try:
        pid = await asyncio.wait_for(channel.request(*host_pid_request()), 10)
    except (Exception, asyncio.TimeoutError) as exc:
        pid = f"unknown ({exc})"
    if pid != host_pid:
        log.info("%s is not the Neovim of this host (its host: %s)", address, pid)
        channel.close()
        return None
    return channel
