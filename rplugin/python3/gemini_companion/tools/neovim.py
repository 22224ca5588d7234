"""Neovim's knowledge as MCP tools for the agent, served on ``/tools``.

Diagnostics, the text of open buffers (unsaved changes included), the selection,
and what the attached language server knows (definitions, references, symbols).
The A2A development-tool extension (section 4) routes "client-side tool
execution (ex. read active buffers)" through MCP; this is that server.

Here: each tool's name, description, JSON schema and the checks of its arguments,
so a bad call gets a clear error without reaching Neovim. The answer is computed
in Neovim (``lua/gemini_companion/tools.lua``): a one-way ``run_tool`` message out,
a ``tool_result`` message back, matched by a call id; nothing blocks Neovim's main
loop and a call Neovim does not answer in time ends with an error.

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
from typing import TYPE_CHECKING, Any

from . import Tool, ToolError, ToolRegistry, ToolResult

if TYPE_CHECKING:
    from ..editor import Editor

log = logging.getLogger(__name__)

SERVER_NAME = "nvim"
"""The name the CLI knows the server by: its tools reach the model as
``mcp_nvim_<tool>`` (client-behaviour.md, "MCP servers the CLI is given")."""

MAX_LINE = 10_000_000
DEFAULT_DIAGNOSTICS_LIMIT = 100
MAX_DIAGNOSTICS_LIMIT = 1000

_PATH = {
    "type": "string",
    "description": "Path of the file: absolute, or relative to the workspace root",
}
_LINE = {"type": "integer", "minimum": 1, "description": "1-based line number"}
_CHARACTER = {
    "type": "integer",
    "minimum": 1,
    "description": "1-based character (code point) in the line",
}


def _schema(properties: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties),
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


GET_DIAGNOSTICS_SCHEMA = _schema(
    {
        "filePath": {
            **_PATH,
            "description": "Only this file (absolute, or relative to the workspace root);"
            " omit for every open file",
        },
        "severity": {
            "type": "string",
            "enum": ["error", "warning", "info", "hint"],
            "description": "The least severe level to include (default: hint, i.e. all)",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_DIAGNOSTICS_LIMIT,
            "description": f"At most this many, most severe first (default"
            f" {DEFAULT_DIAGNOSTICS_LIMIT})",
        },
    }
)
READ_BUFFER_SCHEMA = _schema(
    {
        "filePath": _PATH,
        "startLine": {**_LINE, "description": "First line to read (1-based, default 1)"},
        "endLine": {**_LINE, "description": "Last line to read, inclusive (default: the end)"},
    },
    ["filePath"],
)
POSITION_SCHEMA = _schema(
    {"filePath": _PATH, "line": _LINE, "character": _CHARACTER}, ["filePath", "line", "character"]
)
REFERENCES_SCHEMA = _schema(
    {
        "filePath": _PATH,
        "line": _LINE,
        "character": _CHARACTER,
        "includeDeclaration": {
            "type": "boolean",
            "description": "Include the declaration itself (default false)",
        },
    },
    ["filePath", "line", "character"],
)
FILE_SCHEMA = _schema({"filePath": _PATH}, ["filePath"])
NO_ARGUMENTS_SCHEMA = _schema({})


class NeovimTools:
    """The ``/tools`` registry and the calls it has in flight in Neovim.

    Runs on the server loop; :meth:`resolve` is posted there by the companion when
    Neovim answers.
    """

    def __init__(
        self,
        editor: Editor,
        workspace_dirs: Callable[[], Sequence[str]],
        *,
        timeout: float = 10.0,
    ) -> None:
        self._editor = editor
        self._workspace_dirs = workspace_dirs
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[tuple[bool, Any]]] = {}

    def registry(self) -> ToolRegistry:
        return ToolRegistry.of(
            SERVER_NAME,
            [
                Tool(
                    "getDiagnostics",
                    "The diagnostics (errors, warnings, hints) Neovim has for the open files,"
                    " from language servers and linters, most severe first: file, range,"
                    " severity, message, source. Cheaper and fresher than running a compiler.",
                    GET_DIAGNOSTICS_SCHEMA,
                    self._get_diagnostics,
                ),
                Tool(
                    "readBuffer",
                    "The text of a file open in Neovim as the user sees it, unsaved changes"
                    " included (the file on disk may be older), with an optional line range"
                    f" (at most {2000} lines at once).",
                    READ_BUFFER_SCHEMA,
                    self._read_buffer,
                ),
                Tool(
                    "listOpenBuffers",
                    "The files open in Neovim, most recently used first: path, whether it has"
                    " unsaved changes, filetype, line count and attached language servers.",
                    NO_ARGUMENTS_SCHEMA,
                    self._simple("listOpenBuffers"),
                ),
                Tool(
                    "getSelection",
                    "The text the user has selected in Neovim (or selected last), with its"
                    " file and range.",
                    NO_ARGUMENTS_SCHEMA,
                    self._simple("getSelection"),
                ),
                Tool(
                    "findDefinition",
                    "Where the symbol at a position is defined, asked of the language server"
                    " attached in Neovim. The file must be open in Neovim.",
                    POSITION_SCHEMA,
                    self._position("findDefinition"),
                ),
                Tool(
                    "findReferences",
                    "Every place the symbol at a position is used, asked of the language"
                    " server attached in Neovim. The file must be open in Neovim.",
                    REFERENCES_SCHEMA,
                    self._position("findReferences"),
                ),
                Tool(
                    "documentSymbols",
                    "The outline of a file (classes, functions, variables with their lines),"
                    " from the language server attached in Neovim. The file must be open.",
                    FILE_SCHEMA,
                    self._document_symbols,
                ),
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

    async def _run(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
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

    # -- argument checks ----------------------------------------------------------------

    def _path(self, arguments: Mapping[str, Any], required: bool = True) -> str | None:
        value = arguments.get("filePath")
        if value is None and not required:
            return None
        if value is None:
            raise ToolError("the argument 'filePath' is missing")
        if not isinstance(value, str) or not value:
            raise ToolError("filePath must be a non-empty string")
        if "\0" in value:
            raise ToolError("filePath contains a NUL character")
        if not os.path.isabs(value):
            dirs = self._workspace_dirs()
            if not dirs:
                raise ToolError(f"filePath must be absolute, got {value!r}")
            value = os.path.join(dirs[0], value)
        return os.path.normpath(value)

    def _simple(self, name: str) -> Any:
        async def handler(session_id: str | None, arguments: Mapping[str, Any]) -> ToolResult:
            _no_unknown(arguments, ())
            return await self._run(name, {})

        return handler

    async def _get_diagnostics(
        self, session_id: str | None, arguments: Mapping[str, Any]
    ) -> ToolResult:
        _no_unknown(arguments, ("filePath", "severity", "limit"))
        args: dict[str, Any] = {
            "limit": _integer(arguments, "limit", 1, MAX_DIAGNOSTICS_LIMIT)
            or DEFAULT_DIAGNOSTICS_LIMIT
        }
        path = self._path(arguments, required=False)
        if path is not None:
            args["filePath"] = path
        severity = arguments.get("severity")
        if severity is not None:
            if severity not in ("error", "warning", "info", "hint"):
                raise ToolError(
                    f"severity must be one of error, warning, info, hint; got {severity!r}"
                )
            args["severity"] = severity
        return await self._run("getDiagnostics", args)

    async def _read_buffer(
        self, session_id: str | None, arguments: Mapping[str, Any]
    ) -> ToolResult:
        _no_unknown(arguments, ("filePath", "startLine", "endLine"))
        args: dict[str, Any] = {"filePath": self._path(arguments)}
        start = _integer(arguments, "startLine", 1, MAX_LINE)
        end = _integer(arguments, "endLine", 1, MAX_LINE)
        if start is not None and end is not None and end < start:
            raise ToolError(f"endLine ({end}) is before startLine ({start})")
        if start is not None:
            args["startLine"] = start
        if end is not None:
            args["endLine"] = end
        return await self._run("readBuffer", args)

    def _position(self, name: str) -> Any:
        async def handler(session_id: str | None, arguments: Mapping[str, Any]) -> ToolResult:
            allowed: tuple[str, ...] = ("filePath", "line", "character")
            if name == "findReferences":
                allowed = (*allowed, "includeDeclaration")
            _no_unknown(arguments, allowed)
            args: dict[str, Any] = {"filePath": self._path(arguments)}
            for key in ("line", "character"):
                if key not in arguments:
                    raise ToolError(f"the argument '{key}' is missing")
                args[key] = _integer(arguments, key, 1, MAX_LINE)
            include = arguments.get("includeDeclaration")
            if include is not None:
                if not isinstance(include, bool):
                    raise ToolError("includeDeclaration must be a boolean")
                args["includeDeclaration"] = include
            return await self._run(name, args)

        return handler

    async def _document_symbols(
        self, session_id: str | None, arguments: Mapping[str, Any]
    ) -> ToolResult:
        _no_unknown(arguments, ("filePath",))
        return await self._run("documentSymbols", {"filePath": self._path(arguments)})


def _no_unknown(arguments: Mapping[str, Any], allowed: Sequence[str]) -> None:
    # The CLI adds ``wait_for_previous`` to every tool it declares to the model
    # (client-behaviour.md); it is the CLI's own and is ignored here.
    unknown = [k for k in arguments if k not in allowed and k != "wait_for_previous"]
    if unknown:
        expected = ", ".join(allowed) if allowed else "none"
        raise ToolError(f"unknown argument(s) {', '.join(unknown)}; expected: {expected}")


def _integer(arguments: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = arguments.get(name)
    if value is None:
        return None
    # JSON numbers may arrive as 3.0; a bool is not a number here.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ToolError(f"{name} must be between {low} and {high}, got {value}")
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
    the agent (ACP ``session/new`` ``mcpServers``, A2A agent settings)."""

    name: str
    url: str
    headers: Mapping[str, str]

    def as_acp(self) -> dict[str, Any]:
        """An ACP ``HttpMcpServer`` (``session/new`` ``mcpServers`` entry)."""
        return {
            "type": "http",
            "name": self.name,
            "url": self.url,
            "headers": [{"name": k, "value": v} for k, v in self.headers.items()],
        }

    def as_gemini_settings(self) -> dict[str, Any]:
        """A Gemini CLI ``mcpServers`` entry (settings.json, extensions): read-only
        tools, so ``trust`` spares the user a confirmation for each call."""
        return {"httpUrl": self.url, "headers": dict(self.headers), "trust": True}


def http_server(port: int, token: str) -> McpHttpServer:
    from . import TOOLS_PATH

    return McpHttpServer(
        SERVER_NAME,
        f"http://127.0.0.1:{port}{TOOLS_PATH}",
        {"Authorization": f"Bearer {token}"},
    )
