"""The MCP servers the plugin hands the agent (Neovim's tools on ``/tools``), in
one description and the two shapes the protocols take:

- ACP's ``session/new`` ``mcpServers`` entry (:meth:`McpServer.as_acp`):
  ``type``, ``url``, ``headers`` as a list of ``{name, value}``; or ``command``,
  ``args``, ``env`` as ``{name, value}`` pairs;
- Gemini CLI's settings shape (:meth:`McpServer.as_settings`, the A2A server's
  private home): ``httpUrl`` for Streamable HTTP, ``url`` for SSE, ``command``;
  ``headers``/``env`` as tables. No ``trust``: the agent asks before each call.

:meth:`McpServer.parse` reads either shape (or takes a description as it is), so
a server in the user's configuration can be written either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["http", "sse", "stdio"]


def _table(value: Any) -> dict[str, str]:
    """``{name: value}`` from a table or a list of ``{name, value}`` pairs."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, list):
        return {
            str(p["name"]): str(p["value"])
            for p in value
            if isinstance(p, Mapping) and "name" in p and "value" in p
        }
    return {}


def _pairs(table: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in table.items()]


@dataclass(frozen=True)
class McpServer:
    """One MCP server, in no protocol's shape: reached over HTTP (Streamable HTTP
    or SSE) at ``url`` with ``headers``, or started as ``command`` with ``args``
    and ``env``."""

    name: str
    kind: Kind
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def http(cls, name: str, url: str, headers: Mapping[str, str]) -> McpServer:
        """A Streamable HTTP server (Neovim's tools)."""
        return cls(name, "http", url, dict(headers))

    @classmethod
    def parse(cls, server: McpServer | Mapping[str, Any]) -> McpServer | None:
        """``server`` in ACP's shape or the settings shape; None when it names no
        server (no name, or neither a URL nor a command)."""
        if isinstance(server, McpServer):
            return server
        name = server.get("name")
        if not isinstance(name, str) or not name:
            return None
        kind, url = server.get("type"), server.get("url")
        if kind not in ("http", "sse") or not isinstance(url, str):
            # The settings shape: httpUrl is Streamable HTTP, url is SSE.
            if isinstance(server.get("httpUrl"), str):
                kind, url = "http", server["httpUrl"]
            else:
                kind = "sse"
        if isinstance(url, str):
            return cls(
                name, "http" if kind == "http" else "sse", url, _table(server.get("headers"))
            )
        if isinstance(server.get("command"), str):
            return cls(
                name,
                "stdio",
                command=server["command"],
                args=tuple(str(a) for a in server.get("args") or []),
                env=_table(server.get("env")),
            )
        return None

    def as_acp(self) -> dict[str, Any]:
        """An ACP ``session/new`` ``mcpServers`` entry."""
        if self.kind == "stdio":
            return {
                "name": self.name,
                "command": self.command,
                "args": list(self.args),
                "env": _pairs(self.env),
            }
        return {
            "type": self.kind,
            "name": self.name,
            "url": self.url,
            "headers": _pairs(self.headers),
        }

    def as_settings(self) -> dict[str, Any]:
        """A Gemini CLI ``mcpServers`` entry (settings.json, an extension), without
        its name (the key it goes under)."""
        if self.kind == "stdio":
            return {"command": self.command, "args": list(self.args), "env": dict(self.env)}
        key = "httpUrl" if self.kind == "http" else "url"
        return {key: self.url, "headers": dict(self.headers)}


def acp_mcp_server(server: McpServer | Mapping[str, Any]) -> dict[str, Any] | None:
    """``server`` (either shape) as ACP's ``session/new`` takes it; None for anything else."""
    parsed = McpServer.parse(server)
    return None if parsed is None else parsed.as_acp()


def settings_mcp_server(
    server: McpServer | Mapping[str, Any],
) -> tuple[str, dict[str, Any]] | None:
    """``server`` (either shape) as a Gemini CLI ``mcpServers`` entry: (name, entry)."""
    parsed = McpServer.parse(server)
    return None if parsed is None else (parsed.name, parsed.as_settings())
