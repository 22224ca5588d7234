"""What the ACP client knows of its agent, shared by the pieces of
:class:`~.transport.AcpTransport` (a ladder of classes, one module each:
``state.py``, ``client_requests.py``, ``turns.py``, ``handshake.py``,
``transport.py``): the child and its session, the turn, the permissions waiting
and the grants, and the one way requests go to the agent (:meth:`AcpState._request`:
a broken connection stops the child, so that the next prompt starts it again)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ..model import StatusChange
from ..transport import EventSink, Transport, TransportContext, TransportError
from .grants import WriteGrants
from .options import AcpOptions
from .permissions import PendingPermissions
from .process import AgentChild
from .wire import AgentError, error_text

if TYPE_CHECKING:
    from ..files import EditorFiles
    from .events import UpdateTranslator
    from .sessions import SessionStore
    from .shared import AcpTransport, SharedAgent


log = logging.getLogger(__name__)


class AcpState(Transport):
    """The ACP client's state; the classes above it read and change it."""

    protocol = "acp"

    def __init__(self, context: TransportContext) -> None:
        super().__init__(context)
        self.options = AcpOptions.from_mapping(context.options)
        self._events: EventSink | None = None
        self._child: AgentChild | None = None
        self._session_id: str | None = None
        self._agent: dict[str, Any] = {}
        self._capabilities: dict[str, Any] = {}
        self._auth_methods: list[dict[str, Any]] = []
        self._modes: list[str] = []
        self._models: list[str] = []
        self._updates: UpdateTranslator | None = None
        self._files: EditorFiles | None = None
        self._store: SessionStore | None = None
        self._permissions = PendingPermissions()
        self._grants = WriteGrants()
        # The ids given to requests that came with the id of one still waiting
        # (21.8): alias -> the agent's id, whose updates the alias follows.
        self._aliases: dict[str, str] = {}
        # Edits the user accepted with changes: what was written (call id -> path,
        # old text, written text), shown in place of the agent's own diff; and what
        # the agent is told with the next prompt (by file).
        self._written: dict[str, tuple[str, str | None, str]] = {}
        self._notes: dict[str, str] = {}
        self._chosen_model: str | None = None  # the user's (:GeminiAgentModel)
        self._current_model: Any = None
        self._turn: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._stopping = False
        self._exit_message: str | None = None

    @property
    def connected(self) -> bool:
        child = self._child
        return (
            child is not None
            and child.returncode is None
            and self._session_id is not None
            and self._exit_message is None
        )

    def _emit(self, *events: Any) -> None:
        if self._events is not None:
            for event in events:
                self._events.emit(event)

    def _settle(self) -> None:
        self._settled.set()

    def _require_session(self) -> str:
        if self._session_id is None or not self.connected:
            raise TransportError(self._exit_message or "the agent is not running")
        return self._session_id

    @property
    def session_id(self) -> str | None:
        """The ACP session of this conversation (shared.py routes by it)."""
        return self._session_id

    def _shared(self) -> SharedAgent:
        from .shared import shared_agent

        return shared_agent(self.context.shared)

    async def _shutdown_child(self) -> None:
        """Let the agent go: stopped when no other conversation uses it (shared.py)."""
        child, self._child = self._child, None
        if child is not None and self._shared().release(cast("AcpTransport", self), child):
            await child.stop()

    def _answer_all_cancelled(self) -> None:
        for call in self._permissions.cancel_all():
            if self._updates is not None:
                self._emit(self._updates.put(call.but(status="cancelled", confirmation=None)))

    async def _request(self, method: str, params: Mapping[str, Any]) -> Any:
        from acp.exceptions import RequestError

        child = self._child
        if child is None or self._exit_message is not None:
            raise TransportError(self._exit_message or "the agent is not running")
        try:
            return await child.connection.send_request(method, dict(params))
        except RequestError as exc:
            raise AgentError(exc.code, error_text(exc), exc.data) from None
        except ConnectionError:
            # The output closed: the exit (and its code) follows at once, normally.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(child.wait()), 2)
            if self._exit_message is None and child is self._child:
                # The connection broke but the process lives on: stopped, so that the
                # next prompt starts it again as the message says.
                self._exit_message = child.exit_text()
                log.warning("%s", self._exit_message)
                self._answer_all_cancelled()
                await self._shutdown_child()
                self._emit(StatusChange("error", self._exit_message))
            raise TransportError(self._exit_message or child.exit_text()) from None
