"""The agent half as the companion holds it: configuration, transport choice, and
the one :class:`~.session.AgentSession` with its panel view and edit review.

Called on the host thread by ``Companion``; everything it starts runs on the
server's loop (the ``Runner``), the loop of the MCP server.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .transport import Transport, TransportContext, TransportError

if TYPE_CHECKING:
    from ..editor import Editor
    from ..paths import PathPolicy
    from .mcp_servers import McpServer
    from .review import DiffReview
    from .session import AgentSession

log = logging.getLogger(__name__)

TRANSPORTS = {
    "a2a": "gemini_companion.agent.a2a.transport:A2ATransport",
    "acp": "gemini_companion.agent.acp.transport:AcpTransport",
}

# A test hook: "path/to/file.py:Class" (or "module:Class") replaces the configured
# protocol's transport. The test-suite's scripted transport comes in this way.
TEST_TRANSPORT_VAR = "GEMINI_COMPANION_TEST_TRANSPORT"


class Runner(Protocol):
    """The server loop (server.py's ``CompanionServer``): False when it is gone."""

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> bool: ...

    def spawn(self, coro_fn: Callable[[], Awaitable[Any]]) -> bool: ...


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
    """Owns the session of the agent panel. Methods are called on the host thread."""

    def __init__(
        self,
        editor: Editor,
        runner: Runner,
        env: Mapping[str, str],
        terminal_env: Callable[[], Mapping[str, str]],
        mcp_servers: Callable[[], list[McpServer]] | None = None,
        *,
        path_policy: Callable[[], PathPolicy] | None = None,
    ) -> None:
        """``path_policy``: where IDE mode's diffs may show files (the workspace
        folders and ``diff.allowed_dirs``); the agent's file access follows it, its
        own workspace added. None: anywhere."""
        self._editor = editor
        self._path_policy = path_policy
        self._runner = runner
        self._env = dict(env)
        self._terminal_env = terminal_env
        self._mcp_servers = mcp_servers
        self._session: AgentSession | None = None
        self._review: DiffReview | None = None
        self._options: AgentOptions | None = None

    def _agent_paths(self, workspace: str) -> Callable[[], PathPolicy | None]:
        base = self._path_policy
        if base is None:
            return lambda: None
        from ..paths import PathPolicy

        return lambda: PathPolicy.of([*base().roots, workspace])

    @property
    def session(self) -> AgentSession | None:
        return self._session

    def _create(self, options: AgentOptions) -> None:
        from .review import DiffReview
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
        )
        transport = cls(context)
        holder: list[AgentSession] = []

        async def answered(
            call_id: str, accepted: bool, content: str | None, option: str | None
        ) -> None:
            await holder[0].edit_answered(call_id, accepted, content, option)

        self._review = DiffReview(self._editor, answered, context.paths)
        session = AgentSession(transport, PanelView(self._editor), self._review)
        holder.append(session)
        self._session = session
        self._options = options

    def request(self, action: str, args: Mapping[str, Any]) -> None:
        """A request from the panel: ``open`` (with the configuration) creates the
        session if needed and connects; the others go to the session."""
        if action == "open":
            try:
                options = AgentOptions.from_lua(args)
                if self._session is None:
                    self._create(options)
            except TransportError as exc:
                self._editor.notify(f"Gemini agent: {exc}", 4)
                return
            action = "connect"
        session = self._session
        if session is None:
            self._editor.notify("Gemini agent: the agent panel is not open (:GeminiAgent)", 3)
            return
        if action == "stop":
            self._session = None
            self._runner.spawn(session.stop)
            return
        self._runner.call_soon(session.request, action, args)

    def state(self) -> Mapping[str, Any] | None:
        return None if self._session is None else self._session.state()

    def owns_diff(self, diff_id: int) -> bool:
        return self._review is not None and self._review.owns(diff_id)

    def diff_accepted(
        self, diff_id: int, body: str, eol: bool, fileformat: str, option: str | None = None
    ) -> None:
        review = self._review
        if review is not None:
            self._runner.spawn(lambda: review.accepted(diff_id, body, eol, fileformat, option))

    def diff_rejected(self, diff_id: int, option: str | None = None) -> None:
        review = self._review
        if review is not None:
            self._runner.spawn(lambda: review.rejected(diff_id, option))

    def stop(self, wait: float = 0.0) -> None:
        """Stop the session; with ``wait``, block up to that many seconds for it (the
        companion stops: the loop ends after this, and a started agent must not
        outlive Neovim)."""
        session, self._session = self._session, None
        if session is None:
            return
        done = threading.Event()

        async def stop() -> None:
            try:
                await session.stop()
            finally:
                done.set()

        self._runner.spawn(stop)
        if wait:
            done.wait(wait)
