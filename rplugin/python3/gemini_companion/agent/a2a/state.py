"""The state the parts of one A2A conversation share (transport.py builds the
parts and hands each what it needs): the sink its events go to, the task and
its context, the extension's dialect, and what the agent is told with the next
prompt. One dataclass, passed explicitly to the parts that read or change it;
nothing else of a part is reached by another."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import devtool

if TYPE_CHECKING:
    from ..model import AgentEvent
    from ..transport import EventSink

TERMINAL_STATES = {"completed", "failed", "canceled", "rejected"}
TURN_END_STATES = TERMINAL_STATES | {"input-required", "auth-required"}


@dataclass(eq=False)
class A2ATask:
    """One conversation's task on the agent, as its parts share it. Server loop only."""

    sink: EventSink | None = None
    """Where the panel's events go (``Transport.start``'s sink)."""
    dialect: str = devtool.CODER_AGENT
    task_id: str = ""
    context_id: str = ""
    state: str = ""
    seen: set[str] = field(default_factory=set)
    """Ids of the current task's messages already shown."""
    conversation: tuple[str, str, str] | None = None
    """The conversation's (task, context, state) while a slash command's task runs."""
    notes: list[str] = field(default_factory=list)
    """For the agent, with the next prompt."""

    @property
    def events(self) -> EventSink:
        assert self.sink is not None
        return self.sink

    def emit(self, event: AgentEvent) -> None:
        self.events.emit(event)

    def back_to_conversation(self) -> None:
        """A slash command's task ended: follow-ups go to the conversation again."""
        assert self.conversation is not None
        self.task_id, self.context_id, self.state = self.conversation
        self.conversation = None
        self.seen.clear()
