"""The state the parts of one ACP conversation share (transport.py builds the
parts and hands each what it needs): the session's id, the sink its events go to,
the tool calls as shown (events.py), file access (agent/files.py), the
permissions waiting for the user, the writes they granted, and the edits the user
accepted with changes of their own. One dataclass, passed explicitly to the parts
that read or change it; nothing else of a part is reached by another."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .grants import WriteGrants
from .permissions import PendingPermissions

if TYPE_CHECKING:
    from ..files import EditorFiles
    from ..model import AgentEvent
    from ..transport import EventSink
    from .events import UpdateTranslator


@dataclass(eq=False)
class AcpSession:
    """One conversation's ACP session, as its parts share it. Server loop only."""

    events: EventSink | None = None
    """Where the panel's events go (``Transport.start``'s sink)."""
    id: str | None = None
    """The ACP session (shared.py routes the agent's messages by it)."""
    updates: UpdateTranslator | None = None
    """The tool calls as shown; made once the modules that read messages are loaded."""
    files: EditorFiles | None = None
    """The agent's file access through Neovim; made with ``updates``."""
    permissions: PendingPermissions = field(default_factory=PendingPermissions)
    grants: WriteGrants = field(default_factory=WriteGrants)
    """The writes the user approved; a new session starts with none (handshake)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """The ids given to requests that came with the id of one still waiting
    (21.8): alias -> the agent's id, whose updates the alias follows."""
    written: dict[str, tuple[str, str | None, str]] = field(default_factory=dict)
    """Edits the user accepted with changes: call id -> (path, old text, the text
    written), shown in place of the agent's own diff."""
    notes: dict[str, str] = field(default_factory=dict)
    """What the agent is told with the next prompt of those edits, by file."""

    def emit(self, *events: AgentEvent) -> None:
        if self.events is not None:
            for event in events:
                self.events.emit(event)

    def cancel_waiting(self) -> None:
        """Answer every permission still waiting ``cancelled``, shown so."""
        for call in self.permissions.cancel_all():
            if self.updates is not None:
                self.emit(self.updates.put(call.but(status="cancelled", confirmation=None)))
