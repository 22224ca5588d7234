"""Agent edits in the diff tab of IDE mode: the second caller of diff.lua's view.

The same Lua view as ``openDiff`` (same keys, ``:w``, ``:q``, ``:GeminiAccept``,
``:GeminiReject``), with view ids from the same counter, so ``Companion`` routes
the user's answer by id: to ``diff.py`` for a CLI in a terminal, here for the
agent panel.

One edit, one review (issue 22 item 1). With ``ide.enabled`` in the user's Gemini
settings, ``gemini --acp`` (started with the terminals' environment) is also an IDE
client of the companion, and asks for each edit twice: ``session/request_permission``
over ACP, and ``openDiff`` over IDE mode, the same file and text. Gemini CLI 0.61.0
waits for both: after the ACP answer its ``onConfirm`` awaits the IDE answer, and it
writes the text the IDE answer carries. The ``openDiff`` is that edit's *twin*:
:meth:`DiffReview.claim` takes it (no second tab), and the user's one answer in the
review answers it too, ``ide/diffAccepted`` with the user's full text (so the CLI
writes it and its tool result tells the model) or ``ide/diffRejected``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..diff import next_diff_id
from ..editor import WARN
from ..paths import shown
from ..text import discard_handed_over, from_body, received_body, to_buffer

if TYPE_CHECKING:
    from ..editor import Editor
    from ..paths import PathPolicy

log = logging.getLogger(__name__)

Answered = Callable[[str, bool, "str | None", "str | None"], Awaitable[None]]
"""(call id, accepted, the accepted text, the option the user named or None)."""

IdeNotify = Callable[[str, str, Mapping[str, Any]], Awaitable[bool]]
"""Sends an IDE-mode notification to one MCP session (``run.py``'s)."""

# How long an ``openDiff`` that matches no edit under review waits for the agent's
# permission request to arrive (the CLI sends both at once; either may come first),
# while the agent is in a turn. Another CLI's diff waits that long at most, then opens.
CLAIM_WAIT = 2.0


@dataclass
class _Twin:
    session_id: str
    file_path: str


class DiffReview:
    """:class:`~.confirmations.EditReview` over diff.lua. Use on the session's loop."""

    def __init__(
        self,
        editor: Editor,
        answered: Answered,
        policy: Callable[[], PathPolicy | None] = lambda: None,
        ide_notify: IdeNotify | None = None,
        expecting: Callable[[], bool] = lambda: False,
        *,
        refusal: Callable[[str, str | None], str | None] = lambda _call, _option: None,
    ) -> None:
        """``policy``: where files not loaded in Neovim may be shown (the agent's
        file access policy, as ``openDiff``'s: diff.lua refuses a file outside it
        unless a buffer has it loaded). ``ide_notify`` answers an edit's IDE twin;
        ``expecting``: the agent is in a turn (its edit requests may be on the way);
        ``refusal``: why an accept (with the option named, or None) cannot answer
        an edit (consent.py), None when it can."""
        self._editor = editor
        self._answered = answered
        self._policy = policy
        self._ide_notify = ide_notify
        self._expecting = expecting
        self._refusal = refusal
        self._by_call: dict[str, int] = {}
        self._by_id: dict[int, str] = {}
        # Edits waiting for the user (call id -> file, proposal), their IDE twins,
        # and the answers of edits answered before their twin came (file, proposal
        # -> the answer), all forgotten when the turn ends (:meth:`turn_ended`).
        self._proposals: dict[str, tuple[str, str]] = {}
        self._twins: dict[str, _Twin] = {}
        self._early: dict[tuple[str, str], tuple[str, Mapping[str, Any]]] = {}
        self._arrived = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()

    def owns(self, diff_id: int) -> bool:
        return diff_id in self._by_id

    def expect(self, call_id: str, file_path: str, new_content: str) -> None:
        """An edit now waits for the user: its IDE twin, if one comes, is claimed."""
        self._proposals[call_id] = (file_path, new_content)
        self._arrived.set()

    def reviews(self, file_path: str) -> bool:
        """An edit of ``file_path`` waits for the user (its view open, or opening)."""
        return any(path == file_path for path, _ in self._proposals.values())

    async def claim(self, session_id: str, file_path: str, new_content: str) -> bool:
        """True if this ``openDiff`` is the IDE twin of an edit under review (then no
        view opens for it: the review's answer answers it); waits up to
        :data:`CLAIM_WAIT` for the edit's permission request while the agent works."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLAIM_WAIT
        while True:
            key = (file_path, new_content)
            early = self._early.pop(key, None)
            if early is not None:  # answered already: the twin gets the same answer
                self._spawn(self._send(session_id, early[0], {"filePath": file_path, **early[1]}))
                return True
            call_id = next(
                (
                    c
                    for c, proposal in self._proposals.items()
                    if proposal == key and c not in self._twins
                ),
                None,
            )
            if call_id is not None:
                self._twins[call_id] = _Twin(session_id, file_path)
                log.info(
                    "openDiff for %s is the IDE twin of the agent's edit %s", file_path, call_id
                )
                return True
            remaining = deadline - loop.time()
            if remaining <= 0 or not self._expecting():
                return False
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except asyncio.TimeoutError:
                return False

    def settle(self, call_id: str, accepted: bool, content: str | None) -> Awaitable[bool]:
        """The user answered edit ``call_id`` (``content``: the full accepted text):
        its IDE twin gets the same answer. Recorded at once; the awaitable sends it,
        True if a twin took the accepted text (the agent then writes it itself, and
        its tool result tells the model)."""
        proposal = self._proposals.pop(call_id, None)
        twin = self._twins.pop(call_id, None)
        if accepted:
            text = content if content is not None else (proposal[1] if proposal else "")
            answer: tuple[str, Mapping[str, Any]] = ("ide/diffAccepted", {"content": text})
        else:
            answer = ("ide/diffRejected", {})
        if twin is None:
            if proposal is not None and self._expecting():
                self._early[proposal] = answer  # its twin may still come
            return _done(False)
        return self._send(twin.session_id, answer[0], {"filePath": twin.file_path, **answer[1]})

    async def _send(self, session_id: str, method: str, params: Mapping[str, Any]) -> bool:
        if self._ide_notify is None:
            return False
        if "filePath" not in params:
            return False
        try:
            sent = await self._ide_notify(session_id, method, params)
        except Exception:
            log.exception("answering the IDE twin failed")
            return False
        if not sent:
            log.warning("the IDE twin's session %s is gone: %s not sent", session_id, method)
        return sent and method == "ide/diffAccepted"

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def turn_ended(self) -> None:
        """The agent's turn ended: no twin of its edits can come any more."""
        self._early.clear()

    async def open(self, call_id: str, file_path: str, new_content: str) -> None:
        buffer = to_buffer(new_content)
        diff_id = next_diff_id()
        self._by_call[call_id] = diff_id
        self._by_id[diff_id] = call_id
        spec = {
            "id": diff_id,
            "file_path": file_path,
            "text": buffer.body,
            "eol": buffer.eol,
            "fileformat": buffer.fileformat,
            "session": "agent",
            "call_id": call_id,
        }
        policy = self._policy()
        if policy is not None and not policy.allows(file_path):
            spec["outside_workspace"] = True
        try:
            opened = await asyncio.wrap_future(self._editor.open_diff(spec))
        except Exception:
            self._forget(call_id)
            raise
        if isinstance(opened, Mapping) and opened.get("refused"):
            self._forget(call_id)
            raise RuntimeError(str(opened["refused"]))

    def _forget(self, call_id: str) -> int | None:
        diff_id = self._by_call.pop(call_id, None)
        if diff_id is not None:
            self._by_id.pop(diff_id, None)
        return diff_id

    def close(self, call_id: str) -> None:
        """Close the view; an IDE twin not answered yet is rejected (the agent stopped
        waiting: cancelled, refused, or the agent went). Text the user changed in the
        view is kept (:meth:`_close_keeping`)."""
        proposal = self._proposals.get(call_id)
        if call_id in self._twins or call_id in self._proposals:
            self._spawn(self.settle(call_id, False, None))
        diff_id = self._forget(call_id)
        if diff_id is not None:
            self._spawn(self._close_keeping(diff_id, proposal))

    async def _close_keeping(self, diff_id: int, proposal: tuple[str, str] | None) -> None:
        """Close view ``diff_id`` with no answer; if the user changed the proposal
        there, their text is saved in a private (0600) file the message names: the
        user's text is never lost, whoever ends the review."""
        from .files import keep_users_text

        try:
            view = await asyncio.wrap_future(self._editor.close_diff(diff_id, "closed"))
        except Exception:
            log.exception("closing the diff view %d failed", diff_id)
            return
        if not isinstance(view, Mapping):
            return  # gone already
        if proposal is None:
            discard_handed_over(view)  # a big text handed over in a file: removed
            return
        path, proposed = proposal
        try:
            name = view.get("text_file")
            body = (
                await asyncio.to_thread(received_body, {"file": name})
                if isinstance(name, str) and name
                else str(view.get("text", ""))
            )
        except OSError as exc:
            log.error("reading the closed view %d failed: %s", diff_id, exc)
            return
        text = from_body(body, bool(view.get("eol")), str(view.get("fileformat") or "unix"))
        if text == proposed:
            return
        try:
            kept = await asyncio.to_thread(keep_users_text, path, text)
        except OSError as exc:
            log.error("could not keep the user's text of %s: %s", path, exc)
            kept = f"nowhere: it could not be saved ({exc.strerror or exc})"
        # Where the text is kept comes first: a long message is cut for the message
        # area (state.lua), and a deep TMPDIR makes that path long.
        self._editor.notify(
            f"Your text from the diff tab is kept in {kept} : the agent's edit of"
            f" {shown(path)} ended before your answer.",
            WARN,
        )

    async def accepted(
        self, diff_id: int, body: str, eol: bool, fileformat: str, option: str | None = None
    ) -> None:
        call_id = self._by_id.get(diff_id)
        if call_id is None:
            return
        why = self._refusal(call_id, option)
        if why is not None:  # the view stays open, the user's text in it
            self._editor.accept_failed(diff_id, f"Gemini agent: {why}")
            return
        self._forget(call_id)
        # The tab closes now: the answer runs the rest of the agent's turn, which
        # may be long (the session records the answer before it is sent).
        self._editor.finish_diff(diff_id, "accepted")
        await self._answered(call_id, True, from_body(body, eol, fileformat), option)

    async def rejected(self, diff_id: int, option: str | None = None) -> None:
        call_id = self._by_id.get(diff_id)
        if call_id is None:
            return
        self._forget(call_id)
        await self._answered(call_id, False, None, option)


async def _done(value: bool) -> bool:
    return value


def user_edit_note(path: str, proposal: str, accepted: str) -> str:
    """What the agent is told when the user accepted its edit of ``path`` with
    changes: a unified diff from its proposal to the text written."""
    import difflib

    diff = "".join(
        difflib.unified_diff(
            proposal.splitlines(keepends=True),
            accepted.splitlines(keepends=True),
            "your proposal",
            "written",
        )
    )
    return (
        f"[The user changed your proposed edit of {path} before accepting it. The file"
        f" now holds the user's version; the change from your proposal:\n{diff}]"
    )
