"""The ACP transport: Gemini CLI as ``gemini --acp``, a child process of the plugin.

The Agent Client Protocol is JSON-RPC 2.0, one message a line, over the child's
stdin and stdout (client-behaviour.md, "ACP", records what 0.61.0 does). The
JSON-RPC plumbing and the schema's types come from the official
``agent-client-protocol`` package (``acp``): its low-level ``Connection`` over
:class:`~.wire.ChildStdio`, a message transport of our own on the child's pipes,
so the plugin owns the process (process.py: started in the workspace with the
environment of the plugin's terminals, stopped with the panel) and sees
everything the child prints.
Its typed ``ClientSideConnection`` is not used: its schema (v1.19) drops the
``models`` that 0.61.0 offers and has no ``session/set_model``, and it logs what
it cannot parse through the root logger (the host's stderr, kept in Neovim's
memory); the raw ``Connection`` hands us the dicts and the schema's models
validate them here.

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
  ``:GeminiAgentResume``).
- A child that exits is reported at once; garbage on its stdout is shown once per
  run and otherwise ignored; everything it writes to stderr goes to the log.

Long because it is one class, the ACP client's state machine: the session, a
turn with its permissions, and the agent's requests share its state. The jobs
that stand alone are out: wire.py (JSON-RPC on the pipes), process.py (the
child), options.py, permissions.py (requests waiting for the user), grants.py,
events.py (updates as the panel's events), sessions.py, ``agent/files.py`` (file
access) and ``agent/mcp_servers.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...paths import shown
from ...sdk import skip_package_inits
from ..mcp_servers import acp_mcp_server
from ..model import (
    FINISHED,
    REJECT_KINDS,
    Notice,
    Prompt,
    SessionUpdate,
    StatusChange,
    ToolCallUpdate,
    TurnEnd,
)
from ..transport import (
    EventSink,
    NotSupportedError,
    Transport,
    TransportContext,
    TransportError,
    plugin_version,
)
from .grants import WriteGrants
from .options import AcpOptions
from .permissions import PendingPermissions
from .process import AgentChild, spawn
from .wire import AUTH_REQUIRED, PROTOCOL_VERSION, AgentError, error_text

if TYPE_CHECKING:
    from ..files import EditorFiles
    from .events import UpdateTranslator
    from .sessions import SessionStore

log = logging.getLogger(__name__)

CLIENT_INFO = {"name": "gemini-companion.nvim", "title": "Gemini companion for Neovim"}


def _import_protocol() -> None:
    """The ACP package and what uses it: about half a second of pydantic models,
    imported in a worker thread, not on the loop (nor on Neovim's main thread)."""
    import acp.connection  # noqa: F401

    from .. import files  # noqa: F401
    from . import events, sessions  # noqa: F401


class AcpTransport(Transport):
    """The panel's client of ``gemini --acp``. Use on the server loop only."""

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

    # -- Transport ----------------------------------------------------------------------

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

    async def start(self, events: EventSink) -> None:
        self._events = events
        # The agent starts and is sent ``initialize`` at once; the protocol's schema
        # (about half a second of pydantic models, more than the CLI's start on a
        # busy machine) loads in a thread meanwhile and is awaited once the answer
        # is in (issue 25 item 1). Not the ``acp`` package's __init__, which would
        # load the schema first (sdk.py).
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
        child = await self._spawn()
        try:
            await self._within_startup(self._initialize(child, loading), "initialize")
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
        """What handles the session's messages, made once (the schema is loaded)."""
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
        message = (
            f"the agent did not stop within {self.options.cancel_timeout:g} s of the cancel:"
            " it was stopped, and the next prompt starts it again"
        )
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

    async def _wait_for_a_new_minute(self, session_id: str) -> None:
        """Gemini CLI 0.61.0 names a session's record by the minute it started and
        starts a new record when it loads one: in the same minute both get the same
        name, the conversation is overwritten and the load fails. A session this
        panel started less than a minute ago is loaded once the minute has turned."""
        assert self._store is not None
        records = await asyncio.to_thread(self._store.list, self.context.workspace)
        record = next((r for r in records if r.get("id") == session_id), None)
        if record is None or not record.get("created_at"):
            return
        # A few seconds of margin: the CLI's clock reading is not ours.
        boundary = (int(float(record["created_at"]) + 5) // 60 + 1) * 60
        wait = boundary - time.time()
        if wait > 0:
            self._emit(
                Notice(
                    f"Waiting {wait:.0f} s: Gemini CLI loses a conversation loaded in the"
                    " minute it started."
                )
            )
            await asyncio.sleep(wait)

    def health(self) -> Mapping[str, Any]:
        return {
            "command": list(self.options.cmd),
            "agent": dict(self._agent),
            "protocol_version": PROTOCOL_VERSION,
            "session_id": self._session_id,
        }

    # -- the child process ----------------------------------------------------------------

    async def _spawn(self) -> AgentChild:
        child = await spawn(
            self.options.cmd,
            cwd=self.context.workspace,
            env={**self.context.env, **self.options.env},
            handler=self._handle,
            on_garbage=self._garbage,
            on_refused=self._refused,
        )
        child.tasks.append(asyncio.get_running_loop().create_task(self._watch(child)))
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

    async def _watch(self, child: AgentChild) -> None:
        await child.wait()
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

    async def _shutdown_child(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            await child.stop()

    async def _within_startup(self, coro: Any, what: str) -> Any:
        try:
            return await asyncio.wait_for(coro, self.options.startup_timeout)
        except asyncio.TimeoutError:
            raise TransportError(
                f"the agent did not answer {what} within {self.options.startup_timeout:g} s"
                f" ({shlex.join(self.options.cmd)}; its stderr is in the log)"
            ) from None

    # -- requests to the agent --------------------------------------------------------------

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

    async def _initialize(
        self, child: AgentChild, loading: asyncio.Future[None] | None = None
    ) -> None:
        raw = await self._request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
                "clientInfo": {**CLIENT_INFO, "version": plugin_version()},
            },
        )
        if loading is not None:
            await loading
        from acp import schema

        response = schema.InitializeResponse.model_validate(raw)
        if response.protocol_version != PROTOCOL_VERSION:
            raise TransportError(
                f"the agent speaks ACP version {response.protocol_version}; the plugin speaks"
                f" version {PROTOCOL_VERSION}: update the plugin or the agent"
            )
        self._capabilities = dict(raw.get("agentCapabilities") or {})
        self._auth_methods = [m for m in raw.get("authMethods") or [] if isinstance(m, dict)]
        info = response.agent_info
        self._agent = {"name": info.name, "version": info.version} if info else {}
        # The same keys as the A2A transport's: checkhealth shows them.
        self._emit(
            SessionUpdate(
                {"agent": self._agent.get("name"), "agent_version": self._agent.get("version")}
            )
        )

    async def _new_session(self) -> None:
        params = {"cwd": self.context.workspace, "mcpServers": self._mcp_servers()}
        try:
            raw = await self._request("session/new", params)
        except AgentError as exc:
            if exc.code != AUTH_REQUIRED:
                raise
            await self._authenticate(str(exc))
            raw = await self._request("session/new", params)
        session_id = str(raw["sessionId"])
        self._session_started(raw, session_id)
        assert self._store is not None
        await asyncio.to_thread(self._store.touch, session_id, self.context.workspace)

    async def _load(self, session_id: str) -> None:
        params = {
            "sessionId": session_id,
            "cwd": self.context.workspace,
            "mcpServers": self._mcp_servers(),
        }
        # Updates of the loaded session (its history) must not be taken for the old one's.
        previous, self._session_id = self._session_id, session_id
        assert self._updates is not None
        self._updates.reset()
        try:
            try:
                raw = await self._request("session/load", params)
            except AgentError as exc:
                if exc.code != AUTH_REQUIRED:
                    raise
                await self._authenticate(str(exc))
                raw = await self._request("session/load", params)
        except BaseException:
            self._session_id = previous
            raise
        self._session_started(raw or {}, session_id)
        assert self._store is not None
        await asyncio.to_thread(self._store.touch, session_id, self.context.workspace)

    async def _authenticate(self, why: str) -> None:
        offered = {str(m.get("id")): m for m in self._auth_methods}
        wanted = self.options.auth_method
        if wanted is None or wanted not in offered:
            choices = "; ".join(f"{mid!r} ({m.get('name') or mid})" for mid, m in offered.items())
            hint = (
                f"agent.acp.auth_method {wanted!r} is not one of them"
                if wanted
                else "set agent.acp.auth_method to one of them"
            )
            raise TransportError(
                f"the agent needs a login ({why}). Its login methods: {choices}: {hint},"
                " or set GEMINI_API_KEY, or log in once with `gemini` in a terminal"
            )
        log.info("authenticating with %s", wanted)
        try:
            await self._request("authenticate", {"methodId": wanted})
        except AgentError as exc:
            raise TransportError(f"logging in with {wanted!r} failed: {exc}") from None

    def _session_started(self, raw: Mapping[str, Any], session_id: str) -> None:
        self._session_id = session_id
        modes = raw.get("modes") or {}
        # A new session: no grant carries over; its first mode is the user's own
        # configuration (settings, flags).
        self._grants = WriteGrants()
        self._grants.user_mode(modes.get("currentModeId"))
        models = raw.get("models") or {}
        self._current_model = models.get("currentModelId")
        self._modes = [str(m["id"]) for m in modes.get("availableModes") or [] if "id" in m]
        self._models = [
            str(m["modelId"]) for m in models.get("availableModels") or [] if "modelId" in m
        ]
        self._emit(
            SessionUpdate(
                {
                    "session_id": session_id,
                    "mode": modes.get("currentModeId"),
                    "modes": self._modes or None,
                    "model": models.get("currentModelId"),
                    "models": self._models or None,
                }
            )
        )

    def _mcp_servers(self) -> list[dict[str, Any]]:
        mcp = self._capabilities.get("mcpCapabilities") or {}
        servers = []
        for server in self.context.mcp_servers:
            converted = acp_mcp_server(server)
            if converted is None:
                log.warning("skipping an MCP server ACP cannot describe: %r", server)
            elif converted.get("type") in ("http", "sse") and not mcp.get(converted["type"]):
                log.warning("the agent takes no %s MCP servers: %s", converted["type"], server)
            else:
                servers.append(converted)
        return servers

    def _require_session(self) -> str:
        if self._session_id is None or not self.connected:
            raise TransportError(self._exit_message or "the agent is not running")
        return self._session_id

    # -- a turn ------------------------------------------------------------------------

    async def _run_turn(self, params: Mapping[str, Any]) -> None:
        if self._turn is not None and not self._turn.done():
            raise TransportError("the agent is still busy with the last prompt")
        turn = asyncio.get_running_loop().create_task(self._prompt_request(params))
        turn.add_done_callback(lambda _: self._settle())
        self._turn = turn
        await self._wait_settled()

    async def _prompt_request(self, params: Mapping[str, Any]) -> None:
        raw = await self._request("session/prompt", params)
        reason = str((raw or {}).get("stopReason") or "end_turn")
        self._finish_open_calls("cancelled" if reason == "cancelled" else None)
        self._grants.end_turn()
        notes = {
            "max_tokens": "The answer was cut: the model reached its token limit.",
            "max_turn_requests": "The agent stopped: it reached its limit of turns.",
            "refusal": "The agent refused to go on.",
        }
        if reason in notes:
            self._emit(Notice(notes[reason], "warning"))
        self._emit(TurnEnd(reason))

    def _settle(self) -> None:
        self._settled.set()

    async def _wait_settled(self) -> None:
        """Until the turn ended (its error raised here) or the agent waits for the user."""
        while True:
            turn = self._turn
            if turn is None or turn.done():
                break
            if self._permissions.waiting():
                return
            self._settled.clear()
            await self._settled.wait()
        if turn is not None and not turn.cancelled() and turn.exception() is not None:
            exc = turn.exception()
            self._finish_open_calls("failed")
            if self._exit_message is not None:
                return  # the agent died or hung: already reported as the status
            if isinstance(exc, TransportError):
                raise exc
            raise TransportError(f"the prompt failed: {exc}") from exc

    def _finish_open_calls(self, status: str | None) -> None:
        """Tool calls the agent left open when the turn ended: cancelled or failed."""
        updates = self._updates
        if updates is None:
            return
        for call in list(updates.calls.values()):
            if call.status in FINISHED:
                continue
            original = updates.call(self._aliases.get(call.id, ""))
            if original is not None and original.status in FINISHED and status is None:
                # An answered duplicate: the agent's updates went to its own id.
                self._emit(updates.put(call.but(status=original.status, confirmation=None)))
                continue
            if status is None and call.status != "pending":
                continue
            final = status or "cancelled"
            self._emit(updates.put(call.but(status=final, confirmation=None)))
        self._aliases.clear()

    def _answer_all_cancelled(self) -> None:
        for call in self._permissions.cancel_all():
            if self._updates is not None:
                self._emit(self._updates.put(call.but(status="cancelled", confirmation=None)))

    # -- requests from the agent ---------------------------------------------------------

    async def _handle(self, method: str, params: Any, is_notification: bool) -> Any:
        from acp.exceptions import RequestError
        from pydantic import ValidationError

        from ..files import FileAccessError

        try:
            if method == "session/update":
                self._on_update(params)
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

    def _on_update(self, params: Any) -> None:
        from acp import schema
        from pydantic import ValidationError

        kind = params.get("update", {}).get("sessionUpdate") if isinstance(params, dict) else None
        if not isinstance(params, dict) or params.get("sessionId") != self._session_id:
            log.debug("ignoring an update for another session: %s", kind)
            return
        try:
            notification = schema.SessionNotification.model_validate(params)
        except ValidationError:
            log.info("ignoring a session update the plugin does not know: %s", kind)
            return
        assert self._updates is not None
        events = [self._as_written(e) for e in self._updates.translate(notification.update)]
        for event in events:
            if isinstance(event, SessionUpdate) and "mode" in event.values:
                self._grants.agent_mode(event.values["mode"])
        self._emit(*events)

    def _as_written(self, event: Any) -> Any:
        """A finished edit the user changed shows the text written, not the proposal."""
        if not isinstance(event, ToolCallUpdate) or event.call.id not in self._written:
            return event
        if event.call.status not in FINISHED:
            return event
        from .events import unified_diff

        path, old, written = self._written.pop(event.call.id)
        call = event.call
        if call.status != "succeeded" or self._updates is None:
            return event
        return self._updates.put(call.but(result=unified_diff(path, old, written)))

    async def _on_permission(self, params: Any) -> Any:
        from acp import schema

        request = schema.RequestPermissionRequest.model_validate(params)
        if request.session_id != self._session_id or self._updates is None:
            return {"outcome": {"outcome": "cancelled"}}
        refused = await self._vet_paths(request.tool_call)
        if refused is not None:
            return refused
        call = self._updates.permission(request.tool_call, request.options)
        if call.id in self._permissions:
            # A second request with the id of one still waiting: the agent's ids are
            # not the user's. It gets an id of its own, so each is answered.
            original, n = call.id, 2
            while f"{original}#{n}" in self._permissions or self._updates.call(f"{original}#{n}"):
                n += 1
            call = call.but(id=f"{original}#{n}")
            self._aliases[call.id] = original
        pending = self._permissions.open(call)
        self._emit(self._updates.put(call))
        self._settle()
        try:
            option_id = await pending.answer
        finally:
            self._permissions.close(call.id)
        if option_id is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": option_id}}

    async def _vet_paths(self, tool_call: Any) -> Any:
        """Every file an edit request names passes openDiff's path policy before
        anything of it is shown (files.py's ``check_edit``); else the request is
        answered ``cancelled`` and the transcript says why, the path escaped."""
        from acp import schema

        from ..files import FileAccessError

        assert self._files is not None and self._updates is not None
        for item in tool_call.content or ():
            if not isinstance(item, schema.FileEditToolCallContent):
                continue
            try:
                await self._files.check_edit(item.path)
            except FileAccessError as exc:
                log.warning("refused the agent's edit request: %s", exc)
                shown_call = self._updates.call(tool_call.tool_call_id)
                if shown_call is not None and shown_call.status not in FINISHED:
                    done = shown_call.but(status="cancelled", confirmation=None, error=str(exc))
                    self._emit(self._updates.put(done))
                self._emit(
                    Notice(
                        f"The agent asked to edit a file the plugin does not show: {exc}."
                        " Answered cancelled.",
                        "warning",
                    )
                )
                return {"outcome": {"outcome": "cancelled"}}
        return None

    async def _on_read(self, params: Any) -> Any:
        from acp import schema

        request = schema.ReadTextFileRequest.model_validate(params)
        assert self._files is not None
        text = await self._files.read(request.path, request.line, request.limit)
        return {"content": text}

    async def _on_write(self, params: Any) -> Any:
        from acp import schema

        from ..files import FileAccessError

        request = schema.WriteTextFileRequest.model_validate(params)
        assert self._files is not None
        if any(p == request.path and w == request.content for p, _, w in self._written.values()):
            # The agent writes the user's version itself (IDE twin): its tool result
            # tells the model; no note needed.
            self._notes.pop(request.path, None)
        try:
            self._grants.take(request.path, request.content)
        except PermissionError as exc:
            self._emit(Notice(f"The agent's write was refused: {exc}.", "warning"))
            raise FileAccessError(str(exc)) from None
        try:
            await self._files.write(request.path, request.content)
        except Exception as exc:
            self._emit(Notice(f"The agent's write to {shown(request.path)} failed: {exc}", "error"))
            raise
        return {}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
