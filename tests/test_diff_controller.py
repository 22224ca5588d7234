"""DiffController without Neovim: the races between the user's answer, closeDiff and
a disconnecting CLI, with a fake editor that records what the view was told."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from editor_double import RecordingEditor
from gemini_companion.diff import DiffController


class Harness:
    def __init__(self) -> None:
        self.editor = RecordingEditor()
        self.sent: list[tuple[str, str, dict[str, Any]]] = []
        self.gone: set[str] = set()
        self.diffs = DiffController(self.editor, self.notify)

    async def notify(self, session: str, method: str, params: Mapping[str, Any]) -> bool:
        if session in self.gone:
            return False
        self.sent.append((session, method, dict(params)))
        return True


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_an_answer_after_close_diff_sends_nothing(tmp_path: Path) -> None:
    h = Harness()
    path = str(tmp_path / "f.txt")

    async def scenario() -> None:
        assert not (await h.diffs.open_diff("s1", {"filePath": path, "newContent": "x"})).is_error
        diff_id = h.diffs.diffs[0].id
        h.editor.answers["close"] = {"text": "x!", "eol": True, "fileformat": "unix"}
        closed = await h.diffs.close_diff("s1", {"filePath": path})
        assert json.loads(closed.texts[0]) == {"content": "x!\n"}
        await h.diffs.accepted(diff_id, "x!", True, "unix")
        await h.diffs.rejected(diff_id)

    run(scenario())
    assert h.sent == []


def test_an_accept_after_the_cli_left_keeps_the_view_and_sends_nothing(tmp_path: Path) -> None:
    h = Harness()
    path = str(tmp_path / "f.txt")

    async def scenario() -> int:
        await h.diffs.open_diff("s1", {"filePath": path, "newContent": "x"})
        [diff] = h.diffs.diffs
        h.diffs.session_closed("s1")
        await h.diffs.accepted(diff.id, "edited", False, "unix")
        return diff.id

    diff_id = run(scenario())
    assert h.sent == []
    assert ("orphan", (diff_id,)) in h.editor.calls
    assert "finish" not in h.editor.names()


def test_an_accept_whose_stream_broke_marks_the_view_instead_of_closing_it(
    tmp_path: Path,
) -> None:
    h = Harness()
    path = str(tmp_path / "f.txt")

    async def scenario() -> None:
        await h.diffs.open_diff("s1", {"filePath": path, "newContent": "x"})
        h.gone.add("s1")
        await h.diffs.accepted(h.diffs.diffs[0].id, "x", False, "unix")

    run(scenario())
    assert h.editor.names()[-1] == "orphan"
    assert h.diffs.diffs == []


def test_text_that_cannot_be_sent_keeps_the_view_or_rejects_when_it_is_gone(
    tmp_path: Path,
) -> None:
    h = Harness()
    path = str(tmp_path / "f.txt")

    async def scenario() -> None:
        await h.diffs.open_diff("s1", {"filePath": path, "newContent": "x"})
        diff_id = h.diffs.diffs[0].id
        await h.diffs.accepted(diff_id, "bad\0", False, "unix")
        assert h.sent == []
        assert h.diffs.diffs, "the diff is still open for another try"
        h.editor.answers["accept_failed"] = False  # the view was closed meanwhile (:wq)
        await h.diffs.accepted(diff_id, "bad\0", False, "unix")

    run(scenario())
    assert h.sent == [("s1", "ide/diffRejected", {"filePath": path})]


def test_same_session_replaces_its_diff_silently_and_another_session_is_refused(
    tmp_path: Path,
) -> None:
    h = Harness()
    path = str(tmp_path / "f.txt")

    async def scenario() -> None:
        await h.diffs.open_diff("s1", {"filePath": path, "newContent": "one"})
        refused = await h.diffs.open_diff("s2", {"filePath": path, "newContent": "two"})
        assert refused.is_error
        assert "another Gemini CLI session" in refused.texts[0]
        assert not (await h.diffs.open_diff("s1", {"filePath": path, "newContent": "two"})).is_error
        refused_close = await h.diffs.close_diff("s2", {"filePath": path})
        assert refused_close.is_error

    run(scenario())
    assert h.sent == []
    assert h.editor.names() == ["open", "open"]  # diff.lua replaces the first view
    [diff] = h.diffs.diffs
    assert h.editor.of("open")[-1][0]["id"] == diff.id
    assert h.editor.of("open")[-1][0]["text"] == "two"


def test_a_view_that_fails_to_open_leaves_no_diff_behind(tmp_path: Path) -> None:
    h = Harness()
    path = str(tmp_path / "f.txt")

    def failing(spec: Mapping[str, Any]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_exception(RuntimeError("E5108: broken"))
        return future

    h.editor.open_diff = failing  # type: ignore[method-assign]
    result = run(h.diffs.open_diff("s1", {"filePath": path, "newContent": "x"}))
    assert result.is_error
    assert "could not open the diff view: E5108: broken" in result.texts[0]
    assert h.diffs.diffs == []
