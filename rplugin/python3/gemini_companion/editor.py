"""What the companion needs from the editor, as a protocol.

The pynvim glue in ``__init__.py`` implements it; every method is thread-safe and
never blocks the caller, so the server thread can use it directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import concurrent.futures

# vim.log.levels
DEBUG, INFO, WARN, ERROR = 1, 2, 3, 4


class Editor(Protocol):
    def publish_state(self, state: Mapping[str, Any]) -> None:
        """Hand the companion's state to the Lua side (status, statusline, terminal env)."""

    def notify(self, message: str, level: int = INFO) -> None:
        """Show a message to the user through ``vim.notify``."""

    def call_lua(self, code: str, args: Sequence[Any] = ()) -> concurrent.futures.Future[Any]:
        """Run ``code`` with ``...`` bound to ``args`` on Neovim's main loop; the future
        holds what it returned, or the error it raised."""
