"""Following the A2A task's stream, and following it again when it breaks:
a stream that breaks while its task lives is followed again
(``tasks/resubscribe``, then ``tasks/get``; :meth:`TaskStream._resume`); 0.25.2
has cancelled that turn by then, which the reconnect shows. A reconnected
client asks whether its task is still alive (:meth:`TaskStream.restore_task`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..model import Notice, SessionUpdate, StatusChange
from ..transport import TransportError
from . import devtool
from .state import TERMINAL_STATES, TURN_END_STATES

if TYPE_CHECKING:
    from .connection import A2AConnection
    from .events import EventMapper
    from .state import A2ATask

log = logging.getLogger(__name__)
RESUME_ATTEMPTS = 3


class TaskStream:
    """A turn's stream, resumed when the connection (not the task) ends: read on
    ``connection``, each update checked and shown by ``updates``, for the task of
    ``task`` (the state the conversation's parts share)."""

    def __init__(self, connection: A2AConnection, updates: EventMapper, task: A2ATask) -> None:
        self._connection = connection
        self._updates = updates
        self._task = task

    async def take(self, update: devtool.Update) -> None:
        await self._updates.check_paths(update)
        self._updates.handle(update)

    async def consume(self, stream: AsyncIterator[Any], *, to_turn_end: bool = False) -> None:
        """Stream a turn's events; a stream that breaks while the task is alive is
        followed again (:meth:`_resume`)."""
        try:
            await self._follow(stream, to_turn_end=to_turn_end)
        except (asyncio.CancelledError, TransportError):
            raise
        except Exception as exc:
            connection, task = self._connection, self._task
            if connection.stopping:
                return
            if connection.server_exited():
                return  # the watcher says why
            log.warning("the A2A stream broke: %s", exc, exc_info=True)
            if task.task_id and task.state not in TERMINAL_STATES and connection.client is not None:
                await self._resume(exc)
                return
            await self._dropped(exc)

    async def _follow(self, stream: AsyncIterator[Any], *, to_turn_end: bool = False) -> None:
        """Handle a stream's events; ``to_turn_end``: stop at the end of the turn (a
        resubscription may stay open while the task waits for the user)."""
        from google.protobuf import json_format  # type: ignore[import-untyped]

        async for event in stream:
            update = devtool.from_sdk(json_format.MessageToDict(event))
            await self.take(update)
            if to_turn_end and update.state in TURN_END_STATES:
                break

    async def _dropped(self, exc: BaseException) -> None:
        await self._connection.drop()
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

        task = self._task
        task_id = task.task_id
        task.events.emit(
            Notice(
                f"The connection to the agent dropped while task {task_id} was running"
                f" ({exc}); reconnecting to the task.",
                "warning",
            )
        )
        task.events.emit(StatusChange("working", "reconnecting to the agent"))
        for attempt in range(1, RESUME_ATTEMPTS + 1):
            client = self._connection.client
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
                got = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
            except (asyncio.CancelledError, TransportError):
                raise
            except Exception as failed:
                log.info("tasks/get %s (try %d): %s", task_id, attempt, failed)
                exc = failed
                continue
            from google.protobuf import json_format

            if task.state not in TURN_END_STATES:
                task.events.emit(StatusChange("working"))  # no longer "reconnecting"
            await self.take(devtool.from_sdk({"task": json_format.MessageToDict(got)}))
            if task.state in TURN_END_STATES:
                task.events.emit(
                    Notice(f"Reconnected to task {task_id}: it is {task.state}.", "info")
                )
                return
            # Still running and the stream gone again: follow it once more.
        await self._dropped(exc)

    async def restore_task(self) -> None:
        """Reconnected to an agent that may still hold the task: ``tasks/get`` tells
        whether it is alive; if so, follow-ups stay on it, else a new one starts."""
        from a2a.types import a2a_pb2
        from google.protobuf import json_format

        client, task = self._connection.client, self._task
        assert client is not None
        try:
            got = await client.get_task(a2a_pb2.GetTaskRequest(id=task.task_id))
        except Exception as exc:
            log.info("task %s is gone: %s", task.task_id, exc)
            task.task_id = task.state = ""
            task.events.emit(SessionUpdate({"task_id": None}))
            return
        update = devtool.from_sdk({"task": json_format.MessageToDict(got)})
        task.state = update.state
        if update.state in TERMINAL_STATES:
            task.task_id = ""
            task.events.emit(SessionUpdate({"task_id": None}))
            return
        task.events.emit(Notice(f"Reconnected: task {task.task_id} is {update.state}.", "info"))
