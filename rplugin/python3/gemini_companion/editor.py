"""What the Python side says to the editor, as a protocol: every message from Python
to Lua, by name.

:class:`~gemini_companion.nvim_editor.NvimEditor` implements it over pynvim; its
Lua counterpart is ``lua/gemini_companion/host.lua`` (``M._receive``). Every method
is thread-safe and never blocks the caller. One-way messages return nothing; the
few whose answer matters return a :class:`concurrent.futures.Future` holding what
the Lua side returned, or the error it raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import concurrent.futures

# vim.log.levels
DEBUG, INFO, WARN, ERROR = 1, 2, 3, 4


class Editor(Protocol):
    # -- one-way ---------------------------------------------------------------------

    def publish_state(self, state: Mapping[str, Any]) -> None:
        """Hand the companion's state to the Lua side (status, statusline, terminal env)."""

    def notify(self, message: str, level: int = INFO) -> None:
        """Show a message to the user through ``vim.notify``."""

    def server_stopped(self) -> None:
        """The server stopped by itself: the Lua side stops forwarding editor events."""

    def host_info(self, query_id: int, info: Mapping[str, Any]) -> None:
        """The answer to the Lua side's ``query_info`` number ``query_id``."""

    def finish_diff(self, diff_id: int, result: str) -> None:
        """The answer to the CLI went out: close the view (``result``: accepted)."""

    def orphan_diff(self, diff_id: int) -> None:
        """The view's CLI is gone: keep the view, marked, with any edits."""

    def run_tool(self, call_id: int, name: str, arguments: Mapping[str, Any]) -> None:
        """Run a Neovim tool (``lua/gemini_companion/tools/init.lua``); the answer comes back
        as ``Companion.tool_result(call_id, ok, value)``."""

    def attach_refused(self, request: Mapping[str, Any], outside: list[str], reason: str) -> None:
        """The agent panel's prompt ``request`` was not sent: it attaches the files
        ``outside`` the workspace (real paths) the user has not confirmed for it
        (the panel asks, then sends ``request`` again with them ``confirmed``), or
        an attachment cannot be sent for ``reason``
        (``lua/gemini_companion/agent/prompt.lua`` ``_attach_refused``)."""

    # -- answered ----------------------------------------------------------------------

    def open_diff(self, spec: Mapping[str, Any]) -> concurrent.futures.Future[Any]:
        """Open a diff view (``lua/gemini_companion/diff.lua`` ``_open``)."""

    def close_diff(self, diff_id: int, result: str) -> concurrent.futures.Future[Any]:
        """Close a view without an answer; the future holds its proposal
        (``{text, eol, fileformat}``) or None."""

    def accept_failed(self, diff_id: int, message: str) -> concurrent.futures.Future[Any]:
        """The accepted text cannot be sent; the future holds whether the view is
        still open."""

    def read_buffer(self, path: str) -> concurrent.futures.Future[Any]:
        """The text of ``path``'s loaded buffer (``lua/gemini_companion/agent/files.lua``
        ``read``: ``{lines, eol, fileformat, tick, modified}``), or None when the file
        is not loaded."""

    def apply_buffer_edits(
        self, path: str, tick: int, edits: list[dict[str, Any]], options: Mapping[str, Any]
    ) -> concurrent.futures.Future[Any]:
        """Apply line ``edits`` made against changedtick ``tick`` to ``path``'s buffer as
        one undo step and write it (``files.lua`` ``apply``); the future holds
        ``{ok, reason?, error?}``."""

    def agent_draw(self, ops: list[dict[str, Any]]) -> concurrent.futures.Future[Any]:
        """Draw a batch of agent panel operations (agent/view.py documents them;
        ``lua/gemini_companion/agent/transcript.lua`` ``_apply``); the future is done
        once Neovim has drawn it, so batches never pile up."""
