"""The agent's requests to the plugin, the ACP client's side: session updates
(as the panel's events), ``session/request_permission`` (waiting for the user;
an edit naming a path the plugin does not show is answered ``cancelled`` before
anything is shown), and ``fs/read_text_file`` / ``fs/write_text_file`` (through
Neovim's buffers, agent/files.py; a write only as the user's answer granted it,
grants.py). A request that fails is answered with a JSON-RPC error, never left
waiting."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...paths import shown
from ..model import FINISHED, Notice, SessionUpdate, ToolCallUpdate

if TYPE_CHECKING:
    from .state import AcpSession

log = logging.getLogger(__name__)

_TEXT_CHUNKS = frozenset({"agent_message_chunk", "agent_thought_chunk"})
_NOTIFICATION_KEYS = frozenset({"sessionId", "update", "_meta"})
_CHUNK_KEYS = frozenset({"sessionUpdate", "content", "_meta"})
_TEXT_KEYS = frozenset({"type", "text", "_meta"})
# How a message chunk that is a mode update starts (events._MODE_UPDATE): it goes
# the general way, the rest of a stream straight to the session.
_MODE_UPDATE = "[MODE_UPDATE]"


def plain_text_chunk(params: dict[str, Any]) -> tuple[str, str] | None:
    """``(kind, text)`` of a message or thought chunk of plain text, in the form the
    schema takes without a doubt (only its own keys, each of its type); None for
    anything else, which the schema's models validate."""
    update = params.get("update")
    if type(update) is not dict:
        return None
    kind = update.get("sessionUpdate")
    content = update.get("content")
    if kind not in _TEXT_CHUNKS or type(content) is not dict:
        return None
    text = content.get("text")
    if type(text) is not str or content.get("type") != "text":
        return None
    if len(params) == 2 and len(update) == 2 and len(content) == 2 and "sessionId" in params:
        return kind, text  # the usual form: only the keys just read, no set built
    if (
        not params.keys() <= _NOTIFICATION_KEYS
        or not update.keys() <= _CHUNK_KEYS
        or not content.keys() <= _TEXT_KEYS
    ):
        return None
    # ``_meta`` is rare: an object, or absent (or null) at each level.
    if ("_meta" in params or "_meta" in update or "_meta" in content) and not all(
        type(v.get("_meta")) in (dict, type(None)) for v in (params, update, content)
    ):
        return None
    return kind, text


