"""The transport's events folded into a conversation's transcript and drawn by
the panel's view (view.py): text grows the last block of its kind, a tool call
is one block updated in place, a confirmation joins the pending list (and its
edit the diff tab, confirmations.py), the agent's news goes into the state.

Once the conversation is stopped nothing is folded: an agent still ending, or a
task of the stopped conversation, changes nothing the panel shows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from . import render, replayed
from .confirmations import Confirmations
from .conversation import Conversation
from .model import (
    AgentEvent,
    Block,
    CommandsUpdate,
    MessageChunk,
    Notice,
    SessionUpdate,
    StatusChange,
    ThoughtChunk,
    ToolCall,
    ToolCallUpdate,
    ToolOutput,
    TurnEnd,
    UserMessage,
)
from .view import PanelView

log = logging.getLogger(__name__)


class TranscriptFold:
    """The :class:`~.transport.EventSink` of one conversation. Use on its loop."""

    def __init__(
        self,
        conversation: Conversation,
        view: PanelView,
        confirmations: Confirmations,
        publish: Callable[[], None],
    ) -> None:
        self.conversation = conversation
        self.transcript = conversation.transcript
        self.view = view
        self.confirmations = confirmations
        self.publish = publish  # the state, to the view (once per batch)
        # Prompt blocks of a resumed conversation (drawn again as their chunks come),
        # and whether each was the transcript's first.
        self._replayed: set[int] = set()
        self._replayed_first: dict[int, bool] = {}
        self._replayed_attachments: dict[int, list[str]] = {}

    def settle(self, detail: str | None = None) -> None:
        """The status the conversation's facts give, published if it changed."""
        if self.conversation.settle(detail):
            self.publish()

    def emit(self, event: AgentEvent) -> None:
        if self.conversation.halted:
            return  # a stopped conversation is over: nothing of its agent changes it
        try:
            self._handle(event)
        except Exception:  # a bad event must not kill the transport's reader
            log.exception("agent event %r failed", event)

    def message_text(self, text: str) -> None:
        """More of the agent's answer (a :class:`MessageChunk`'s text, whose event is
        not built): the bulk of a stream, taken here with no event object and no
        dispatch on its type (issue 25 item 3). The same as ``emit(MessageChunk(text))``;
        ``text`` comes from the wire, already valid Unicode (acp/wire.py)."""
        if self.conversation.halted or not text:
            return
        try:
            blocks = self.transcript.blocks
            last = blocks[-1] if blocks else None
            if last is None or last.kind != "message":
                last = self.transcript.new_block("message")
                self.view.block(last.id, render.message_start(), "message")
            last.parts.append(text)
            self.view.append_valid(last.id, text)
        except Exception:  # a bad chunk must not kill the transport's reader
            log.exception("agent message chunk failed")

    def _handle(self, event: AgentEvent) -> None:
        if isinstance(event, MessageChunk):
            self._text("message", event.text)
        elif isinstance(event, ThoughtChunk):
            self._thought(event)
        elif isinstance(event, ToolCallUpdate):
            self.tool_call(event.call)
        elif isinstance(event, ToolOutput):
            block = self.transcript.tool_blocks.get(event.call_id)
            if block is not None and block.call is not None:
                text = block.call.live_output + event.text if event.append else event.text
                self.tool_call(block.call.but(live_output=text))
        elif isinstance(event, StatusChange):
            self._status(event)
        elif isinstance(event, SessionUpdate):
            info = self.conversation.info
            for key, value in event.values.items():
                if value is None:
                    info.pop(key, None)
                else:
                    info[key] = value
            self.publish()
        elif isinstance(event, CommandsUpdate):
            self.conversation.commands = event.commands
            self.publish()
        elif isinstance(event, Notice):
            self.notice(event.text, event.level)
        elif isinstance(event, UserMessage):
            self._replayed_prompt(event.text)
        elif isinstance(event, TurnEnd):
            self._turn_end(event)

    def _status(self, event: StatusChange) -> None:
        if event.status == "error":
            # The agent is gone or stuck: what it asked can no longer be answered.
            self.cancel_pending()
            self.conversation.fail(event.detail or "the agent failed")
            self.publish()
            if event.detail:
                self.notice(event.detail, "error")
        else:
            # The status is the conversation's facts': only what it says beside it.
            self.settle(event.detail)

    def _turn_end(self, event: TurnEnd) -> None:
        self.confirmations.turn_ended()
        usage = event.usage
        if usage is not None:
            self.conversation.count(usage)
            self.notice(f"Tokens: {usage.input_tokens:,} in, {usage.output_tokens:,} out", "info")
            self.publish()
        # The status follows the turn's task (over A2A it writes the user's version
        # of an edit after the turn's end): its end settles it.
        self.settle()

    def cancel_pending(self) -> None:
        """Every confirmation still waiting, cancelled in the transcript."""
        for call_id in list(self.transcript.pending):
            block = self.transcript.tool_blocks[call_id]
            if block.call is not None:
                self.tool_call(block.call.but(confirmation=None, status="cancelled"))

    def _text(self, kind: str, text: str) -> None:
        if not text:
            return
        last = self.transcript.last
        if last is None or last.kind != kind:
            last = self.transcript.new_block(kind)
            self.view.block(last.id, render.message_start(), kind)
        last.append(text)
        self.view.append(last.id, text)

    def prompt(self, text: str, mentions: list[str]) -> None:
        """The user's prompt (or command), drawn as it is sent."""
        first = not self.transcript.blocks
        block = self.transcript.new_block("prompt", text=text)
        self.view.block(block.id, render.prompt_lines(text, mentions, first), "prompt")

    def _replayed_prompt(self, text: str) -> None:
        """A prompt of a resumed conversation, drawn as a live one: the user's words
        and the attachment lines, not what the CLI wrote itself (replayed.py); the
        chunks of one message join its block."""
        words = replayed.user_words(text)
        if words is None:
            return
        text, attachments = words
        last = self.transcript.last
        if last is not None and last.kind == "prompt" and last.id in self._replayed:
            last.append(text)
        else:
            first = not self.transcript.blocks
            last = self.transcript.new_block("prompt", text=text)
            self._replayed.add(last.id)
            self._replayed_first[last.id] = first
        shown = self._replayed_attachments.setdefault(last.id, [])
        shown.extend(a for a in attachments if a not in shown)
        lines = render.prompt_lines(last.text, shown, self._replayed_first[last.id])
        self.view.block(last.id, lines, "prompt")

    def _thought(self, event: ThoughtChunk) -> None:
        last = self.transcript.last
        if last is None or last.kind != "thought" or event.subject:
            last = self.transcript.new_block("thought", subject=event.subject)
            self.view.block(last.id, render.thought_start(event.subject), "thought")
        if event.text:
            last.append(event.text)
            self.view.append(last.id, event.text, render.THOUGHT)

    def notice(self, text: str, level: str) -> None:
        if self.conversation.halted:
            return
        block = self.transcript.new_block("notice", text=text, level=level)
        self.view.block(block.id, render.block_lines(block), "notice")
        if level == "error":
            self.view.notify(f"Gemini agent: {text}", level)

    def _draw_tool(self, block: Block) -> None:
        call = block.call
        assert call is not None
        waits = call.confirmation is not None and call.status == "pending"
        self.view.block(block.id, render.block_lines(block), "tool", call.id if waits else None)

    def tool_call(self, call: ToolCall) -> None:
        """A tool call's new state: its block drawn again, the pending list kept."""
        tb = self.transcript.tool_blocks
        block = tb.get(call.id)
        if block is None:
            block = self.transcript.new_block("tool", call=call)
            tb[call.id] = block
        else:
            block.call = call
        pending = self.transcript.pending
        waits = call.confirmation is not None and call.status == "pending"
        changed = False
        if waits and call.id not in pending:
            pending.append(call.id)
            changed = True
            self.confirmations.waiting(call)
        elif not waits and call.id in pending:
            self.confirmations.resolved(call.id)
            changed = True
        self._draw_tool(block)
        if changed:
            self.settle()
            self.publish()
