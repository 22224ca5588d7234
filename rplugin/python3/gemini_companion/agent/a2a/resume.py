"""Following the A2A task's stream, and following it again when it breaks:
a stream that breaks while its task lives is followed again
(``tasks/resubscribe``, then ``tasks/get``; :meth:`A2AStream._resume`); 0.25.2
has cancelled that turn by then, which the reconnect shows. A reconnected
client asks whether its task is still alive (:meth:`A2AStream._restore_task`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from ..model import Notice, SessionUpdate, StatusChange
from ..transport import TransportError
from . import devtool
from .events import A2AEvents
from .state import TERMINAL_STATES, TURN_END_STATES

log = logging.getLogger(__name__)
RESUME_ATTEMPTS = 3


class A2AStream(A2AEvents):
    """A turn's stream, resumed when the connection (not the task) ends."""

    async def _consume(self, stream: AsyncIterator[Any], *, to_turn_end: bool = False) -> None:
        """Stream a turn's events; a stream that breaks while the task is alive is
        followed again (:meth:`_resume`)."""
        try:
            await self._follow(stream, to_turn_end=to_turn_end)
        except (asyncio.CancelledError, TransportError):
            raise
        except Exception as exc:
            if self._stopping:
                return
            server = self._server
            if server is not None and server.returncode is not None:
                return  # the watcher says why
            log.warning("the A2A stream broke: %s", exc, exc_info=True)
            if self.task_id and self.state not in TERMINAL_STATES and self._client is not None:
                await self._resume(exc)
                return
            await self._dropped(exc)

    async def _follow(self, stream: AsyncIterator[Any], *, to_turn_end: bool = False) -> None:
        """Handle a stream's events; ``to_turn_end``: stop at the end of the turn (a
        resubscription may stay open while the task waits for the user)."""
        from google.protobuf import json_format  # type: ignore[import-untyped]

        async for event in stream:
            update = devtool.from_sdk(json_format.MessageToDict(event))
            await self._check_paths(update)
            self._handle(update)
            if to_turn_end and update.state in TURN_END_STATES:
                break

    async def _dropped(self, exc: BaseException) -> None:
        self._connected = False
        await self._close_http()
        raise TransportError(
            f"the connection to the A2A agent dropped ({exc}); the next prompt reconnects"
        ) from exc

    async def _resume(self, exc: BaseException) -> None:
        """The stream of a running task broke (the connection, not the task, ended):
        resubscribe to the task (``tasks/resubscribe``; a2a-sdk's ``subscribe``) to
        follow it live, then ``tasks/get`` for its state and the messages the break
        cost. Messages already shown are known by their ids and not shown again;
        tool calls are updated in place. An agent that refuses the resubscription
        (the task ended meanwhile, or it cannot) is read with ``tasks/get`` alone."""
        from a2a.types import a2a_pb2

        task_id = self.task_id
        self.events.emit(
            Notice(
                f"The connection to the agent dropped while task {task_id} was running"
                f" ({exc}); reconnecting to the task.",
                "warning",
            )
        )
        self.events.emit(StatusChange("working", "reconnecting to the agent"))
        for attempt in range(1, RESUME_ATTEMPTS + 1):
            client = self._client
            if client is None:
                break
            try:
                await self._follow(
                    client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=task_id)),
                    to_turn_end=True,
                )
            except (asyncio.CancelledError, TransportError):
                raise
            except Exception as refused:  # ended, unknown, not supported, or down
                log.info("resubscribing to task %s (try %d): %s", task_id, attempt, refused)
            try:
                task = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
            except (asyncio.CancelledError, TransportError):
                raise
            except Exception as failed:
                log.info("tasks/get %s (try %d): %s", task_id, attempt, failed)
                exc = failed
                continue
            from google.protobuf import json_format

            if self.state not in TURN_END_STATES:
                self.events.emit(StatusChange("working"))  # no longer "reconnecting"
            update = devtool.from_sdk({"task": json_format.MessageToDict(task)})
            await self._check_paths(update)
            self._handle(update)
            if self.state in TURN_END_STATES:
                self.events.emit(
                    Notice(f"Reconnected to task {task_id}: it is {self.state}.", "info")
                )
                return
            # Still running and the stream gone again: follow it once more.
        await self._dropped(exc)

    async def _restore_task(self) -> None:
        """Reconnected to an agent that may still hold the task: ``tasks/get`` tells
        whether it is alive; if so, follow-ups stay on it, else a new one starts."""
        from a2a.types import a2a_pb2
        from google.protobuf import json_format

        assert self._client is not None
        try:
            task = await self._client.get_task(a2a_pb2.GetTaskRequest(id=self.task_id))
        except Exception as exc:
            log.info("task %s is gone: %s", self.task_id, exc)
            self.task_id = self.state = ""
            self.events.emit(SessionUpdate({"task_id": None}))
            return
        update = devtool.from_sdk({"task": json_format.MessageToDict(task)})
        self.state = update.state
        if update.state in TERMINAL_STATES:
            self.task_id = ""
            self.events.emit(SessionUpdate({"task_id": None}))
            return
        self.events.emit(Notice(f"Reconnected: task {self.task_id} is {update.state}.", "info"))
