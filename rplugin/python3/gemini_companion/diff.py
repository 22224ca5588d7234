"""Diff review: the ``openDiff`` and ``closeDiff`` tools and their outcome.

Spec: ide-companion-spec.md section III, with what the real client expects
(client-behaviour.md, "IDE mode: tools and notifications"): ``openDiff`` answers
``content: []`` once the view is open; the outcome goes later, as
``ide/diffAccepted``/``ide/diffRejected``, to the session that asked, matched by
the exact ``filePath``; ``closeDiff`` answers one text part holding the JSON
``{"content": ...}`` and sends no notification. The plugin never writes the target
file: the CLI does after an accept.

Everything here runs on the server's loop. The view itself is Lua
(lua/gemini_companion/diff.lua), reached through :class:`~.editor.Editor`; the
user's answers come back through ``Companion.diff_accepted``/``diff_rejected``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .bodies import KeptProposal, take_proposal
from .diff_arguments import BadRequestError, validate_close, validate_open
from .editor import Editor
from .paths import PathPolicy, shown
from .text import (
    InvalidTextError,
    buffer_options,
    check_text,
    from_body,
    take_text_file,
    to_buffer,
    write_body,
)
from .tools import ToolResult

log = logging.getLogger(__name__)

Notifier = Callable[[str, str, Mapping[str, Any]], Awaitable[bool]]
# (session, filePath, newContent): True when the agent panel answers this openDiff
# (its own edit, asked again over IDE mode: agent/review.py); no view opens.
Claim = Callable[[str, str, str], Awaitable["bool | str"]]
"""(session id, file, text) -> True: the agent panel's review answers this openDiff;
a string: refused, why (the panel reviews an edit of that file); False: opened here."""
# Queues one whole SSE event (bytes ready to write) for a session; False if it is gone.
EventSender = Callable[[str, bytearray], bool]

# Ids are unique for the life of the host, across server restarts: a view left
# open (orphaned) by a stopped server must never share an id with a new diff.
_diff_ids = itertools.count(1)


def next_diff_id() -> int:
    """A new view id; the agent's edit reviews (agent/review.py) take theirs here too."""
    return next(_diff_ids)


# From this many characters on, a proposal reaches Neovim through a private file
# rather than inside the RPC message: pynvim would hold several copies of it (the
# packed message, its packer's buffer, the pipe's write buffer), and the packer keeps
# its buffer at that size for ever.
FILE_HANDOFF_CHARS = 256 * 1024


@dataclass
class DiffSession:
    """One open diff: which CLI session asked, for which file. The proposal itself
    lives in Neovim's buffer only: closeDiff and an accept read it from there; for
    a big one, its JSON string as the client sent it is ``kept`` on disk, for an
    accept of the proposal unchanged."""

    id: int
    session_id: str
    file_path: str
    kept: KeptProposal | None = None


