"""The agent session: one transport, the transcript, the pending confirmations.

Protocol-neutral: it folds a transport's events (``model.py``) into the
transcript and the panel (``view.py``), and turns the user's requests from the
panel into calls of the :class:`~.transport.Transport`. Everything runs on one
asyncio loop (the server's); requests from Neovim arrive through
:meth:`AgentSession.request`.

Edits the agent asks permission for open in the diff tab of IDE mode through an
:class:`EditReview` (one diff mechanism with two callers); the user's answer there
comes back as :meth:`AgentSession.edit_answered`. Nothing the agent asks about
is answered without the user.

Long because it is the panel's one state machine: the life of each request
(start, prompt, answer, cancel, commands, modes, resume) and the folding of every
event into the transcript share its state; what stands alone is out (view.py,
render.py, review.py, model.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Mapping
from typing import Any, Protocol

from . import render, replayed
from .model import (
    REJECT_KINDS,
    AgentEvent,
    AgentStatus,
    Block,
    CommandsUpdate,
    MessageChunk,
    Notice,
    Prompt,
    Reference,
    SessionUpdate,
    SlashCommand,
    StatusChange,
    ThoughtChunk,
    ToolCall,
    ToolCallUpdate,
    ToolOutput,
    Transcript,
    TurnEnd,
    UserMessage,
)
from .transport import Transport, TransportError
from .view import PanelView

log = logging.getLogger(__name__)

_MESSAGE_FITS = 50
"""Characters of a refusal that fit in the message area beside its prefix."""


class EditReview(Protocol):
    """The diff tab, as the agent uses it (implemented over diff.py's views)."""

    async def open(self, call_id: str, file_path: str, new_content: str) -> None:
        """Show the proposal; the user's answer comes back through
        :meth:`AgentSession.edit_answered`. Raises when the view cannot open."""

    def close(self, call_id: str) -> None:
        """Close the view without an answer (answered elsewhere, or obsolete)."""

    def expect(self, call_id: str, file_path: str, new_content: str) -> None:
        """The edit waits for the user (before :meth:`open`)."""

    def settle(self, call_id: str, accepted: bool, content: str | None) -> Awaitable[bool]:
        """The user answered the edit: recorded at once, sent by the awaitable (True:
        the agent got the accepted text another way, and writes it itself)."""

    def turn_ended(self) -> None:
        """The agent's turn ended."""


class BadRequestError(ValueError):
    """A request from the panel that cannot be carried out, with the reason."""


def _str(args: Mapping[str, Any], name: str, *, optional: bool = False) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        if optional:
            return None
        raise BadRequestError(f"'{name}' is missing")
    if not isinstance(value, str):
        raise BadRequestError(f"'{name}' must be a string")
    return value


def _references(raw: Any) -> tuple[Reference, ...]:
    if not raw:
        return ()
    if not isinstance(raw, list):
        raise BadRequestError("'references' must be a list")
    refs = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
            raise BadRequestError("each reference needs a 'path'")
        start, end = item.get("start_line"), item.get("end_line")
        kind = item.get("kind") or "file"
        if kind not in ("file", "diagnostics"):
            raise BadRequestError(f"unknown reference kind {kind!r}")
        refs.append(
            Reference(
                str(item["path"]),
                int(start) if start is not None else None,
                int(end) if end is not None else None,
                item.get("text") if isinstance(item.get("text"), str) else None,
                kind,
            )
        )
    return tuple(refs)


# How many starts a request's task had seen when the request arrived (in the task's
# context): a start that failed after that is its answer too.
_STARTS_SEEN: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "gemini_companion_starts_seen", default=None
)


class _ShownStartFailureError(TransportError):
    """The start this request waited for failed, and its failure is shown already."""


