"""The A2A client's updates as the panel's events: messages, thoughts, tool
calls, the task's state and turn ends (:meth:`EventMapper.handle`).

Every file an edit confirmation names is checked before anything of it is shown
(:meth:`EventMapper.check_paths`, awaited before each update is handled), by
``openDiff``'s rules (``EditorFiles.check_edit``: no control character, a
regular file or none yet, the workspace policy unless loaded in Neovim): a
failing one is refused as below, never shown nor opened in a diff tab.

What the user was shown is what is answered: a confirmation whose tool call
comes again, still waiting, with another path, command, kind or tool
or arguments (:func:`_changes`) is refused: shown as cancelled, the user told, and the agent
answered with a rejection once its stream ends (``A2ATransport._after_stream``).

0.25.2 hangs when an answer carries modified content: the answer goes without it
and, once the agent's write succeeded, the user's version is written over it
(:meth:`EventMapper._finish_modified_edit`), so the file ends with what the user
accepted; the agent is told in the next prompt. That write goes to the path the
user reviewed, through Neovim's buffer or off the loop on disk, by the agent's
file rules (agent/files.py: the path policy, regular files only); if it cannot,
the user's text is kept in a private file the message names.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...paths import shown as shown_path
from ..model import (
    Confirmation,
    MessageChunk,
    Notice,
    SessionUpdate,
    StatusChange,
    ThoughtChunk,
    ToolCall,
    ToolCallUpdate,
    ToolOutput,
    TurnEnd,
)
from . import devtool
from .state import TERMINAL_STATES, TURN_END_STATES

if TYPE_CHECKING:
    from ..transport import TransportContext
    from .state import A2ATask

log = logging.getLogger(__name__)


def _changes(shown: Confirmation, now: Confirmation) -> list[str]:
    """What differs between the question the user was shown and ``now``: what
    would run or be written (the text proposed may change: the user's answer
    carries the text they accepted)."""
    out = []
    for name in ("kind", "file_path", "command", "directory", "server", "tool", "inputs"):
        before, after = getattr(shown, name), getattr(now, name)
        if before != after:
            out.append(f"{name.replace('_', ' ')} {before!r} became {after!r}")
    return out


class EventMapper:
    """The mapping of the agent's updates to the panel's events, for the task of
    ``task`` (the state the conversation's parts share); ``context`` gives the
    editor and the path policy the edits are checked and written by."""

    def __init__(self, context: TransportContext, task: A2ATask) -> None:
        self._context = context
        self._task = task
        # call id -> (path, the user's text, the proposal)
        self._modified: dict[str, tuple[str, str, str]] = {}
        self._shown: dict[str, Confirmation] = {}  # call id -> the question the user sees
        self._refused: set[str] = set()  # calls changed after they were shown
        self._refusals: list[tuple[str, Confirmation]] = []  # to answer after the stream
        self._writes: set[asyncio.Task[None]] = set()  # the user's versions being written
        self._calls: dict[str, ToolCall] = {}

    def reset(self) -> None:
        """A new connection: no call is known."""
        self._calls.clear()
        self._modified.clear()
        self._shown.clear()
        self._refused.clear()
        self._refusals.clear()

    def refused(self, call_id: str) -> bool:
        """``call_id`` was refused (it changed after it was shown, or its path)."""
        return call_id in self._refused

    def answered(self, call_id: str) -> Confirmation | None:
        """The question of ``call_id`` the user answered: the first it asked (_as_shown)."""
        return self._shown.pop(call_id, None)

    def edited(self, call_id: str, path: str, text: str, proposal: str) -> None:
        """The user accepted their own ``text`` for ``path``: written once the agent
        wrote ``proposal`` (0.25.2 cannot take modified content)."""
        self._modified[call_id] = (path, text, proposal)

    async def next_refusal(self) -> tuple[str, Confirmation] | None:
        """Once the user's versions are written: the next refused call to reject to the
        agent, with the question shown (None: nothing waits for the stream's end)."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)
        return self._refusals.pop(0) if self._refusals else None

    def handle(self, update: devtool.Update) -> None:
        task = self._task
        events = task.events
        if update.task_id and update.task_id != task.task_id:
            task.task_id = update.task_id
            task.seen.clear()
            events.emit(SessionUpdate({"task_id": update.task_id}))
        for earlier in update.history:
            self.handle(earlier)
        if update.message_id:
            if update.message_id in task.seen:  # shown already (a restored task)
                update = dataclasses.replace(update, texts=[], data=[])
            else:
                task.seen.add(update.message_id)
        if update.context_id and update.context_id != task.context_id:
            task.context_id = update.context_id
            events.emit(SessionUpdate({"context_id": update.context_id}))
        if update.kind == "artifact":
            match = re.match(r"tool-(.+)-output$", update.artifact_id)
            if match:
                events.emit(ToolOutput(match.group(1), "".join(update.texts), update.append))
            return
        dialect, kind = update.event_kind()
        if dialect and dialect != task.dialect:
            task.dialect = dialect
            events.emit(SessionUpdate({"dialect": dialect}))
        error = update.error()
        if error:
            events.emit(Notice(error, "error"))
        if kind in ("tool-call-update", "tool-call-confirmation", "thought") or (
            not kind and update.data
        ):
            self._handle_data(kind, update.data)
            if kind:
                return
        if kind in ("text-content", "") or update.kind == "message":
            for text in update.texts:
                events.emit(MessageChunk(text))
        elif kind == "citation":
            for text in update.texts:
                events.emit(Notice(text, "info"))
        if update.state:
            task.state = update.state
            if update.state in TERMINAL_STATES and task.conversation is not None:
                self._back_to_conversation()
            if update.state == "failed" and update.texts and kind == "state-change":
                events.emit(Notice(" ".join(update.texts), "error"))
            if (
                update.state in TURN_END_STATES
                and kind in ("state-change", "")
                and not any(
                    c.confirmation is not None and c.status == "pending"
                    for c in self._calls.values()
                )
            ):
                events.emit(TurnEnd(update.state))
            elif update.state == "working":
                events.emit(StatusChange("working"))

    def _handle_data(self, kind: str, parts: list[Any]) -> None:
        """Tool calls and thoughts (DataParts); without a kind (a task's history)
        each is read by its shape."""
        task = self._task
        events = task.events
        for data in parts:
            if not isinstance(data, Mapping):
                continue
            call = devtool.tool_call(task.dialect, data) if kind != "thought" else None
            if call is not None:
                call = self._as_shown(call)
                self._calls[call.id] = call
                events.emit(ToolCallUpdate(call))
                if call.status == "succeeded" and call.id in self._modified:
                    self._finish_modified_edit(call.id)
            elif kind == "thought" or (
                not kind and "subject" in data and set(data) <= {"subject", "description"}
            ):
                events.emit(
                    ThoughtChunk(str(data.get("description") or ""), str(data.get("subject") or ""))
                )

    def _as_shown(self, call: ToolCall) -> ToolCall:
        """``call`` as the panel may show it: a question the user is looking at never
        changes under them. The first confirmation of a call is what the user sees
        until they answer; the same call waiting again with another path, command,
        kind or tool is refused (cancelled here, rejected to the agent after the
        stream), and a refused call never asks again."""
        task = self._task
        conf = call.confirmation
        if call.id in self._refused:
            before = self._calls.get(call.id, call)  # what was shown, paths escaped
            return call.but(
                confirmation=None,
                status="cancelled" if conf is not None else call.status,
                title=before.title,
                input=before.input,
                locations=before.locations,
            )
        if conf is None or call.status != "pending":
            self._shown.pop(call.id, None)  # answered or ended: a new question is new
            return call
        shown = self._shown.setdefault(call.id, conf)
        changes = _changes(shown, conf)
        if not changes:
            return call
        self._refused.add(call.id)
        self._refusals.append((call.id, shown))
        why = "; ".join(changes)
        log.warning("tool call %s changed after it was shown: %s", call.id, why)
        task.events.emit(
            Notice(
                f"The agent changed tool call {call.id} after it was shown to you ({why}):"
                " refused. Nothing of it runs; the agent is told.",
                "warning",
            )
        )
        task.notes.append(
            f"[Tool call {call.id} was refused: it changed after the user was shown it"
            f" ({why}). Ask again as a new tool call if it is still needed.]"
        )
        before = self._calls.get(call.id, call)
        return before.but(confirmation=None, status="cancelled", error=f"changed: {why}")

    def _back_to_conversation(self) -> None:
        """A slash command's task ended: follow-ups go to the conversation again."""
        task = self._task
        task.back_to_conversation()
        task.events.emit(
            SessionUpdate({"task_id": task.task_id or None, "context_id": task.context_id or None})
        )

    def _finish_modified_edit(self, call_id: str) -> None:
        """The agent wrote its proposal: write the user's version (off the stream:
        ``A2ATransport._after_stream`` waits for it before the turn ends)."""
        path, text, proposal = self._modified.pop(call_id)
        writing = asyncio.get_running_loop().create_task(
            self._write_users_version(path, text, proposal)
        )
        self._writes.add(writing)
        writing.add_done_callback(self._writes.discard)

    async def check_paths(self, update: devtool.Update) -> None:
        """Refuse each edit confirmation of ``update`` whose file fails ``openDiff``'s
        path policy, before :meth:`handle` can show it (issue 21 items 1 and 9)."""
        from ..files import EditorFiles, FileAccessError

        task = self._task
        for earlier in update.history:
            await self.check_paths(earlier)
        dialect, kind = update.event_kind()
        if kind not in ("tool-call-update", "tool-call-confirmation") and (kind or not update.data):
            return
        for data in update.data:
            if not isinstance(data, Mapping):
                continue
            call = devtool.tool_call(dialect or task.dialect, data)
            if call is None or call.id in self._refused or call.id in self._shown:
                continue  # a shown one that changes is refused by _as_shown
            conf = call.confirmation
            if conf is None or call.status != "pending" or conf.kind != "edit":
                continue
            try:
                if not conf.file_path:
                    raise FileAccessError("the edit names no file")
                await EditorFiles(self._context.editor, self._context.paths).check_edit(
                    conf.file_path
                )
            except FileAccessError as exc:
                self._refuse_unshown(call, conf, str(exc))

    def _refuse_unshown(self, call: ToolCall, conf: Confirmation, why: str) -> None:
        """Refuse ``call`` before it is shown: cancelled here, rejected to the agent
        after the stream (``A2ATransport._after_stream``), the user and agent told."""
        task = self._task
        log.warning("refused the agent's edit %s: %s", call.id, why)
        self._refused.add(call.id)
        self._refusals.append((call.id, conf))
        self._calls[call.id] = call.but(
            confirmation=None,
            status="cancelled",
            title=f"edit refused: {shown_path(conf.file_path or '')}",
            input=None,
            locations=(),
            error=f"refused: {why}",
        )
        task.events.emit(ToolCallUpdate(self._calls[call.id]))
        task.events.emit(
            Notice(f"The agent's edit {call.id} was refused, nothing shown: {why}", "warning")
        )
        task.notes.append(
            f"[Tool call {call.id} was refused: {why}. Edit files inside the workspace,"
            " by their absolute paths.]"
        )

    async def _write_users_version(self, path: str, text: str, proposal: str) -> None:
        """Write ``text`` to ``path`` (the path the user reviewed) by the rules of the
        agent's own writes: through Neovim's buffer when the file is loaded, else on
        disk off the loop, regular files only, within the path policy."""
        from ..files import EditorFiles, FileAccessError, keep_users_text

        task = self._task
        try:
            await EditorFiles(self._context.editor, self._context.paths).write(path, text)
        except FileAccessError as exc:
            try:
                kept = await asyncio.to_thread(keep_users_text, path, text)
            except OSError as failed:
                log.error("could not keep the user's version of %s: %s", path, failed)
                kept = "nowhere: it could not be saved either"
            task.events.emit(
                Notice(
                    f"Your edited version of {shown_path(path)} was not written: {exc}."
                    f" Your text is kept in {kept} .",
                    "error",
                )
            )
            return
        task.events.emit(
            Notice(
                f"Wrote your edited version of {shown_path(path)} (the A2A server 0.25.2 cannot"
                " take modified content: it wrote its proposal, then the plugin wrote yours).",
                "info",
            )
        )
        from ..review import user_edit_note

        task.notes.append(user_edit_note(path, proposal, text))
