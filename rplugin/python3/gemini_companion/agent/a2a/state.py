"""What the A2A client knows of its task, shared by the pieces of
:class:`~.transport.A2ATransport` (each a class in this ladder: ``state.py``,
``events.py``, ``resume.py``, ``commands.py``, ``transport.py``): the connection,
the task and its context, the tool calls and what the user was shown of them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..model import Confirmation, ToolCall
from ..transport import EventSink, Transport
from . import devtool
from .server import LocalServer

if TYPE_CHECKING:
    import httpx
    from a2a.client import Client

TERMINAL_STATES = {"completed", "failed", "canceled", "rejected"}
TURN_END_STATES = TERMINAL_STATES | {"input-required", "auth-required"}


class A2AState(Transport):
    """The A2A client's state; the classes above it read and change it."""

    protocol = "a2a"

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._events: EventSink | None = None
        self._server: LocalServer | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._http: httpx.AsyncClient | None = None
        self._client: Client | None = None
        self._base_url = ""
        self._rpc_url = ""
        self.dialect = devtool.CODER_AGENT
        self.task_id = ""
        self.context_id = ""
        self.state = ""
        self._connected = False
        self._stopping = False
        # call id -> (path, the user's text, the proposal)
        self._modified: dict[str, tuple[str, str, str]] = {}
        self._shown: dict[str, Confirmation] = {}  # call id -> the question the user sees
        self._refused: set[str] = set()  # calls changed after they were shown
        self._refusals: list[tuple[str, Confirmation]] = []  # to answer after the stream
        self._writes: set[asyncio.Task[None]] = set()  # the user's versions being written
        self._notes: list[str] = []  # for the agent, with the next prompt
        self._calls: dict[str, ToolCall] = {}
        self._seen: set[str] = set()  # ids of the current task's messages already shown
        self._conversation: tuple[str, str, str] | None = None  # while a command's task runs
        self.server_version = ""
        self.extension_uri = ""
        # Sent with every request to agent.a2a.url (a started server gets its secret).
        self.headers: dict[str, str] = {}
        self.secret = ""  # the started server's

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def events(self) -> EventSink:
        assert self._events is not None
        return self._events

    def _options(self) -> Mapping[str, Any]:
        return self.context.options

    async def _close_http(self) -> None:
        client, self._client = self._client, None
        http, self._http = self._http, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
        if http is not None:
            with contextlib.suppress(Exception):
                await http.aclose()
