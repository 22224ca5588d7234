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

:class:`AcpTransport` is the top of a ladder of classes, one module each, that
share the client's state (the child, the session, the turn with its permissions):
``state.py`` (that state, and requests to the agent), ``client_requests.py``
(the agent's requests: updates, permissions, file reads and writes),
``turns.py`` (a prompt's turn), ``handshake.py`` (initialize, login, a session
started or loaded), and this module (the panel's interface and the child's
life). The jobs that stand alone are out: wire.py (JSON-RPC on the pipes),
process.py (the child), options.py, permissions.py (requests waiting for the
user), grants.py, events.py (updates as the panel's events), sessions.py,
``agent/files.py`` (file access) and ``agent/mcp_servers.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
from collections.abc import Mapping
from typing import Any

from ...sdk import skip_package_inits
from ..model import REJECT_KINDS, Notice, Prompt, SessionUpdate, StatusChange
from ..transport import EventSink, NotSupportedError, TransportError
from .handshake import AcpHandshake
from .process import AgentChild, spawn
from .wire import PROTOCOL_VERSION, AgentError

log = logging.getLogger(__name__)


def _import_protocol() -> None:
    """The ACP package's JSON-RPC and what reads the messages (messages.py's
    models), imported in a worker thread, not on the loop (nor on Neovim's main
    thread)."""
    import acp.connection  # noqa: F401

    from .. import files  # noqa: F401
    from . import events, sessions  # noqa: F401


class AcpTransport(AcpHandshake):
    """The panel's client of ``gemini --acp``. Use on the server loop only."""

    # -- Transport ----------------------------------------------------------------------

    async def start(self, events: EventSink) -> None:
        self._events = events
        # The agent starts and is sent ``initialize`` at once; the modules that
        # read its messages load in a thread meanwhile and are awaited once the
        # answer is in (issue 25 item 1). Not the ``acp`` package's __init__, which
        # would load its whole schema (half a second of pydantic models, sdk.py).
        skip_package_inits("acp")
        loading = asyncio.ensure_future(asyncio.to_thread(_import_protocol))
        # Its failure is raised by _initialize, or the start failed before: never unread.
        loading.add_done_callback(lambda f: f.cancelled() or f.exception())
        await self._shutdown_child()
        restarted = self._exit_message is not None
        previous = self._session_id
        self._stopping = False
        self._exit_message = None
        self._session_id = None
        shared = self._shared()
        try:
            async with shared.lock:
                # The agent the other conversations use, or one started now.
                child = shared.live()
                if child is None:
                    child = await self._spawn()
                    shared.attach(self, child)
                    await self._within_startup(self._initialize(child, loading), "initialize")
                    shared.hello = (self._capabilities, self._auth_methods, self._agent)
                else:
                    shared.attach(self, child)
                    self._child = child
                    await loading
                    assert shared.hello is not None  # live() holds it
                    self._greeted(*shared.hello)
            self._set_up()
            await self._within_startup(self._new_session(), "session/new")
        except BaseException:
            await self._shutdown_child()
            raise
        if restarted and previous is not None:
            how = (
                f" (:GeminiAgentResume {previous} loads it)"
                if self._capabilities.get("loadSession")
                else ""
            )
            self._emit(
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

        if self._updates is None:
            self._updates = UpdateTranslator()
            self._files = EditorFiles(self.context.editor, self.context.paths)
            self._store = SessionStore(
                self.options.sessions_file or default_path(dict(self.context.env))
            )

    async def prompt(self, prompt: Prompt) -> None:
        from .events import prompt_blocks

        session_id = self._require_session()
        if self._turn is not None and not self._turn.done():
            raise TransportError("the agent is still busy with the last prompt")
        if prompt.images and not self.takes_images():
            raise TransportError("the agent takes no images (its promptCapabilities has no image)")
        blocks = prompt_blocks(
            prompt,
            embedded_context=bool(
                (self._capabilities.get("promptCapabilities") or {}).get("embeddedContext")
            ),
        )
        if self._notes:
            blocks = [_text("\n".join(self._notes.values())), *blocks]
            self._notes = {}
        assert self._store is not None
        await asyncio.to_thread(self._store.touch, session_id, self.context.workspace, prompt.text)
        await self._run_turn({"sessionId": session_id, "prompt": blocks})

    def takes_images(self) -> bool:
        # Only with promptCapabilities.image in initialize's answer (0.61.0 has it).
        return bool((self._capabilities.get("promptCapabilities") or {}).get("image"))

    async def run_command(self, name: str, args: str) -> None:
        # ACP has no method for commands: the agent takes "/name args" as a prompt.
        text = f"/{name.lstrip('/')} {args}".rstrip()
        await self._run_turn({"sessionId": self._require_session(), "prompt": [_text(text)]})

    async def answer(self, call_id: str, option_id: str | None, new_content: str | None) -> None:
        pending = self._permissions.get(call_id)
        if pending is None or pending.answer.done():
            raise TransportError("the agent is no longer waiting for that answer")
        confirmation = pending.call.confirmation
        if confirmation is None:
            raise TransportError("the agent is no longer waiting for that answer")
        option = None
        if option_id is not None:  # None: rejected, and no reject option: cancelled
            option = next((o for o in confirmation.options if o.id == option_id), None)
            if option is None:
                raise TransportError(f"the agent did not offer the option {option_id!r}")
        rejected = option is None or option.kind in REJECT_KINDS
        assert self._updates is not None and self._files is not None
        if (
            not rejected
            and confirmation.kind == "edit"
            and confirmation.file_path
            and new_content is not None
            and confirmation.new_content is not None
        ):
            # The agent writes its own proposal through fs/write_text_file; that
            # write takes the user's version (files.py). ACP cannot tell the agent:
            # the tool block shows what was written, and the model is told with the
            # next prompt; unless the agent writes the user's version itself (IDE
            # mode on: the review answered its IDE twin with it, review.py).
            from ..review import user_edit_note

            self._files.expect_write(confirmation.file_path, confirmation.new_content, new_content)
            self._written[self._aliases.get(call_id, call_id)] = (
                confirmation.file_path,
                confirmation.old_content,
                new_content,
            )
            self._notes[confirmation.file_path] = user_edit_note(
                confirmation.file_path, confirmation.new_content, new_content
            )
        if (
            option is not None
            and not rejected
            and confirmation.kind == "edit"
            and confirmation.file_path
            and confirmation.new_content is not None
        ):
            # The one write this answer lets through (grants.py): of the proposal, or
            # of the user's version when the agent writes that itself (IDE twin).
            self._grants.allowed(
                confirmation.file_path,
                confirmation.new_content,
                always=option.kind == "allow_always",
                accepted=new_content,
            )
        if rejected:
            call = pending.call.but(status="cancelled", confirmation=None, result="Rejected.")
        else:
            call = pending.call.but(status="executing", confirmation=None)
        self._emit(self._updates.put(call))
        self._permissions.answer(call_id, option_id)
        await self._wait_settled()

    async def cancel(self) -> None:
        child, session_id = self._child, self._session_id
        self._answer_all_cancelled()
        if child is None or session_id is None or self._exit_message is not None:
            return
        with contextlib.suppress(ConnectionError):
            await child.connection.send_notification("session/cancel", {"sessionId": session_id})
        turn = self._turn
        if turn is None or turn.done():
            return
        done, _ = await asyncio.wait({turn}, timeout=self.options.cancel_timeout)
        if done:
            return
        late = f"the agent did not stop within {self.options.cancel_timeout:g} s of the cancel"
        if self._shared().leave(self, session_id):
            # Other conversations use it: the turn is left to it (shared.py drops what
            # it still sends), and this conversation goes on in a new session.
            turn.cancel()
            assert self._updates is not None
            self._updates.reset()
            try:
                await self._within_startup(self._new_session(), "session/new")
            except Exception as exc:
                late = f"{late}, nor open a new session ({exc})"
            else:
                how = "this conversation goes on in a new session of the same agent"
                note = "which does not remember the conversation above"
                self._emit(
                    Notice(f"{late}: that turn is left to it, and {how} ({note}).", "warning")
                )
                return
        message = f"{late}: it was stopped, and the next prompt starts it again"
        log.warning("%s", message)
        self._exit_message = message
        await self._shutdown_child()
        self._emit(StatusChange("error", message))

    async def stop(self) -> None:
        self._stopping = True
        self._answer_all_cancelled()
        turn = self._turn
        if turn is not None and not turn.done():
            turn.cancel()
        await self._shutdown_child()
        self._session_id = None

    async def set_mode(self, mode_id: str) -> None:
        session_id = self._require_session()
        if not self._modes:
            raise NotSupportedError("the agent offers no modes")
        if mode_id not in self._modes:
            raise TransportError(f"no mode {mode_id!r}: the agent offers {', '.join(self._modes)}")
        await self._request("session/set_mode", {"sessionId": session_id, "modeId": mode_id})
        self._grants.user_mode(mode_id)
        self._emit(SessionUpdate({"mode": mode_id}))

    async def set_model(self, model_id: str) -> None:
        session_id = self._require_session()
        if not self._models:
            raise NotSupportedError("the agent offers no choice of model")
        if model_id not in self._models:
            raise TransportError(
                f"no model {model_id!r}: the agent offers {', '.join(self._models)}"
            )
        # Gemini CLI 0.61.0 implements the draft ``session/set_model``.
        await self._request("session/set_model", {"sessionId": session_id, "modelId": model_id})
        self._chosen_model = model_id
        self._emit(SessionUpdate({"model": model_id}))

    async def sessions(self) -> list[Mapping[str, Any]]:
        if self._store is None:
            raise TransportError("the agent has not started yet")
        if self._capabilities and not self._capabilities.get("loadSession"):
            raise NotSupportedError("the agent cannot load past sessions")
        return await asyncio.to_thread(self._store.list, self.context.workspace)

    async def resume(self, session_id: str) -> None:
        if self._turn is not None and not self._turn.done():
            raise TransportError("the agent is busy: cancel the running prompt first")
        if not self._capabilities.get("loadSession"):
            raise NotSupportedError("the agent cannot load past sessions")
        self._emit(Notice(f"Loading the conversation {session_id}..."))
        await self._wait_for_a_new_minute(session_id)
        try:
            await self._load(session_id)
        except AgentError as exc:
            raise TransportError(f"the agent could not load {session_id}: {exc}") from None
        # Gemini CLI 0.61.0 loads a conversation with its default model: the one the
        # user chose stays.
        chosen = self._chosen_model
        if chosen is not None and chosen in self._models and chosen != self._current_model:
            await self.set_model(chosen)

    def health(self) -> Mapping[str, Any]:
        return {
            "command": list(self.options.cmd),
            "agent": dict(self._agent),
            "protocol_version": PROTOCOL_VERSION,
            "session_id": self._session_id,
        }

    # -- the child process ----------------------------------------------------------------

    async def _spawn(self) -> AgentChild:
        shared = self._shared()
        child = await spawn(
            self.options.cmd,
            cwd=self.context.workspace,
            env={**self.context.env, **self.options.env},
            handler=shared.handle,
            on_garbage=shared.garbage,
            on_refused=shared.refused,
            on_update=shared.on_update,
        )
        child.tasks.append(asyncio.get_running_loop().create_task(shared.watch(child)))
        self._child = child
        return child

    def _garbage(self, child: AgentChild, line: bytes) -> None:
        child.garbage_lines += 1
        text = line.decode("utf-8", "replace")
        log.warning("agent stdout, not ACP (ignored): %s", text[:2000])
        if child.garbage_lines == 1 and child is self._child:
            excerpt = text if len(text) <= 120 else text[:117] + "..."
            self._emit(
                Notice(
                    f"The agent printed something that is not ACP on its stdout (ignored;"
                    f" more in the log): {excerpt}",
                    "warning",
                )
            )

    def _refused(self, child: AgentChild, why: str) -> None:
        log.warning("refused from the agent: %s", why)
        if why not in child.refused and child is self._child:
            child.refused.add(why)
            self._emit(Notice(f"The agent sent {why}: refused (more in the log).", "warning"))

    async def _exited(self, child: AgentChild) -> None:
        """The agent process ``child`` exited (shared.py tells each conversation on it)."""
        if child is not self._child or self._stopping:
            return
        message = child.exit_text()
        log.warning("%s", message)
        if self._exit_message is None:
            self._exit_message = message
        self._answer_all_cancelled()
        with contextlib.suppress(Exception):
            await child.connection.close()
        # Shown once, here; a turn it ends finishes quietly (_wait_settled).
        self._emit(StatusChange("error", message))
        self._settle()

    async def _within_startup(self, coro: Any, what: str) -> Any:
        try:
            return await asyncio.wait_for(coro, self.options.startup_timeout)
        except asyncio.TimeoutError:
            raise TransportError(
                f"the agent did not answer {what} within {self.options.startup_timeout:g} s"
                f" ({shlex.join(self.options.cmd)}; its stderr is in the log)"
            ) from None


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
