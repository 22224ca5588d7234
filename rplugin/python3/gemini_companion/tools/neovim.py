"""Neovim's knowledge as MCP tools for the agent, served on ``/tools``.

Diagnostics, the text of open buffers (unsaved changes included), the selection,
and what the attached language server knows (definitions, references, symbols).
The A2A development-tool extension (section 4) routes "client-side tool
execution (ex. read active buffers)" through MCP; this is that server.

Each tool lives in one Lua file (``lua/gemini_companion/tools/<tool>.lua``): its
name, description and JSON schema beside the function that answers. Lua sends
the list with the start options; here it is served as it is, each call's
arguments are checked against its tool's schema (so a bad call gets a clear error
without reaching Neovim), a ``filePath`` is made absolute and judged by the path
policy (paths.py, the one ``openDiff`` uses), and the call goes to Neovim as a
one-way ``run_tool`` message, answered by a ``tool_result`` message matched by a
call id. Nothing blocks Neovim's main loop.

Calls are queued: at most ``max_running`` are in Neovim at once (each is a short
step of its main loop, so keys typed meanwhile wait for a few steps at most, not
for a flood), at most ``max_waiting`` more wait their turn, and past that a call
is refused with an error; a call Neovim does not answer in time ends with one.

Every tool is read-only: none changes the editor.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from . import Tool, ToolError, ToolRegistry, ToolResult

if TYPE_CHECKING:
    from ..editor import Editor

log = logging.getLogger(__name__)

SERVER_NAME = "nvim"
"""The name the CLI knows the server by: its tools reach the model as
``mcp_nvim_<tool>`` (client-behaviour.md, "MCP servers the CLI is given")."""

PATH_ARGUMENT = "filePath"
"""The argument that names a file, in every tool that takes one."""

SCOPE_ARGUMENT = "_scope"
"""Added to the arguments sent to Neovim (never taken from the agent: no schema has
it): the path policy's verdict on ``filePath`` and its roots."""

MAX_RUNNING = 2
MAX_WAITING = 256