class DiffController:
    """The open diffs of every CLI session, keyed by the exact ``filePath``."""

    def __init__(
        self,
        editor: Editor,
        notify: Notifier,
        policy: Callable[[], PathPolicy | None] = lambda: None,
        send_event: EventSender | None = None,
        claim: Claim | None = None,
    ) -> None:
        """``policy`` gives the folders diffs may show files from; None: anywhere.
        ``send_event`` writes a ready event (an unchanged accept); None: proposals
        are not kept."""
        self._editor = editor
        self._notify = notify
        self._send_event = send_event
        self._claim = claim
        self._policy = policy
        self._by_path: dict[str, DiffSession] = {}
        self._by_id: dict[int, DiffSession] = {}

    @property
    def diffs(self) -> list[DiffSession]:
        return list(self._by_id.values())

    def _add(self, diff: DiffSession) -> None:
        self._by_path[diff.file_path] = diff
        self._by_id[diff.id] = diff

    def _drop(self, diff: DiffSession) -> None:
        if self._by_path.get(diff.file_path) is diff:
            del self._by_path[diff.file_path]
        self._by_id.pop(diff.id, None)
        if diff.kept is not None:
            diff.kept.discard()
            diff.kept = None

    # -- tools -------------------------------------------------------------------------

    async def open_diff(self, session_id: str | None, arguments: Any) -> ToolResult:
        arguments, kept = take_proposal(arguments)  # a big one was set aside (bodies.py)
        if kept is not None and self._send_event is None:
            kept.discard()
            kept = None
        try:
            path, content = validate_open(arguments)
            if session_id is None:
                raise BadRequestError("openDiff: the request has no MCP session to answer to")
        except BadRequestError as exc:
            if kept is not None:
                kept.discard()
            return ToolResult.error(str(exc))
        claimed = await self._claim(session_id, path, content) if self._claim else False
        if claimed:
            if kept is not None:
                kept.discard()
            if isinstance(claimed, str):
                return ToolResult.error(f"openDiff: {claimed}")
            log.info("openDiff for %s answered by the agent panel's review", shown(path))
            return ToolResult()
        policy = self._policy()
        outside = policy is not None and not policy.allows(path)
        current = self._by_path.get(path)
        if current is not None:
            if current.session_id != session_id:
                return ToolResult.error(
                    f"openDiff: a diff for {path} is already open for another Gemini CLI session"
                )
            # The CLI shows one diff at a time; a second one for the same file means
            # it gave up on the first. Forget it without an answer (any answer for this
            # filePath would be taken as the answer to the new diff); diff.lua replaces
            # its view with the new one.
            self._drop(current)
        diff = DiffSession(next_diff_id(), session_id, path, kept)
        del arguments
        self._add(diff)
        spec: dict[str, Any] = {
            "id": diff.id,
            "file_path": path,
            "session": session_id,
            # Outside the workspace: shown only if Neovim has the file loaded already.
            "outside_workspace": outside,
            # Accepted unchanged, the proposal is sent as it came: diff.lua says so.
            "kept": kept is not None,
        }
        try:
            if len(content) < FILE_HANDOFF_CHARS:
                buffer = to_buffer(content)
                del content
                spec.update(text=buffer.body, eol=buffer.eol, fileformat=buffer.fileformat)
                del buffer
                opened = await asyncio.wrap_future(self._editor.open_diff(spec))
            else:
                held = [content]  # the only reference, dropped once written
                del content
                opened = await self._open_through_file(spec, held)
        except Exception as exc:
            self._drop(diff)
            log.exception("opening the diff view for %s failed", shown(path))
            return ToolResult.error(f"openDiff: Neovim could not open the diff view: {exc}")
        if isinstance(opened, Mapping) and opened.get("refused"):
            self._drop(diff)
            roots = ", ".join(policy.roots) if policy is not None and policy.roots else "none"
            log.warning("diff refused for %s: outside the workspace", shown(path))
            return ToolResult.error(
                f"openDiff: {shown(path)} is outside the workspace folders ({roots}) and not"
                " open in Neovim: refused. Open the file in Neovim first, or add its folder"
                " to the diff.allowed_dirs option."
            )
        log.info("diff %d opened for %s (session %s)", diff.id, shown(path), session_id)
        return ToolResult()

    async def _open_through_file(self, spec: dict[str, Any], held: list[str]) -> Any:
        """Open the view with the proposal's body in a private file (0600, in a
        folder of its own) that diff.lua reads; removed once the view is open.
        ``held`` holds the proposal, which is let go once written."""
        import tempfile

        eol, fileformat = buffer_options(held[0])
        loop = asyncio.get_running_loop()
        with tempfile.TemporaryDirectory(prefix="gemini-companion-diff-") as folder:
            name = os.path.join(folder, "proposal")

            def write() -> None:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with open(fd, "wb") as file:
                    write_body(held.pop(), file)

            await loop.run_in_executor(None, write)
            spec.update(text="", text_file=name, eol=eol, fileformat=fileformat)
            return await asyncio.wrap_future(self._editor.open_diff(spec))

    async def close_diff(self, session_id: str | None, arguments: Any) -> ToolResult:
        try:
            path = validate_close(arguments)
        except BadRequestError as exc:
            return ToolResult.error(str(exc))
        diff = self._by_path.get(path)
        if diff is None or diff.session_id != session_id:
            return ToolResult.error(f"closeDiff: no diff is open for {shown(path)}")
        # Dropped first: an accept or reject the user sends meanwhile finds nothing,
        # so no notification goes out for a diff closed this way.
        self._drop(diff)
        try:
            view = await asyncio.wrap_future(self._editor.close_diff(diff.id, "closed"))
        except Exception:
            log.exception("closing the diff view for %s failed", shown(path))
            view = None
        if not isinstance(view, Mapping):
            # The view went away by itself: the CLI keeps its own proposal.
            return ToolResult.error(f"closeDiff: the diff view for {shown(path)} is gone")
        try:
            body = await _view_text(view)
        except OSError as exc:
            log.error("reading the proposal of diff %d failed: %s", diff.id, exc)
            return ToolResult.error(f"closeDiff: the text of the view could not be read: {exc}")
        text = _replace_invalid(from_body(body, bool(view["eol"]), str(view["fileformat"])))
        del body
        log.info("diff %d closed by the CLI", diff.id)
        return ToolResult((json.dumps({"content": text}, ensure_ascii=False),))

    # -- the user's answers ------------------------------------------------------------

    async def accepted(self, diff_id: int, body: str | None, eol: bool, fileformat: str) -> None:
        """The user accepted: ``body`` is the proposal's lines joined by newlines, or
        None for the proposal unchanged (diff.lua saw no change since it was shown)."""
        diff = self._by_id.get(diff_id)
        if diff is None:
            # Closed by closeDiff meanwhile (the view is gone: nothing happens), or its
            # CLI went away: keep the view, marked, with the text that was not sent.
            self._editor.orphan_diff(diff_id)
            return
        if body is None:
            await self._accepted_unchanged(diff)
            return
        text = from_body(body, eol, fileformat)
        del body  # a big one is held once, not twice, while its event is made
        try:
            check_text(text)
        except InvalidTextError as exc:
            await self._accept_failed(diff, f"The proposal cannot be accepted: {exc}")
            return
        self._drop(diff)
        params = {"filePath": diff.file_path, "content": text}
        if await self._notify(diff.session_id, "ide/diffAccepted", params):
            log.info("diff %d accepted (%d characters)", diff_id, len(text))
            self._editor.finish_diff(diff_id, "accepted")
        else:
            log.warning("diff %d accepted, but its CLI session is gone", diff_id)
            self._editor.orphan_diff(diff_id)

    async def _accepted_unchanged(self, diff: DiffSession) -> None:
        """Send the proposal back as the client sent it: its kept JSON string spliced
        into the notification, nothing decoded or encoded. If that cannot be done,
        the view stays open and says so; diff.lua sends the text at the next accept."""
        kept, diff.kept = diff.kept, None
        if kept is None or self._send_event is None:
            await self._accept_failed(diff, "The proposal could not be sent: accept it again.")
            return
        prefix = (
            b'event: message\ndata: {"jsonrpc":"2.0","method":"ide/diffAccepted",'
            b'"params":{"filePath":' + json.dumps(diff.file_path).encode() + b',"content":'
        )
        try:
            event = await asyncio.get_running_loop().run_in_executor(
                None, kept.read_between, prefix, b"}}\n\n"
            )
        except OSError as exc:
            log.error("reading the kept proposal of diff %d failed: %s", diff.id, exc)
            await self._accept_failed(diff, f"The proposal could not be read: {exc}. Accept again.")
            return
        finally:
            kept.discard()
        if self._by_id.get(diff.id) is not diff:
            return  # closed by closeDiff meanwhile, or its CLI went away: nothing is sent
        self._drop(diff)
        size = len(event)
        if self._send_event(diff.session_id, event):
            del event
            log.info("diff %d accepted unchanged (%d bytes sent as received)", diff.id, size)
            self._editor.finish_diff(diff.id, "accepted")
        else:
            log.warning("diff %d accepted, but its CLI session is gone", diff.id)
            self._editor.orphan_diff(diff.id)

    async def _accept_failed(self, diff: DiffSession, message: str) -> None:
        """The view is told; if it is gone too, the CLI gets a rejection."""
        if not await asyncio.wrap_future(self._editor.accept_failed(diff.id, message)):
            self._drop(diff)  # the view is gone too: the CLI must not wait for ever
            await self._notify(diff.session_id, "ide/diffRejected", {"filePath": diff.file_path})

    async def rejected(self, diff_id: int) -> None:
        diff = self._by_id.get(diff_id)
        if diff is None:
            return
        self._drop(diff)
        if await self._notify(diff.session_id, "ide/diffRejected", {"filePath": diff.file_path}):
            log.info("diff %d rejected", diff_id)
        else:
            log.info("diff %d rejected; its CLI session was already gone", diff_id)

    # -- sessions ----------------------------------------------------------------------

    def session_closed(self, session_id: str) -> None:
        """The CLI is gone: its diffs can no longer be answered. The views stay, marked,
        so edits made in them are not lost; nothing more is sent for them."""
        for diff in [d for d in self._by_id.values() if d.session_id == session_id]:
            log.info("diff %d orphaned: CLI session %s disconnected", diff.id, session_id)
            self._orphan(diff)

    def orphan_all(self) -> None:
        """The server stops: every view stays, marked, as for a disconnect."""
        for diff in list(self._by_id.values()):
            self._orphan(diff)

    def _orphan(self, diff: DiffSession) -> None:
        self._drop(diff)
        self._editor.orphan_diff(diff.id)


async def _view_text(view: Mapping[str, Any]) -> str:
    """The proposal's body diff.lua sent: inline, or a big one in a file it wrote
    (read here, in a worker thread, and removed)."""
    name = view.get("text_file")
    if not isinstance(name, str) or not name:
        return str(view["text"])
    return await asyncio.get_running_loop().run_in_executor(None, take_text_file, name)


def _replace_invalid(text: str) -> str:
    """Bytes that are not UTF-8 (typed into the proposal) replaced, for JSON."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text