class AgentSession:
    """The panel's core. Use on its loop only; ``request`` is the entry from Neovim."""

    def __init__(
        self, transport: Transport, view: PanelView, review: EditReview | None = None
    ) -> None:
        self.transport = transport
        self.view = view
        self.review = review
        self.transcript = Transcript()
        self.status: AgentStatus = "stopped"
        self.detail = ""
        self.info: dict[str, Any] = {}
        self.commands: tuple[SlashCommand, ...] = ()
        self._turn: asyncio.Task[None] | None = None
        self._start_lock = asyncio.Lock()
        # Start attempts so far, and the last one's failure: requests that waited for
        # a start that failed get that failure, already shown, rather than a second
        # start (the panel's connect and its first prompt arrive together).
        self._starts = 0
        self._start_failure: TransportError | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reviewing: set[str] = set()
        # Prompt blocks of a resumed conversation (drawn again as their chunks come),
        # and whether each was the transcript's first.
        self._replayed: set[int] = set()
        self._replayed_first: dict[int, bool] = {}
        self._replayed_attachments: dict[int, list[str]] = {}
        self._stopped = False

    # -- state ---------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """What ``require("gemini_companion.agent").state()`` returns."""
        pending = []
        for call_id in self.transcript.pending:
            block = self.transcript.tool_blocks[call_id]
            conf = block.call.confirmation if block.call else None
            if conf is None:
                continue
            pending.append(
                {
                    "id": call_id,
                    "kind": conf.kind,
                    "title": conf.title,
                    "options": [{"id": o.id, "name": o.name, "kind": o.kind} for o in conf.options],
                    **({"file_path": conf.file_path} if conf.file_path else {}),
                    **({"command": conf.command} if conf.command else {}),
                    **({"directory": conf.directory} if conf.directory else {}),
                    **({"server": conf.server} if conf.server else {}),
                    **({"tool": conf.tool} if conf.tool else {}),
                    **({"description": conf.description} if conf.description else {}),
                }
            )
        names: list[str] = []
        for command in self.commands:
            names.extend(command.names())
        state = {
            **self.info,
            "protocol": self.transport.protocol,
            "state": self.status,
            "pending": pending,
            "commands": names,
        }
        if self.detail:
            state["detail"] = self.detail
        return state

    def _publish(self) -> None:
        self.view.state(self.state)  # built when the batch goes: once per batch

    def _set_status(self, status: AgentStatus, detail: str = "") -> None:
        if status == "idle" and self.transcript.pending:
            status = "waiting"
        if (status, detail) != (self.status, self.detail):
            self.status, self.detail = status, detail
            self._publish()

    # -- events from the transport ---------------------------------------------------------

    def emit(self, event: AgentEvent) -> None:
        if self._stopped and not isinstance(event, StatusChange):
            return
        try:
            self._handle(event)
        except Exception:  # a bad event must not kill the transport's reader
            log.exception("agent event %r failed", event)

    def message_text(self, text: str) -> None:
        """More of the agent's answer (a :class:`MessageChunk`'s text, whose event is
        not built): the bulk of a stream, taken here with no event object and no
        dispatch on its type (issue 25 item 3). The same as ``emit(MessageChunk(text))``;
        ``text`` comes from the wire, already valid Unicode (acp/wire.py)."""
        if self._stopped or not text:
            return
        try:
            blocks = self.transcript.blocks
            last = blocks[-1] if blocks else None
            if last is None or last.kind != "message":
                last = self.transcript.new_block("message")
                self.view.block(last.id, render.message_start(), "message")
            last.parts.append(text)
            self.view.append_valid(last.id, text)
        except Exception:  # a bad chunk must not kill the transport's reader
            log.exception("agent message chunk failed")

    def _handle(self, event: AgentEvent) -> None:
        if isinstance(event, MessageChunk):
            self._text("message", event.text)
        elif isinstance(event, ThoughtChunk):
            self._thought(event)
        elif isinstance(event, ToolCallUpdate):
            self._tool_call(event.call)
        elif isinstance(event, ToolOutput):
            block = self.transcript.tool_blocks.get(event.call_id)
            if block is not None and block.call is not None:
                text = block.call.live_output + event.text if event.append else event.text
                self._tool_call(block.call.but(live_output=text))
        elif isinstance(event, StatusChange):
            self._set_status(event.status, event.detail)
            if event.status == "error" and event.detail:
                self._notice(event.detail, "error")
        elif isinstance(event, SessionUpdate):
            for key, value in event.values.items():
                if value is None:
                    self.info.pop(key, None)
                else:
                    self.info[key] = value
            self._publish()
        elif isinstance(event, CommandsUpdate):
            self.commands = event.commands
            self._publish()
        elif isinstance(event, Notice):
            self._notice(event.text, event.level)
        elif isinstance(event, UserMessage):
            self._replayed_prompt(event.text)
        elif isinstance(event, TurnEnd):
            if self.review is not None:
                self.review.turn_ended()
            # Not while the prompt's or answer's task still runs (over A2A it writes
            # the user's version of an edit after the turn's end): a prompt would be
            # refused as busy while the panel said idle. That task's end sets it.
            if self.status in ("working", "starting") and not self.busy():
                self._set_status("idle")

    def _text(self, kind: str, text: str) -> None:
        if not text:
            return
        last = self.transcript.last
        if last is None or last.kind != kind:
            last = self.transcript.new_block(kind)
            self.view.block(last.id, render.message_start(), kind)
        last.append(text)
        self.view.append(last.id, text)

    def _replayed_prompt(self, text: str) -> None:
        """A prompt of a resumed conversation, drawn as a live one: the user's words
        and the attachment lines, not what the CLI wrote itself (replayed.py); the
        chunks of one message join its block."""
        words = replayed.user_words(text)
        if words is None:
            return
        text, attachments = words
        last = self.transcript.last
        if last is not None and last.kind == "prompt" and last.id in self._replayed:
            last.append(text)
        else:
            first = not self.transcript.blocks
            last = self.transcript.new_block("prompt", text=text)
            self._replayed.add(last.id)
            self._replayed_first[last.id] = first
        shown = self._replayed_attachments.setdefault(last.id, [])
        shown.extend(a for a in attachments if a not in shown)
        lines = render.prompt_lines(last.text, shown, self._replayed_first[last.id])
        self.view.block(last.id, lines, "prompt")

    def _thought(self, event: ThoughtChunk) -> None:
        last = self.transcript.last
        if last is None or last.kind != "thought" or event.subject:
            last = self.transcript.new_block("thought", subject=event.subject)
            self.view.block(last.id, render.thought_start(event.subject), "thought")
        if event.text:
            last.append(event.text)
            self.view.append(last.id, event.text, render.THOUGHT)

    def _notice(self, text: str, level: str) -> None:
        block = self.transcript.new_block("notice", text=text, level=level)
        self.view.block(block.id, render.block_lines(block), "notice")
        if level == "error":
            self.view.notify(f"Gemini agent: {text}", level)

    def _draw_tool(self, block: Block) -> None:
        call = block.call
        assert call is not None
        waits = call.confirmation is not None and call.status == "pending"
        self.view.block(block.id, render.block_lines(block), "tool", call.id if waits else None)

    def _tool_call(self, call: ToolCall) -> None:
        tb = self.transcript.tool_blocks
        block = tb.get(call.id)
        if block is None:
            block = self.transcript.new_block("tool", call=call)
            tb[call.id] = block
        else:
            block.call = call
        pending = self.transcript.pending
        waits = call.confirmation is not None and call.status == "pending"
        changed = False
        if waits and call.id not in pending:
            pending.append(call.id)
            changed = True
            conf = call.confirmation
            if conf is not None and conf.kind == "edit" and conf.file_path is not None:
                self._open_review(call.id, conf.file_path, conf.new_content or "")
        elif not waits and call.id in pending:
            self._resolved(call.id)
            changed = True
        self._draw_tool(block)
        if changed:
            if pending and self.status in ("working", "idle"):
                self._set_status("waiting")
            elif not pending and self.status == "waiting":
                self._set_status("working")
            self._publish()

    def _resolved(self, call_id: str) -> None:
        self.transcript.pending.remove(call_id)
        if call_id in self._reviewing:
            self._reviewing.discard(call_id)
            if self.review is not None:
                self.review.close(call_id)

    def _open_review(self, call_id: str, path: str, content: str) -> None:
        if self.review is None:
            return
        review = self.review
        self._reviewing.add(call_id)
        review.expect(call_id, path, content)

        async def show() -> None:
            try:
                await review.open(call_id, path, content)
            except Exception as exc:
                self._reviewing.discard(call_id)
                log.exception("opening the diff for %s failed", path)
                self._notice(f"could not open the diff for {path}: {exc}", "warning")

        self._spawn(show())

    # -- requests from Neovim ---------------------------------------------------------------

    def request(self, action: str, args: Mapping[str, Any]) -> None:
        """A request from the panel (host.lua); runs in the background, errors shown."""
        handler = {
            "prompt": self._prompt_request,
            "answer": self._answer_request,
            "reject": self._reject_request,
            "cancel": self._cancel_request,
            "command": self._command_request,
            "connect": self._connect_request,
            "mode": self._mode_request,
            "model": self._model_request,
            "sessions": self._sessions_request,
            "resume": self._resume_request,
        }.get(action)
        if handler is None:
            self._notice(f"unknown agent request {action!r}", "error")
            return
        _STARTS_SEEN.set(self._starts)  # this callback's own context: the task's copy
        self._spawn(self._guarded(handler, args))

    async def _guarded(self, handler: Any, args: Mapping[str, Any]) -> None:
        try:
            await handler(args)
        except BadRequestError as exc:
            # The message area shows one line of an 80-column screen: a refusal too
            # long for it is in the transcript in full too; a short one stays out.
            if len(str(exc)) > _MESSAGE_FITS:
                self._notice(str(exc), "warning")
            self.view.notify(f"Gemini agent: {exc}", "warning")
        except _ShownStartFailureError:
            pass  # the request that made the start shows why it failed
        except TransportError as exc:
            self._notice(str(exc), "error")
        except Exception as exc:
            log.exception("agent request failed")
            self._notice(f"{type(exc).__name__}: {exc}", "error")

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def ensure_started(self) -> None:
        seen = _STARTS_SEEN.get()
        if seen is None:
            seen = self._starts
        async with self._start_lock:
            if self.transport.connected:
                return
            if self._starts != seen and self._start_failure is not None:
                raise _ShownStartFailureError(str(self._start_failure))
            self._starts += 1
            self._start_failure = None
            self._stopped = False
            self._set_status("starting")
            try:
                await self.transport.start(self)
            except TransportError as exc:
                self._start_failure = exc
                self._set_status("error", str(exc))
                raise
            except Exception as exc:
                log.exception("the agent did not start")
                self._set_status("error", str(exc))
                self._start_failure = TransportError(f"the agent did not start: {exc}")
                raise self._start_failure from exc
            self._set_status("idle")

    async def _connect_request(self, args: Mapping[str, Any]) -> None:
        await self.ensure_started()

    def busy(self) -> bool:
        return self._turn is not None and not self._turn.done()

    async def _prompt_request(self, args: Mapping[str, Any]) -> None:
        text = _str(args, "text")
        assert text is not None
        await self.prompt(Prompt(text, _references(args.get("references"))))

    async def prompt(self, prompt: Prompt) -> None:
        if self.busy() or self.status == "waiting":
            raise BadRequestError(
                "the agent is still busy with the last prompt: wait, answer it, or cancel it"
                " (:GeminiAgentCancel); your text is in the prompt history"
            )
        first = not self.transcript.blocks
        block = self.transcript.new_block("prompt", text=prompt.text)
        mentions = [ref.label() for ref in prompt.references]
        self.view.block(block.id, render.prompt_lines(prompt.text, mentions, first), "prompt")
        await self._run_turn(self.transport.prompt, prompt)

    async def _run_turn(self, fn: Any, *args: Any) -> None:
        # The turn is taken before the agent is ready: a prompt sent while it starts
        # waits for it (and is answered), a second one meanwhile is told to wait.
        self._turn = asyncio.current_task()
        try:
            await self.ensure_started()
            self._set_status("working")
            try:
                await fn(*args)
            except asyncio.CancelledError:
                raise
            except TransportError as exc:
                self._set_status("error", str(exc))
                self._notice(str(exc), "error")
                return
        finally:
            self._turn = None
        if self.status == "working":
            self._set_status("idle")

    def _pending_call(self, call_id: str | None) -> ToolCall:
        pending = self.transcript.pending
        if not pending:
            raise BadRequestError("nothing is waiting for an answer")
        wanted = call_id or pending[0]
        if wanted not in pending:
            raise BadRequestError(f"tool call {wanted} is not waiting for an answer")
        call = self.transcript.tool_blocks[wanted].call
        assert call is not None and call.confirmation is not None
        return call

    async def _answer_request(self, args: Mapping[str, Any]) -> None:
        call = self._pending_call(_str(args, "call_id", optional=True))
        await self.answer(call, _str(args, "option", optional=True), reject=False)

    async def _reject_request(self, args: Mapping[str, Any]) -> None:
        call = self._pending_call(_str(args, "call_id", optional=True))
        await self.answer(call, _str(args, "option", optional=True), reject=True)

    async def answer(
        self,
        call: ToolCall,
        wanted: str | None,
        *,
        reject: bool,
        new_content: str | None = None,
    ) -> None:
        conf = call.confirmation
        assert conf is not None
        if reject:
            # Never an allow option: with no reject option offered, the answer is
            # the protocol's cancellation (None).
            try:
                option = conf.rejection(wanted)
            except ValueError as exc:
                raise BadRequestError(f"{conf.title}: {exc}") from None
        else:
            option = conf.option(wanted)
            if option is None:
                raise BadRequestError(
                    f"no option {wanted!r} for {conf.title}: choose one of {conf.option_ids()}"
                )
        # Every request that waits on an edit gets the one answer (review.py: the IDE
        # twin of an ACP edit), recorded with it.
        settled = None
        if self.review is not None and conf.kind == "edit":
            accepted = option is not None and option.kind not in REJECT_KINDS
            text = new_content if new_content is not None else conf.new_content
            settled = self.review.settle(call.id, accepted, text)
        # The answer is recorded before it is sent: a second :GeminiAccept must not
        # answer the same call twice.
        self._tool_call(call.but(confirmation=None))
        self._set_status("working")
        if settled is not None:
            await settled  # the IDE twin first: the agent then finds its answer there
        await self._run_answer(call.id, option.id if option else None, new_content)

    async def _run_answer(
        self, call_id: str, option_id: str | None, new_content: str | None
    ) -> None:
        self._turn = asyncio.current_task()
        try:
            await self.transport.answer(call_id, option_id, new_content)
        finally:
            self._turn = None
        if self.status == "working":
            self._set_status("idle")

    async def edit_answered(
        self, call_id: str, accepted: bool, content: str | None, option: str | None = None
    ) -> None:
        """The user answered an edit in the diff tab (content: their accepted text;
        option: the agent's option they named, e.g. ``:GeminiAccept proceed_always``)."""
        self._reviewing.discard(call_id)
        block = self.transcript.tool_blocks.get(call_id)
        call = block.call if block is not None else None
        if call is None or call.confirmation is None or call_id not in self.transcript.pending:
            log.info("edit %s answered after it stopped waiting", call_id)
            return
        proposal = call.confirmation.new_content
        modified = content if accepted and content is not None and content != proposal else None
        try:
            await self.answer(call, option, reject=not accepted, new_content=modified)
        except (TransportError, BadRequestError) as exc:
            self._notice(str(exc), "error")

    async def _cancel_request(self, args: Mapping[str, Any]) -> None:
        await self.cancel()

    async def cancel(self) -> None:
        if not self.transport.connected:
            return
        for call_id in list(self.transcript.pending):
            block = self.transcript.tool_blocks[call_id]
            if block.call is not None:
                self._tool_call(block.call.but(confirmation=None, status="cancelled"))
        await self.transport.cancel()
        turn = self._turn
        if turn is not None and not turn.done():
            try:
                await asyncio.wait_for(asyncio.shield(turn), 5)
            except (asyncio.TimeoutError, Exception):
                turn.cancel()
        self._set_status("idle", "cancelled")
        self._notice("Cancelled.", "info")

    async def _command_request(self, args: Mapping[str, Any]) -> None:
        name = _str(args, "name")
        assert name is not None
        name = name.lstrip("/").strip()
        rest = _str(args, "args", optional=True) or ""
        first = not self.transcript.blocks
        block = self.transcript.new_block("prompt", text=f"/{name} {rest}".rstrip())
        self.view.block(block.id, render.prompt_lines(block.text, [], first), "prompt")
        await self._run_turn(self.transport.run_command, name, rest)

    async def _mode_request(self, args: Mapping[str, Any]) -> None:
        mode = _str(args, "mode")
        assert mode is not None
        await self.ensure_started()
        await self.transport.set_mode(mode)

    async def _model_request(self, args: Mapping[str, Any]) -> None:
        model = _str(args, "model")
        assert model is not None
        await self.ensure_started()
        await self.transport.set_model(model)

    async def _sessions_request(self, args: Mapping[str, Any]) -> None:
        await self.ensure_started()
        sessions = await self.transport.sessions()
        self.info["sessions"] = [dict(s) for s in sessions]
        self._publish()

    async def _resume_request(self, args: Mapping[str, Any]) -> None:
        session_id = _str(args, "session_id")
        assert session_id is not None
        if self.transport.connected and session_id == self.info.get("session_id"):
            raise BadRequestError("that conversation is open already")
        await self.ensure_started()
        await self.transport.resume(session_id)
        self.view.bottom()

    async def stop(self) -> None:
        """Stop the transport (and the agent it started); the transcript stays."""
        self._stopped = True
        for call_id in list(self.transcript.pending):
            self._resolved(call_id)
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()
        try:
            await self.transport.stop()
        except Exception:
            log.exception("stopping the agent failed")
        self._set_status("stopped")
        self._publish()
        self.view.close()  # later batches (the transcript stays) go through the editor
