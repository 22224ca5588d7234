"""The ACP transport: Gemini CLI as ``gemini --acp``, a child process of the plugin.

The Agent Client Protocol is JSON-RPC 2.0, one message a line, over the child's
stdin and stdout (client-behaviour.md, "ACP", records what 0.61.0 does). The
JSON-RPC plumbing comes from the official ``agent-client-protocol`` package
(``acp``): its low-level ``Connection`` over
:class:`~.wire.ChildStdio`, a message transport of our own on the child's pipes,
so the plugin owns the process (process.py: started in the workspace with the
environment of the plugin's terminals, stopped with the panel) and sees
everything the child prints.
Its typed ``ClientSideConnection`` is not used: its schema (v1.19) drops the
``models`` that 0.61.0 offers and has no ``session/set_model``, and it logs what
it cannot parse through the root logger (the host's stderr, kept in Neovim's
memory); the raw ``Connection`` hands us the dicts, and models of just the
messages the panel reads validate them (messages.py: the package's whole schema
held 7.8 MiB of the host's memory).

How ACP meets the panel's contract (transport.py):
- ``start``: spawn, ``initialize`` (fs capabilities: the agent reads and writes
  files through Neovim, files.py), ``session/new`` with the plugin's MCP servers;
  ``authenticate`` when the agent asks for a login and the user chose a method.
- ``prompt``: ``session/prompt`` runs in a task; the call returns when the turn
  ends or when the agent asks permission (``session/request_permission``, which
  waits for ``answer``), as the A2A transport's does.
- ``cancel``: ``session/cancel``, pending permissions answered ``cancelled``; an
  agent that does not end the turn in time is stopped (and restarted by the next
  prompt, in a new session: 0.61.0 records a conversation as it goes, but loading
  one rewrites its record, so the panel loads only when the user asks,
  ``:GeminiAgentResume``); but when other conversations use it, the turn is left to
  it and this conversation goes on in a new session (shared.py).
- A child that exits is reported at once; garbage on its stdout is shown once per
  run and otherwise ignored; everything it writes to stderr goes to the log.

:class:`AcpTransport` holds small parts, each with its own job and a narrow
interface, built in its ``__init__``: ``link.py`` (the child process the
conversation uses, requests to it, its end), ``client_requests.py`` (what the
agent asks: updates, permissions, file reads and writes), ``turns.py`` (a
prompt's turn), ``handshake.py`` (initialize, login, a session started or
loaded) and ``answers.py`` (the user's answer to a permission). The state they
share is one dataclass, ``state.py``'s :class:`~.state.AcpSession`, handed to the
parts that need it; this module holds the panel's interface and ties the parts
together. The jobs that stand alone are out: wire.py (JSON-RPC on the pipes),
process.py (the child), shared.py (the one agent process of all conversations),
options.py, permissions.py (requests waiting for the user), grants.py, events.py
(updates as the panel's events), sessions.py, ``agent/files.py`` (file access) and
``agent/mcp_servers.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...sdk import skip_package_inits
from ..model import Notice, Prompt, SessionUpdate
from ..transport import EventSink, NotSupportedError, Transport, TransportContext, TransportError
from .answers import answer_permission
from .chat_files import LoadLeftovers
from .client_requests import ClientRequests
from .grants import WriteGrants
from .handshake import Handshake, Hello, SessionFacts, initialize
from .link import AgentLink, within
from .options import AcpOptions
from .shared import shared_agent
from .state import AcpSession
from .turns import TurnRunner
from .wire import PROTOCOL_VERSION, AgentError, error_text

if TYPE_CHECKING:
    from .process import AgentChild
    from .sessions import SessionStore

log = logging.getLogger(__name__)


def _import_protocol() -> None:
    """The ACP package's JSON-RPC and what reads the messages (messages.py's
    models), imported in a worker thread, not on the loop (nor on Neovim's main
    thread)."""
    import acp.connection  # noqa: F401

    from .. import files  # noqa: F401
    from . import events, sessions  # noqa: F401


class AcpTransport(Transport):
    """The panel's client of ``gemini --acp``. Use on the server loop only."""

    protocol = "acp"

    def __init__(self, context: TransportContext) -> None:
        super().__init__(context)
        self.options = AcpOptions.from_mapping(context.options)
        self._shared = shared_agent(context.shared)
        session = self._session = AcpSession()
        self._link = AgentLink(self._shared, self, session.cancel_waiting, session.emit)
        self._turns = TurnRunner(session, self._link.request, self._agent_gone)
        self._requests = ClientRequests(session, self._turns.settle)
        self._hello = Hello({}, [], {})
        self._facts = SessionFacts()
        self._chosen_model: str | None = None  # the user's (:GeminiAgentModel)
        # Made once the modules that read the agent's messages are loaded (_set_up).
        self._store: SessionStore | None = None
        self._handshake: Handshake | None = None

    @property
    def connected(self) -> bool:
        return self._link.alive and self._session.id is not None

    @property
    def session_id(self) -> str | None:
        """The ACP session of this conversation (shared.py routes by it)."""
        return self._session.id

    def _agent_gone(self) -> bool:
        return self._link.exit_message is not None

    def _require_session(self) -> str:
        if self._session.id is None or not self.connected:
            raise self._link.failure()
        return self._session.id

    # -- Transport ----------------------------------------------------------------------

    async def start(self, events: EventSink) -> None:
        self._session.events = events
        # The agent starts and is sent ``initialize`` at once; the modules that
        # read its messages load in a thread meanwhile and are awaited once the
        # answer is in (issue 25 item 1). Not the ``acp`` package's __init__, which
        # would load its whole schema (half a second of pydantic models, sdk.py).
        skip_package_inits("acp")
        loading = asyncio.ensure_future(asyncio.to_thread(_import_protocol))
        # Its failure is raised by initialize(), or the start failed before: never unread.
        loading.add_done_callback(lambda f: f.cancelled() or f.exception())
        await self._link.shutdown()
        restarted = self._link.begin()
        previous, self._session.id = self._session.id, None
        shared = self._shared
        try:
            async with shared.lock:
                # The agent the other conversations use, or one started now.
                child = shared.live()
                if child is None:
                    await self._link.spawn(self.options, self.context.workspace, self.context.env)
                    self._hello = await self._within_startup(
                        initialize(self._link.request, loading), "initialize"
                    )
                    shared.hello = self._hello
                else:
                    self._link.join(child)
                    await loading
                    assert shared.hello is not None  # live() holds it
                    self._hello = Hello(*shared.hello)
                self._session.emit(self._hello.update())
            self._set_up()
            await self._within_startup(self._new_session(), "session/new")
        except BaseException:
            await self._link.shutdown()
            raise
        if restarted and previous is not None:
            how = (
                f" (:GeminiAgentResume {previous} loads it)"
                if self._hello.capabilities.get("loadSession")
                else ""
            )
            self._session.emit(
                Notice(
                    "The agent was restarted in a new session: it does not remember the"
                    f" conversation above{how}."
                )
            )

    def _set_up(self) -> None:
        """What handles the session's messages, made once (their modules are loaded)."""
        from ..files import EditorFiles
        from .events import UpdateTranslator
        from .sessions import SessionStore, default_path

        if self._session.updates is None:
            self._session.updates = UpdateTranslator()
            self._session.files = EditorFiles(self.context.editor, self.context.paths)
            editor = self.context.editor
            self._store = SessionStore(
                self.options.sessions_file or default_path(dict(self.context.env)),
                lambda text: editor.notify(f"Gemini agent: {text}", 3),
            )
            self._handshake = Handshake(
                self.context,
                self.options.auth_method,
                self._link.request,
                self._session.emit,
                self._store,
            )

    async def _new_session(self) -> None:
        assert self._handshake is not None and self._store is not None
        session_id, raw = await self._handshake.open(self._hello)
        self._started(raw, session_id)
        await asyncio.to_thread(self._store.touch, session_id, self.context.workspace)

    async def _load(self, session_id: str) -> None:
        assert self._handshake is not None and self._store is not None
        # Updates of the loaded session (its history) must not be taken for the old one's.
        previous, self._session.id = self._session.id, session_id
        assert self._session.updates is not None
        self._session.updates.reset()
        leftovers = LoadLeftovers({**self.context.env, **self.options.env}, session_id)
        await asyncio.to_thread(leftovers.before)
        try:
            _, raw = await self._handshake.open(self._hello, session_id)
        except BaseException as exc:
            self._session.id = previous
            if isinstance(exc, AgentError):  # marked in the history, saying why
                why = error_text(exc)
                await asyncio.to_thread(self._store.failed, session_id, self.context.workspace, why)
            raise
        finally:
            await asyncio.to_thread(leftovers.remove)  # chat_files.py: what the CLI deletes
        self._started(raw, session_id)
        await asyncio.to_thread(self._store.loaded, session_id, self.context.workspace)

    def _started(self, raw: Mapping[str, Any], session_id: str) -> None:
        facts = self._facts = SessionFacts.of(raw)
        self._session.id = session_id
        # A new session: no grant carries over; its first mode is the user's own
        # configuration (settings, flags).
        self._session.grants = WriteGrants()
        self._session.grants.user_mode(facts.mode)
        self._session.emit(facts.update(session_id))

    async def prompt(self, prompt: Prompt) -> None:
        from .events import prompt_blocks

        session_id = self._require_session()
        if self._turns.busy:
            raise TransportError("the agent is still busy with the last prompt")
        if prompt.images and not self.takes_images():
            raise TransportError("the agent takes no images (its promptCapabilities has no image)")
        blocks = prompt_blocks(
            prompt,
            embedded_context=bool(
                (self._hello.capabilities.get("promptCapabilities") or {}).get("embeddedContext")
            ),
        )
        notes = self._session.notes
        if notes:
            blocks = [_text("\n".join(notes.values())), *blocks]
            notes.clear()
        assert self._store is not None
        await asyncio.to_thread(self._store.touch, session_id, self.context.workspace, prompt.text)
        await self._turns.run({"sessionId": session_id, "prompt": blocks})

    def takes_images(self) -> bool:
        # Only with promptCapabilities.image in initialize's answer (0.61.0 has it).
        return bool((self._hello.capabilities.get("promptCapabilities") or {}).get("image"))

    async def run_command(self, name: str, args: str) -> None:
        # ACP has no method for commands: the agent takes "/name args" as a prompt.
        text = f"/{name.lstrip('/')} {args}".rstrip()
        await self._turns.run({"sessionId": self._require_session(), "prompt": [_text(text)]})

    async def answer(self, call_id: str, option_id: str | None, new_content: str | None) -> None:
        answer_permission(self._session, call_id, option_id, new_content)
        await self._turns.wait_settled()

    async def cancel(self) -> None:
        self._session.cancel_waiting()
        session_id = self._session.id
        if session_id is None:
            return
        if not await self._link.notify("session/cancel", {"sessionId": session_id}):
            return
        turn = self._turns.task
        if turn is None:
            return
        done, _ = await asyncio.wait({turn}, timeout=self.options.cancel_timeout)
        if done:
            return
        late = f"the agent did not stop within {self.options.cancel_timeout:g} s of the cancel"
        if self._shared.leave(self, session_id):
            # Other conversations use it: the turn is left to it (shared.py drops what
            # it still sends), and this conversation goes on in a new session.
            turn.cancel()
            assert self._session.updates is not None
            self._session.updates.reset()
            try:
                await self._within_startup(self._new_session(), "session/new")
            except Exception as exc:
                late = f"{late}, nor open a new session ({exc})"
            else:
                how = "this conversation goes on in a new session of the same agent"
                note = "which does not remember the conversation above"
                self._session.emit(
                    Notice(f"{late}: that turn is left to it, and {how} ({note}).", "warning")
                )
                return
        await self._link.give_up(f"{late}: it was stopped, and the next prompt starts it again")

    async def stop(self) -> None:
        self._session.cancel_waiting()
        self._turns.stop()
        await self._link.close()
        self._session.id = None

    async def set_mode(self, mode_id: str) -> None:
        session_id = self._require_session()
        modes = self._facts.modes
        if not modes:
            raise NotSupportedError("the agent offers no modes")
        if mode_id not in modes:
            raise TransportError(f"no mode {mode_id!r}: the agent offers {', '.join(modes)}")
        await self._link.request("session/set_mode", {"sessionId": session_id, "modeId": mode_id})
        self._session.grants.user_mode(mode_id)
        self._session.emit(SessionUpdate({"mode": mode_id}))

    async def set_model(self, model_id: str) -> None:
        session_id = self._require_session()
        models = self._facts.models
        if not models:
            raise NotSupportedError("the agent offers no choice of model")
        if model_id not in models:
            raise TransportError(f"no model {model_id!r}: the agent offers {', '.join(models)}")
        # Gemini CLI 0.61.0 implements the draft ``session/set_model``.
        await self._link.request(
            "session/set_model", {"sessionId": session_id, "modelId": model_id}
        )
        self._chosen_model = model_id
        self._session.emit(SessionUpdate({"model": model_id}))

    async def sessions(self) -> list[Mapping[str, Any]]:
        if self._store is None:
            raise TransportError("the agent has not started yet")
        capabilities = self._hello.capabilities
        if capabilities and not capabilities.get("loadSession"):
            raise NotSupportedError("the agent cannot load past sessions")
        return await asyncio.to_thread(self._store.list, self.context.workspace)

    async def resume(self, session_id: str) -> None:
        if self._turns.busy:
            raise TransportError("the agent is busy: cancel the running prompt first")
        if not self._hello.capabilities.get("loadSession"):
            raise NotSupportedError("the agent cannot load past sessions")
        self._session.emit(Notice(f"Loading the conversation {session_id}..."))
        assert self._handshake is not None
        await self._handshake.wait_before_load(session_id)
        try:
            await self._load(session_id)
        except AgentError as exc:
            raise TransportError(f"the agent could not load {session_id}: {exc}") from None
        # Gemini CLI 0.61.0 loads a conversation with its default model: the one the
        # user chose stays.
        chosen, facts = self._chosen_model, self._facts
        if chosen is not None and chosen in facts.models and chosen != facts.model:
            await self.set_model(chosen)

    def health(self) -> Mapping[str, Any]:
        return {
            "command": list(self.options.cmd),
            "agent": dict(self._hello.agent),
            "protocol_version": PROTOCOL_VERSION,
            "session_id": self._session.id,
        }

    # -- what shared.py hands this conversation (its AcpTransport protocol) ---------------

    async def _handle(self, method: str, params: Any, is_notification: bool) -> Any:
        return await self._requests.handle(method, params, is_notification)

    def _on_update(self, params: Any) -> None:
        self._requests.on_update(params)

    def _garbage(self, child: AgentChild, line: bytes) -> None:
        self._link.garbage(child, line)

    def _refused(self, child: AgentChild, why: str) -> None:
        self._link.refused(child, why)

    async def _exited(self, child: AgentChild) -> None:
        """The agent process ``child`` exited (shared.py tells each conversation on it)."""
        if await self._link.exited(child):
            # Shown once, by the link; a turn it ends finishes quietly (wait_settled).
            self._turns.settle()

    async def _within_startup(self, coro: Any, what: str) -> Any:
        return await within(self.options.startup_timeout, self.options.cmd, coro, what)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