@dataclass(frozen=True)
class ToolDescription:
    """One tool as Lua describes it (``require("gemini_companion.tools").describe()``)."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    @classmethod
    def from_lua(cls, raw: Any) -> ToolDescription:
        if not isinstance(raw, Mapping):
            raise ValueError(f"a tool description must be a table, got {raw!r}")
        name, description = raw.get("name"), raw.get("description")
        schema = raw.get("input_schema")
        if not isinstance(name, str) or not isinstance(description, str):
            raise ValueError(f"a tool description needs a name and a description: {raw!r}")
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            raise ValueError(f"tool {name}: input_schema must be an object schema")
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):  # Lua's empty table arrives as a list
            schema = {**schema, "properties": {}}
        return cls(name, description, schema)


class PathPolicy(Protocol):
    """The path policy the tools follow (``openDiff``'s: the workspace folders and
    ``diff.allowed_dirs``; a file open in Neovim is allowed by the Lua side)."""

    @property
    def roots(self) -> tuple[str, ...]: ...

    def allows(self, path: str) -> bool: ...


class NeovimTools:
    """The ``/tools`` registry and the calls it has in flight in Neovim.

    Runs on the server loop; :meth:`resolve` is posted there by the companion when
    Neovim answers.
    """

    def __init__(
        self,
        editor: Editor,
        workspace_dirs: Callable[[], Sequence[str]],
        descriptions: Sequence[ToolDescription],
        path_policy: Callable[[], PathPolicy] | None = None,
        *,
        timeout: float = 10.0,
        max_running: int = MAX_RUNNING,
        max_waiting: int = MAX_WAITING,
    ) -> None:
        self._editor = editor
        self._workspace_dirs = workspace_dirs
        self._descriptions = list(descriptions)
        self._path_policy = path_policy
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[tuple[bool, Any]]] = {}
        self._max_running = max_running
        self._max_waiting = max_waiting
        self._slots: asyncio.Semaphore | None = None  # made on the server loop
        self._waiting = 0
        self.refused = 0  # calls refused because too many were waiting (benches)

    def registry(self) -> ToolRegistry:
        return ToolRegistry.of(
            SERVER_NAME,
            [
                Tool(d.name, d.description, d.input_schema, self._handler(d))
                for d in self._descriptions
            ],
        )

    # -- the answers from Neovim (server loop) ---------------------------------------

    def resolve(self, call_id: int, ok: bool, value: Any) -> None:
        future = self._pending.pop(call_id, None)
        if future is not None and not future.done():
            future.set_result((bool(ok), value))

    def cancel_all(self) -> None:
        """The server stops: calls still waiting for Neovim end with an error."""
        for future in self._pending.values():
            if not future.done():
                future.set_result((False, "the companion server is stopping"))
        self._pending.clear()

    # -- a call --------------------------------------------------------------------------

    def _handler(self, tool: ToolDescription) -> Any:
        async def handler(session_id: str | None, arguments: Mapping[str, Any]) -> ToolResult:
            args = check_arguments(tool.input_schema, arguments)
            scope: dict[str, Any] = {"roots": []}
            if self._path_policy is not None:
                policy = self._path_policy()
                scope["roots"] = list(policy.roots)
            if PATH_ARGUMENT in args:
                path = self._path(args[PATH_ARGUMENT])
                args[PATH_ARGUMENT] = path
                scope["allowed"] = policy.allows(path) if self._path_policy is not None else False
            args[SCOPE_ARGUMENT] = scope
            return await self._run(tool.name, args)

        return handler

    async def _run(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max_running)
        slots = self._slots
        if slots.locked() and self._waiting >= self._max_waiting:
            self.refused += 1
            raise ToolError(
                f"Neovim is busy: {self._max_running} tool calls are running and"
                f" {self._waiting} waiting; try again in a moment"
            )
        self._waiting += 1
        try:
            await asyncio.wait_for(slots.acquire(), self._timeout)
        except asyncio.TimeoutError:
            raise ToolError(
                f"Neovim was busy with other tool calls for {self._timeout:g} s; try again"
            ) from None
        finally:
            self._waiting -= 1
        try:
            return await self._send(name, arguments)
        finally:
            slots.release()

    async def _send(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        call_id = next(self._ids)
        future: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        self._editor.run_tool(call_id, name, arguments)
        try:
            ok, value = await asyncio.wait_for(future, self._timeout)
        except asyncio.TimeoutError:
            raise ToolError(
                f"Neovim did not answer within {self._timeout:g} s (it may be busy); try again"
            ) from None
        finally:
            self._pending.pop(call_id, None)
        if not ok:
            raise ToolError(str(value))
        return ToolResult((_to_json(value),))

    def _path(self, value: str) -> str:
        if not os.path.isabs(value):
            dirs = self._workspace_dirs()
            if not dirs:
                raise ToolError(f"filePath must be absolute, got {value!r}")
            value = os.path.join(dirs[0], value)
        return os.path.normpath(value)


# -- the arguments, checked against the tool's schema ----------------------------------


def check_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a tool gets, checked against its schema (the subset the tools
    use: string, integer and boolean properties, ``enum``, ``minimum``/``maximum``,
    ``required``, no others); :class:`ToolError` says what is wrong."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    # The CLI adds ``wait_for_previous`` to every tool it declares to the model
    # (client-behaviour.md); it is the CLI's own and is ignored here.
    unknown = [k for k in arguments if k not in properties and k != "wait_for_previous"]
    if unknown:
        expected = ", ".join(properties) if properties else "none"
        raise ToolError(f"unknown argument(s) {', '.join(unknown)}; expected: {expected}")
    for name in schema.get("required") or ():
        if arguments.get(name) is None:
            raise ToolError(f"the argument '{name}' is missing")
    checked: dict[str, Any] = {}
    for name, spec in properties.items():
        value = arguments.get(name)
        if value is not None:
            checked[name] = _check_value(name, spec, value)
    return checked


def _check_value(name: str, spec: Mapping[str, Any], value: Any) -> Any:
    kind = spec.get("type")
    if kind == "integer":
        # JSON numbers may arrive as 3.0; a bool is not a number here.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolError(f"{name} must be an integer, got {value!r}")
        low, high = spec.get("minimum"), spec.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise ToolError(f"{name} must be between {low} and {high}, got {value}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise ToolError(f"{name} must be a boolean")
    elif kind == "string":
        if not isinstance(value, str) or (name == PATH_ARGUMENT and not value):
            raise ToolError(f"{name} must be a non-empty string")
        if "\0" in value:
            raise ToolError(f"{name} contains a NUL character")
    enum = spec.get("enum")
    if enum is not None and value not in enum:
        raise ToolError(f"{name} must be one of {', '.join(map(str, enum))}; got {value!r}")
    return value


def _to_json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
        text.encode("utf-8")  # bytes that were not UTF-8 arrive as lone surrogates
    except UnicodeEncodeError:
        raise ToolError("the text is not valid UTF-8 (is it a binary file?)") from None
    except (TypeError, ValueError) as exc:
        raise ToolError(f"Neovim's answer could not be encoded: {exc}") from None
    return text


@dataclass(frozen=True)
class McpHttpServer:
    """How an MCP client reaches the ``/tools`` endpoint: what the agent panel hands
    the agent (agent/mcp_servers.py puts it in ACP's or the settings' shape)."""

    name: str
    url: str
    headers: Mapping[str, str]


def http_server(port: int, token: str) -> McpHttpServer:
    from . import TOOLS_PATH

    return McpHttpServer(
        SERVER_NAME,
        f"http://127.0.0.1:{port}{TOOLS_PATH}",
        {"Authorization": f"Bearer {token}"},
    )
