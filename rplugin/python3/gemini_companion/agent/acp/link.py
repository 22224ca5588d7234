"""A conversation's line to the agent process: the child it uses (shared with the
other conversations: shared.py), the one way requests go to the agent, and the
child's end. A broken connection stops the child, so that the next prompt starts
it again; the conversation hears of it through the two callbacks it gives
(``drop_waiting``: answer what waits ``cancelled``; ``emit``: the panel's events)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..model import Notice, StatusChange
from ..transport import TransportError
from .process import AgentChild, spawn
from .wire import AgentError, error_text

if TYPE_CHECKING:
    from ..model import AgentEvent
    from .options import AcpOptions
    from .shared import AcpTransport, SharedAgent

log = logging.getLogger(__name__)


class AgentLink:
    """The child a conversation talks to, and why it is gone. Server loop only."""

    def __init__(
        self,
        shared: SharedAgent,
        owner: AcpTransport,
        drop_waiting: Callable[[], None],
        emit: Callable[[AgentEvent], None],
    ) -> None:
        self._shared = shared
        self._owner = owner  # what shared.py knows the conversation by
        self._drop_waiting = drop_waiting
        self._emit = emit
        self.child: AgentChild | None = None
        self.exit_message: str | None = None
        """Why the agent is gone (it exited, broke the connection, or hung)."""
        self.stopping = False

    @property
    def alive(self) -> bool:
        child = self.child
        return child is not None and child.returncode is None and self.exit_message is None

    def failure(self) -> TransportError:
        return TransportError(self.exit_message or "the agent is not running")

    def begin(self) -> bool:
        """A new start: forget why the last run ended; True when it had failed."""
        failed = self.exit_message is not None
        self.stopping = False
        self.exit_message = None
        return failed

    async def spawn(self, options: AcpOptions, workspace: str, env: Mapping[str, str]) -> None:
        """Start the agent; shared.py routes what it sends."""
        shared = self._shared
        child = await spawn(
            options.cmd,
            cwd=workspace,
            env={**env, **options.env},
            handler=shared.handle,
            on_garbage=shared.garbage,
            on_refused=shared.refused,
            on_update=shared.on_update,
        )
        child.tasks.append(asyncio.get_running_loop().create_task(shared.watch(child)))
        self.child = child
        shared.attach(self._owner, child)

    def join(self, child: AgentChild) -> None:
        """Use the agent the other conversations use."""
        self._shared.attach(self._owner, child)
        self.child = child

    async def shutdown(self) -> None:
        """Let the agent go: stopped when no other conversation uses it (shared.py)."""
        child, self.child = self.child, None
        if child is not None and self._shared.release(self._owner, child):
            await child.stop()

    async def close(self) -> None:
        """The conversation stops: its child's exit is no longer news to it."""
        self.stopping = True
        await self.shutdown()

    async def request(self, method: str, params: Mapping[str, Any]) -> Any:
        from acp.exceptions import RequestError

        child = self.child
        if child is None or self.exit_message is not None:
            raise self.failure()
        try:
            return await child.connection.send_request(method, dict(params))
        except RequestError as exc:
            raise AgentError(exc.code, error_text(exc), exc.data) from None
        except ConnectionError:
            # The output closed: the exit (and its code) follows at once, normally.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(child.wait()), 2)
            if self.exit_message is None and child is self.child:
                # The connection broke but the process lives on: stopped, so that the
                # next prompt starts it again as the message says.
                self.exit_message = child.exit_text()
                log.warning("%s", self.exit_message)
                self._drop_waiting()
                await self.shutdown()
                self._emit(StatusChange("error", self.exit_message))
            raise TransportError(self.exit_message or child.exit_text()) from None

    async def notify(self, method: str, params: Mapping[str, Any]) -> bool:
        """Send a notification; False when there is no agent to send it to."""
        child = self.child
        if child is None or self.exit_message is not None:
            return False
        with contextlib.suppress(ConnectionError):
            await child.connection.send_notification(method, dict(params))
        return True

    async def give_up(self, message: str) -> None:
        """The agent hangs: stop it, and say why (the next prompt starts it again)."""
        log.warning("%s", message)
        self.exit_message = message
        await self.shutdown()
        self._emit(StatusChange("error", message))

    async def exited(self, child: AgentChild) -> bool:
        """The agent process ``child`` exited: True when that ends this conversation's
        run (reported here, once)."""
        if child is not self.child or self.stopping:
            return False
        message = child.exit_text()
        log.warning("%s", message)
        if self.exit_message is None:
            self.exit_message = message
        self._drop_waiting()
        with contextlib.suppress(Exception):
            await child.connection.close()
        self._emit(StatusChange("error", message))
        return True

    def garbage(self, child: AgentChild, line: bytes) -> None:
        child.garbage_lines += 1
        text = line.decode("utf-8", "replace")
        log.warning("agent stdout, not ACP (ignored): %s", text[:2000])
        if child.garbage_lines == 1 and child is self.child:
            excerpt = text if len(text) <= 120 else text[:117] + "..."
            self._emit(
                Notice(
                    f"The agent printed something that is not ACP on its stdout (ignored;"
                    f" more in the log): {excerpt}",
                    "warning",
                )
            )

    def refused(self, child: AgentChild, why: str) -> None:
        log.warning("refused from the agent: %s", why)
        if why not in child.refused and child is self.child:
            child.refused.add(why)
            self._emit(Notice(f"The agent sent {why}: refused (more in the log).", "warning"))


async def within(timeout: float, cmd: tuple[str, ...], coro: Any, what: str) -> Any:
    """``coro``, or the error that the agent did not answer ``what`` in time."""
    try:
        return await asyncio.wait_for(coro, timeout)
    except asyncio.TimeoutError:
        raise TransportError(
            f"the agent did not answer {what} within {timeout:g} s"
            f" ({shlex.join(cmd)}; its stderr is in the log)"
        ) from None
