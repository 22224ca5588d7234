"""The agent half as a server run holds it: configuration, transport choice, and
the conversations, one :class:`~.session.AgentSession` each with its panel view,
and the edit review they share.

The panel names the conversation of each request (``conversation``: an id the
Lua side gives, unique in the Neovim session); ``open`` for an id not held (or
held stopped) makes its session. Each has its own transport; over ACP they
share one agent process (acp/shared.py: ``session/new`` again on its
connection), over A2A each is a task of its own.

One owner: the run's server loop (the loop of the MCP server). ``ServerRun``
(companion.py) builds the service there, hands it the panel's requests and the
user's answers in the diff tab there, and awaits :meth:`AgentService.stop` there
before the loop ends; the host thread only posts to that loop.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
import os
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .transport import Transport, TransportContext, TransportError

if TYPE_CHECKING:
    from ..editor import Editor
    from ..paths import PathPolicy
    from .mcp_servers import McpServer
    from .review import DiffReview, IdeNotify
    from .session import AgentSession

log = logging.getLogger(__name__)

TRANSPORTS = {
    "a2a": "gemini_companion.agent.a2a.transport:A2ATransport",
    "acp": "gemini_companion.agent.acp.transport:AcpTransport",
}

# A test hook: "path/to/file.py:Class" (or "module:Class") replaces the configured
# protocol's transport. The test-suite's scripted transport comes in this way.
TEST_TRANSPORT_VAR = "GEMINI_COMPANION_TEST_TRANSPORT"


@dataclass
class AgentOptions:
    """``agent`` of the Lua configuration, plus the workspace, as ``open`` sends it."""

    protocol: str
    workspace: str
    protocols: dict[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_lua(cls, raw: Mapping[str, Any]) -> AgentOptions:
        protocol = str(raw.get("protocol") or "")
        if protocol not in TRANSPORTS:
            raise TransportError(
                f"agent.protocol must be one of {', '.join(TRANSPORTS)}, got {protocol!r}"
            )
        protocols: dict[str, Mapping[str, Any]] = {
            name: dict(raw[name]) for name in TRANSPORTS if isinstance(raw.get(name), Mapping)
        }
        return cls(protocol, str(raw.get("workspace") or os.getcwd()), protocols)


def load_transport_class(protocol: str, env: Mapping[str, str]) -> type[Transport]:
    spec = env.get(TEST_TRANSPORT_VAR) or TRANSPORTS[protocol]
    where, _, name = spec.rpartition(":")
    if where.endswith(".py"):
        module_spec = importlib.util.spec_from_file_location(
            "gemini_companion_test_transport", where
        )
        if module_spec is None or module_spec.loader is None:
            raise TransportError(f"cannot load {where}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            if (exc.name or "") == where:
                raise TransportError(
                    f"the {protocol} transport is not available in this version of the plugin"
                ) from exc
            raise TransportError(
                f"the {protocol} transport cannot load ({exc}): run :GeminiCompanionBuild"
            ) from exc
    cls = getattr(module, name)
    if not (isinstance(cls, type) and issubclass(cls, Transport)):
        raise TransportError(f"{spec} is not a Transport")
    return cls


class AgentService:
    """Owns the session of the agent panel. Use on the server loop only: the run
    (companion.py's ``ServerRun``) builds, drives and stops it there."""

    def __init__(
        self,
        editor: Editor,
        env: Mapping[str, str],
        terminal_env: Callable[[], Mapping[str, str]],
        mcp_servers: Callable[[], list[McpServer]] | None = None,
        *,
        path_policy: Callable[[], PathPolicy] | None = None,
        ide_notify: IdeNotify | None = None,
    ) -> None:
        """``path_policy``: where IDE mode's diffs may show files (the workspace
        folders and ``diff.allowed_dirs``); the agent's file access follows it, its
        own workspace added. None: anywhere. ``ide_notify``: sends an IDE-mode
        notification to a CLI session (the answer to an edit's IDE twin, review.py)."""
        self._editor = editor
        self._ide_notify = ide_notify
        self._path_policy = path_policy
        self._env = dict(env)
        self._terminal_env = terminal_env
        self._mcp_servers = mcp_servers
        self._sessions: dict[int, AgentSession] = {}
        self._newest: AgentSession | None = None  # the one a request without an id goes to
        # What the transports of all conversations share (acp/shared.py: one process).
        self._shared: dict[str, Any] = {}
        self._review: DiffReview | None = None
        self._options: AgentOptions | None = None
        self._stopping: set[asyncio.Task[None]] = set()
        self._connecting: set[asyncio.Task[None]] = set()

    def _agent_paths(self, workspace: str) -> Callable[[], PathPolicy | None]:
        base = self._path_policy
        if base is None:
            return lambda: None
        return lambda: base().with_roots(workspace)

    @property
    def session(self) -> AgentSession | None:
        """The newest conversation's session while it is live, else None."""
        session = self._newest
        return None if session is None or session.conversation.halted else session

    def sessions(self) -> list[AgentSession]:
        """The conversations held, oldest first."""
        return list(self._sessions.values())

    def _owner(self, call_id: str) -> AgentSession | None:
        """The conversation that shows tool call ``call_id``."""
        for session in self._sessions.values():
            if call_id in session.transcript.tool_blocks:
                return session
        return None

    def _spawn(self, coro: Coroutine[Any, Any, None], tasks: set[asyncio.Task[None]]) -> None:
        """Run ``coro`` on the loop, its failure logged, held in ``tasks`` while it runs."""

        async def logged() -> None:
            try:
                await coro
            except Exception:
                log.exception("the agent's background task failed")

        task = asyncio.get_running_loop().create_task(logged())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    def _review_for(self, paths: Callable[[], PathPolicy | None]) -> DiffReview:
        """The diff review all conversations share: an answer in the diff tab goes
        to the conversation that shows the edit."""
        from .consent import refused
        from .review import DiffReview

        if self._review is not None:
            return self._review

        async def answered(
            call_id: str, accepted: bool, content: str | None, option: str | None
        ) -> None:
            owner = self._owner(call_id)
            if owner is not None:
                await owner.edit_answered(call_id, accepted, content, option)

        def expecting() -> bool:
            return any(s.status in ("working", "waiting") for s in self._sessions.values())

        def refusal(call_id: str, option: str | None) -> str | None:
            owner = self._owner(call_id)
            block = owner.transcript.tool_blocks.get(call_id) if owner else None
            conf = block.call.confirmation if block is not None and block.call else None
            return None if conf is None else refused(conf, option)

        self._review = DiffReview(
            self._editor, answered, paths, self._ide_notify, expecting, refusal=refusal
        )
        return self._review

    def _create(self, options: AgentOptions, conversation_id: int | None) -> AgentSession:
        from ..nvim_editor import NvimEditor
        from .conversation import Conversation
        from .session import AgentSession
        from .view import PanelView

        cls = load_transport_class(options.protocol, self._env)
        context = TransportContext(
            workspace=options.workspace,
            env={**self._env, **self._terminal_env()},
            editor=self._editor,
            options=options.protocols.get(options.protocol, {}),
            mcp_servers=self._mcp_servers() if self._mcp_servers else [],
            paths=self._agent_paths(options.workspace),
            shared=self._shared,
        )
        transport = cls(context)
        review = self._review_for(context.paths)
        conversation = Conversation(conversation_id)
        while conversation_id is None and conversation.id in self._sessions:
            conversation = Conversation()  # a number of its own, not one the panel gave
        view = PanelView(self._editor, conversation.id)
        address = os.environ.get("NVIM")
        if address and isinstance(self._editor, NvimEditor):
            # The address of the Neovim that started the host (it gives it to its
            # jobs): batches go over the session's own connection to it once it is
            # up (nvim_channel.py), through pynvim until then.
            self._spawn(view.connect(address), self._connecting)
        session = AgentSession(transport, view, review, conversation)
        old = self._sessions.pop(conversation.id, None)
        if old is not None:  # a stopped conversation of that id: over
            old.halt()
        self._sessions[conversation.id] = session
        self._newest = session
        self._options = options
        return session

    def request(self, action: str, args: Mapping[str, Any]) -> None:
        """A request from the panel for the conversation ``args.conversation`` (the
        newest without one): ``open`` (with the configuration) creates its session
        if needed and connects; ``stop`` stops every conversation; the others go to
        the conversation's session."""
        raw_id = args.get("conversation")
        conversation_id = raw_id if isinstance(raw_id, int) and raw_id > 0 else None
        session = self._newest if conversation_id is None else self._sessions.get(conversation_id)
        if action == "stop":
            # Over at once (before any later request): the agent's end, which may
            # take seconds, changes nothing the next conversation shows.
            for each in self._sessions.values():
                each.halt()
                self._spawn(each.stop(), self._stopping)
            self._sessions.clear()
            self._newest = None
            return
        if action == "open":
            try:
                options = AgentOptions.from_lua(args)
                if session is None or session.conversation.halted:
                    session = self._create(options, conversation_id)
            except TransportError as exc:
                self._editor.notify(f"Gemini agent: {exc}", 4)
                return
            action = "connect"
        if session is None:
            self._editor.notify("Gemini agent: the agent panel is not open (:GeminiAgent)", 3)
            return
        session.request(action, args)

    def state(self) -> Mapping[str, Any] | None:
        session = self.session
        return None if session is None else session.state()

    def owns_diff(self, diff_id: int) -> bool:
        """The diff view ``diff_id`` shows one of the agent's edits (the review's own
        registry, read on its loop)."""
        return self._review is not None and self._review.owns(diff_id)

    async def claim_ide_diff(
        self, session_id: str, file_path: str, new_content: str, *, own: bool = True
    ) -> bool | str:
        """True if this IDE ``openDiff`` is the twin of an edit the panel reviews
        (the agent is also an IDE client: review.py); then no view opens for it.
        ``own``: it comes from the agent's own IDE connection (agent_ide.py); any
        other client's is never a twin, and is refused (a string: why) while the
        panel reviews an edit of that file: its view would replace the review's."""
        review = self._review
        if review is None:
            return False
        if not own:
            if review.reviews(file_path):
                return "the agent panel is reviewing an edit of this file: answer it first"
            return False
        return await review.claim(session_id, file_path, new_content)

    async def diff_accepted(
        self, diff_id: int, body: str, eol: bool, fileformat: str, option: str | None = None
    ) -> None:
        review = self._review
        if review is not None:
            await review.accepted(diff_id, body, eol, fileformat, option)

    async def diff_rejected(self, diff_id: int, option: str | None = None) -> None:
        review = self._review
        if review is not None:
            await review.rejected(diff_id, option)

    async def stop(self) -> None:
        """Stop the session and wait for every stop under way: once this returns the
        agent's process is gone (and what it made for it, the A2A server's private
        home)."""
        sessions = list(self._sessions.values())
        self._sessions.clear()
        self._newest = None
        for session in sessions:
            self._spawn(session.stop(), self._stopping)
        while self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)