class ClientRequests:
    """The handlers of what the agent asks of the plugin, for one session:
    ``session`` is the state they share with the conversation's other parts,
    ``settle`` wakes the turn's waiter when a permission starts waiting."""

    def __init__(self, session: AcpSession, settle: Callable[[], None]) -> None:
        self._session = session
        self._settle = settle

    async def handle(self, method: str, params: Any, is_notification: bool) -> Any:
        from acp.exceptions import RequestError
        from pydantic import ValidationError

        from ..files import FileAccessError

        try:
            if method == "session/update":
                self.on_update(params)
                return None
            if method == "session/request_permission":
                return await self._on_permission(params)
            if method == "fs/read_text_file":
                return await self._on_read(params)
            if method == "fs/write_text_file":
                return await self._on_write(params)
            if is_notification:
                log.info("ignoring the agent's notification %s", method)
                return None
            raise RequestError.method_not_found(method)
        except RequestError:
            if is_notification:
                return None
            raise
        except FileAccessError as exc:
            log.warning("%s failed: %s", method, exc)
            raise RequestError(-32603, str(exc)) from None
        except ValidationError as exc:
            log.warning("ignoring a malformed %s from the agent: %s", method, exc)
            if is_notification:
                return None
            raise RequestError.invalid_params({"details": str(exc)}) from None
        except Exception as exc:
            log.exception("handling the agent's %s failed", method)
            if is_notification:
                return None
            raise RequestError(-32603, f"{type(exc).__name__}: {exc}") from None

    def on_update(self, params: Any) -> None:
        session = self._session
        if type(params) is dict and len(params) == 2:
            # The bulk of a stream, a message chunk of plain text in its usual form
            # (``sessionId`` and ``update``; ``sessionUpdate`` and ``content``; ``type``
            # and ``text``: what plain_text_chunk() takes, read once), straight to the
            # session's transcript and its view: no event built, no dispatch on its
            # type (issue 25 item 3). A mode update (text_chunk()) goes the general way.
            update = params.get("update")
            if (
                type(update) is dict
                and len(update) == 2
                and update.get("sessionUpdate") == "agent_message_chunk"
                and (content := update.get("content")).__class__ is dict
                and len(content) == 2
                and content.get("type") == "text"
                and (text := content.get("text")).__class__ is str
                and params.get("sessionId") == session.id is not None
                and not text.startswith(_MODE_UPDATE)
                and (taker := getattr(session.events, "message_text", None)) is not None
            ):
                taker(text)
                return
        if not isinstance(params, dict) or params.get("sessionId") != session.id:
            update = params.get("update") if isinstance(params, dict) else None
            kind = update.get("sessionUpdate") if isinstance(update, dict) else None
            log.debug("ignoring an update for another session: %s", kind)
            return
        assert session.updates is not None
        chunk = plain_text_chunk(params)
        # The bulk of a stream is plain text, in the one form the schema takes as it
        # is: no models built for it (issue 25 item 3).
        events = session.updates.text_chunk(*chunk) if chunk else self._validated_update(params)
        for event in events:
            if isinstance(event, SessionUpdate) and "mode" in event.values:
                session.grants.agent_mode(event.values["mode"])
        session.emit(*events)

    def _validated_update(self, params: dict[str, Any]) -> list[Any]:
        from pydantic import ValidationError

        from . import messages as schema

        session = self._session
        assert session.updates is not None
        try:
            notification = schema.SessionNotification.model_validate(params)
        except ValidationError:
            update = params.get("update")
            kind = update.get("sessionUpdate") if isinstance(update, dict) else None
            log.info("ignoring a session update the plugin does not know: %s", kind)
            return []
        return [self._as_written(e) for e in session.updates.translate(notification.update)]

    def _as_written(self, event: Any) -> Any:
        """A finished edit the user changed shows the text written, not the proposal."""
        session = self._session
        if not isinstance(event, ToolCallUpdate) or event.call.id not in session.written:
            return event
        if event.call.status not in FINISHED:
            return event
        from .events import unified_diff

        path, old, written = session.written.pop(event.call.id)
        call = event.call
        if call.status != "succeeded" or session.updates is None:
            return event
        return session.updates.put(call.but(result=unified_diff(path, old, written)))

    async def _on_permission(self, params: Any) -> Any:
        from . import messages as schema

        session = self._session
        request = schema.RequestPermissionRequest.model_validate(params)
        if request.session_id != session.id or session.updates is None:
            return {"outcome": {"outcome": "cancelled"}}
        refused = await self._vet_paths(request.tool_call)
        if refused is not None:
            return refused
        call = session.updates.permission(request.tool_call, request.options)
        if call.id in session.permissions:
            # A second request with the id of one still waiting: the agent's ids are
            # not the user's. It gets an id of its own, so each is answered.
            original, n = call.id, 2
            while f"{original}#{n}" in session.permissions or session.updates.call(
                f"{original}#{n}"
            ):
                n += 1
            call = call.but(id=f"{original}#{n}")
            session.aliases[call.id] = original
        pending = session.permissions.open(call)
        session.emit(session.updates.put(call))
        self._settle()
        try:
            option_id = await pending.answer
        finally:
            session.permissions.close(call.id)
        if option_id is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": option_id}}

    async def _vet_paths(self, tool_call: Any) -> Any:
        """Every file an edit request names passes openDiff's path policy before
        anything of it is shown (files.py's ``check_edit``); else the request is
        answered ``cancelled`` and the transcript says why, the path escaped."""
        from ..files import FileAccessError
        from . import messages as schema

        session = self._session
        assert session.files is not None and session.updates is not None
        for item in tool_call.content or ():
            if not isinstance(item, schema.FileEditToolCallContent):
                continue
            try:
                await session.files.check_edit(item.path)
            except FileAccessError as exc:
                log.warning("refused the agent's edit request: %s", exc)
                shown_call = session.updates.call(tool_call.tool_call_id)
                if shown_call is not None and shown_call.status not in FINISHED:
                    done = shown_call.but(status="cancelled", confirmation=None, error=str(exc))
                    session.emit(session.updates.put(done))
                session.emit(
                    Notice(
                        f"The agent asked to edit a file the plugin does not show: {exc}."
                        " Answered cancelled.",
                        "warning",
                    )
                )
                return {"outcome": {"outcome": "cancelled"}}
        return None

    async def _on_read(self, params: Any) -> Any:
        from . import messages as schema

        request = schema.ReadTextFileRequest.model_validate(params)
        assert self._session.files is not None
        text = await self._session.files.read(request.path, request.line, request.limit)
        return {"content": text}

    async def _on_write(self, params: Any) -> Any:
        from ..files import FileAccessError
        from . import messages as schema

        session = self._session
        request = schema.WriteTextFileRequest.model_validate(params)
        assert session.files is not None
        if any(p == request.path and w == request.content for p, _, w in session.written.values()):
            # The agent writes the user's version itself (IDE twin): its tool result
            # tells the model; no note needed.
            session.notes.pop(request.path, None)
        try:
            session.grants.take(request.path, request.content)
        except PermissionError as exc:
            session.emit(Notice(f"The agent's write was refused: {exc}.", "warning"))
            raise FileAccessError(str(exc)) from None
        try:
            await session.files.write(request.path, request.content)
        except Exception as exc:
            session.emit(
                Notice(f"The agent's write to {shown(request.path)} failed: {exc}", "error")
            )
            raise
        return {}
