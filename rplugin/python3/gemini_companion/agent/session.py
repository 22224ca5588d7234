"""The agent session: one transport driving one conversation, as the panel asks.

Protocol-neutral. Its parts, one job each: the conversation's state and its
status machine (conversation.py), the transport's events folded into the
transcript and the panel (fold.py, drawn by view.py), the confirmations waiting
for the user and the diff tab of edits (confirmations.py), and the panel's
requests read and checked (requests.py). Here: the life of a turn (start,
prompt, command, answer, cancel), the agent's settings (mode, model, resume)
and the stop. Everything runs on one asyncio loop (the server's); requests from
Neovim arrive through :meth:`AgentSession.request`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine, Mapping
from typing import Any

from . import attach, requests
from .confirmations import Confirmations, EditReview, edited
from .consent import pending_entry
from .conversation import Conversation
from .fold import TranscriptFold
from .image import Image, ImageSource
from .model import AgentEvent, Prompt, Reference, SlashCommand, ToolCall, Transcript
from .requests import BadRequestError, ShownStartFailureError
from .transport import Transport, TransportError
from .view import PanelView

DRAIN_BEFORE_CLOSE = 2.0  # s: at most, for the panel's last batches before the channel closes

__all__ = ["AgentSession", "BadRequestError", "EditReview"]

log = logging.getLogger(__name__)


class AgentSession:
    """The panel's core. Use on its loop only; ``request`` is the entry from Neovim,
    and the session is the transport's :class:`~.transport.EventSink`."""

    def __init__(
        self,
        transport: Transport,
        view: PanelView,
        review: EditReview | None = None,
        conversation: Conversation | None = None,
    ) -> None:
        self.transport = transport
        self.view = view
        self.conversation = conversation or Conversation()
        self.confirmations = Confirmations(
            self.conversation.transcript,
            review,
            self.spawn,
            lambda text: self.notice(text, "warning"),
        )
        self.fold = TranscriptFold(self.conversation, view, self.confirmations, self._publish)
        self._start_lock = asyncio.Lock()
        # Start attempts so far, and the last one's failure: requests that waited for
        # a start that failed get that failure, already shown, rather than a second
        # start (the panel's connect and its first prompt arrive together).
        self.starts = 0
        self._start_failure: TransportError | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- the conversation's state --------------------------------------------------------

    @property
    def review(self) -> EditReview | None:
        return self.confirmations.review

    @property
    def transcript(self) -> Transcript:
        return self.conversation.transcript

    @property
    def status(self) -> str:
        return self.conversation.status

    @property
    def detail(self) -> str:
        return self.conversation.detail

    @property
    def info(self) -> dict[str, Any]:
        return self.conversation.info

    @property
    def commands(self) -> tuple[SlashCommand, ...]:
        return self.conversation.commands

    def state(self) -> dict[str, Any]:
        """What ``require("gemini_companion.agent").state()`` returns."""
        pending = []
        for call_id in self.transcript.pending:
            block = self.transcript.tool_blocks[call_id]
            conf = block.call.confirmation if block.call else None
            if conf is None:
                continue
            pending.append(pending_entry(call_id, conf))
        names: list[str] = []
        for command in self.commands:
            names.extend(command.names())
        state = {
            **self.info,
            "conversation": self.conversation.id,
            "protocol": self.transport.protocol,
            "state": self.status,
            "pending": pending,
            "commands": names,
        }
        if self.detail:
            state["detail"] = self.detail
        if self.conversation.usage:
            state["usage"] = self.conversation.usage
        return state

    def _publish(self) -> None:
        if not self.conversation.halted:
            self.view.state(self.state)  # built when the batch goes: once per batch

    def busy(self) -> bool:
        return self.conversation.busy()

    # -- events from the transport (fold.py) ----------------------------------------------

    def emit(self, event: AgentEvent) -> None:
        self.fold.emit(event)

    def message_text(self, text: str) -> None:
        self.fold.message_text(text)

    def notice(self, text: str, level: str) -> None:
        self.fold.notice(text, level)

    def notify(self, text: str, level: str) -> None:
        self.view.notify(text, level)

    # -- requests from Neovim (requests.py) ------------------------------------------------

    def request(self, action: str, args: Mapping[str, Any]) -> None:
        """A request from the panel (host.lua); runs in the background, errors shown."""
        requests.dispatch(self, action, args)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def ensure_started(self) -> None:
        seen = requests.STARTS_SEEN.get()
        if seen is None:
            seen = self.starts
        async with self._start_lock:
            if self.transport.connected:
                return
            if self.starts != seen and self._start_failure is not None:
                raise ShownStartFailureError(str(self._start_failure))
            if self.conversation.halted:
                raise TransportError("the agent was stopped")
            self.starts += 1
            self._start_failure = None
            conversation = self.conversation
            conversation.started = conversation.starting = True
            conversation.error = None
            self.fold.settle()
            try:
                await self.transport.start(self)
            except Exception as exc:
                if not isinstance(exc, TransportError):
                    log.exception("the agent did not start")
                    exc = TransportError(f"the agent did not start: {exc}")
                self._start_failure = exc
                conversation.starting = False
                conversation.fail(str(exc))
                self._publish()
                raise exc from None
            conversation.starting = False
            self.fold.settle()

    async def prompt_request(
        self,
        text: str,
        refs: tuple[Reference, ...],
        args: Mapping[str, Any],
        images: tuple[ImageSource, ...] = (),
    ) -> None:
        """A prompt from the panel: what it attaches is checked and read first
        (attach.py); one outside the workspace goes back to the panel, which asks
        the user about its real path, and nothing is sent. So does a prompt with
        images to an agent that takes none (known once it started)."""
        self._refuse_if_busy()
        editor = self.transport.context.editor
        if images:
            await self.ensure_started()
            if not self.transport.takes_images():
                why = (
                    "the agent takes no images (its initialize declares no"
                    " promptCapabilities.image): the images are dropped"
                )
                editor.attach_refused(attach.without_images(args, None), [], why)
                return
        read: tuple[Image, ...] = ()
        if refs or images:
            confirmed = [str(p) for p in args.get("confirmed") or ()]
            try:
                refs, read = await attach.prepare(
                    refs, self.transport.context.paths(), confirmed, images
                )
            except attach.ConsentNeededError as exc:
                editor.attach_refused(dict(args), list(exc.paths), "")
                return
            except attach.AttachError as exc:
                dropped = () if exc.image is None else (exc.image,)
                editor.attach_refused(attach.without_images(args, dropped), [], str(exc))
                return
        await self.prompt(Prompt(text, refs, read))

    def _refuse_if_busy(self) -> None:
        if self.busy() or self.status == "waiting":
            raise BadRequestError(
                "the agent is still busy with the last prompt: wait, answer it, or cancel it"
                " (:GeminiAgentCancel); your text is in the prompt history"
            )

    async def prompt(self, prompt: Prompt) -> None:
        self._refuse_if_busy()
        labels = [ref.label() for ref in prompt.references]
        self.fold.prompt(prompt.text, labels + [image.label() for image in prompt.images])
        await self._run_turn(self.transport.prompt, prompt)

    async def command(self, name: str, args: str) -> None:
        self._refuse_if_busy()  # a slash command is a turn like a prompt
        self.fold.prompt(f"/{name} {args}".rstrip(), [])
        await self._run_turn(self.transport.run_command, name, args)

    async def _run_turn(self, fn: Any, *args: Any) -> None:
        # The turn is taken before the agent is ready: a prompt sent while it starts
        # waits for it (and is answered), a second one meanwhile is told to wait.
        async with self._activity():
            # Shielded: a cancel meanwhile drops the turn, not the agent's start.
            start = asyncio.ensure_future(self.ensure_started())
            start.add_done_callback(lambda f: f.cancelled() or f.exception())
            await asyncio.shield(start)
            self.conversation.error = None  # a new turn: the last one's failure is over
            self.fold.settle()
            await fn(*args)

    @contextlib.asynccontextmanager
    async def _activity(self) -> AsyncIterator[None]:
        """The current task is part of the conversation's turn; however it ends, the
        status is settled (idle, waiting or error: never "working" with no task),
        and a failure of the agent is shown and becomes the status."""
        try:
            async with self.conversation.activity():
                self._publish()  # "working" goes in the batch that draws the prompt
                try:
                    yield
                except TransportError as exc:
                    if isinstance(exc, ShownStartFailureError) or self.conversation.halted:
                        raise
                    self.conversation.error = str(exc)
                    self.notice(str(exc), "error")
        finally:
            self._publish()

    async def answer_pending(self, call_id: str | None, option: str | None, reject: bool) -> None:
        """The user's answer to a confirmation (the oldest without ``call_id``)."""
        call = self.confirmations.pending_call(call_id)
        await self.answer(call, option, reject=reject)

    async def answer(
        self,
        call: ToolCall,
        wanted: str | None,
        *,
        reject: bool,
        new_content: str | None = None,
    ) -> None:
        option = self.confirmations.option(call, wanted, reject=reject)
        settled = self.confirmations.settle_edit(call, option, new_content)
        # The answer is recorded before it is sent: a second :GeminiAccept must not
        # answer the same call twice. From here the answer is part of the turn (its
        # task is, while it waits for the IDE twin too).
        async with self._activity():
            self.conversation.error = None
            self.fold.tool_call(call.but(confirmation=None))
            self.fold.settle()
            if settled is not None:
                await settled  # the IDE twin first: the agent then finds its answer there
            await self.transport.answer(call.id, option.id if option else None, new_content)

    async def edit_answered(
        self, call_id: str, accepted: bool, content: str | None, option: str | None = None
    ) -> None:
        """The user answered an edit in the diff tab (content: their accepted text;
        option: the agent's option they named, e.g. ``:GeminiAccept proceed_always``)."""
        self.confirmations.answered_in_tab(call_id)
        call = self.confirmations.waiting_call(call_id)
        if call is None:
            log.info("edit %s answered after it stopped waiting", call_id)
            return
        modified = edited(call, accepted, content)
        try:
            await self.answer(call, option, reject=not accepted, new_content=modified)
        except (TransportError, BadRequestError) as exc:
            self.notice(str(exc), "error")

    async def cancel(self) -> None:
        if not self.transport.connected:
            # The agent is starting: the prompt waiting for it is never sent (the
            # start goes on, for the next prompt).
            waiting = self.conversation.activities() - {asyncio.current_task()}
            for task in waiting:
                task.cancel()
            if waiting:
                await asyncio.wait(waiting)
                self.fold.settle("cancelled")
                self.notice("Cancelled: the prompt was not sent.", "info")
            return
        # The cancel is part of the turn until the agent's turn has ended: "idle"
        # before that let a prompt reach an agent still busy with the last one.
        async with self.conversation.activity():
            self.fold.cancel_pending()
            self.fold.settle()
            await self.transport.cancel()
            turn = self.conversation.activities() - {asyncio.current_task()}
            if turn:
                _, late = await asyncio.wait(turn, timeout=5)
                for task in late:
                    task.cancel()
                if late:
                    await asyncio.wait(late)
        self.conversation.error = None
        self.fold.settle("cancelled")
        self.notice("Cancelled.", "info")

    # -- the agent's settings ---------------------------------------------------------------

    async def set_mode(self, mode: str) -> None:
        await self.ensure_started()
        await self.transport.set_mode(mode)

    async def set_model(self, model: str) -> None:
        await self.ensure_started()
        await self.transport.set_model(model)

    async def list_sessions(self) -> None:
        await self.ensure_started()
        sessions = await self.transport.sessions()
        self.info["sessions"] = [dict(s) for s in sessions]
        self._publish()

    async def resume(self, session_id: str) -> None:
        if self.transport.connected and session_id == self.info.get("session_id"):
            raise BadRequestError("that conversation is open already")
        await self.ensure_started()
        await self.transport.resume(session_id)
        self.view.bottom()

    # -- the end -------------------------------------------------------------------------

    def halt(self) -> None:
        """The conversation is over, at once: the panel says so and nothing the
        agent sends from now on changes it (:meth:`stop` then stops the agent,
        which may take seconds)."""
        if self.conversation.halted:
            return
        for call_id in list(self.transcript.pending):
            self.confirmations.resolved(call_id)
        if self.conversation.started:
            self.notice("The agent stopped.", "info")
        self.conversation.halt()  # from here its tasks and its agent draw nothing
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()

    async def stop(self) -> None:
        """Stop the transport (and the agent it started); the transcript stays."""
        self.halt()
        try:
            await self.transport.stop()
        except Exception:
            log.exception("stopping the agent failed")
        # "stopped" once the agent is gone; the panel drops it if a newer
        # conversation has drawn meanwhile (view.py).
        self.view.state(self.state())
        # Its own channel closes once what went over it is drawn: Neovim drops the
        # requests a closed channel still holds ("The agent stopped." was lost).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.view.drained(), DRAIN_BEFORE_CLOSE)
        self.view.close()  # later batches (the transcript stays) go through the editor
