"""A history that survives Neovim restarts (issue 30, requirement 2):
``:GeminiAgentConversations`` lists the workspace's live and past conversations
through ``vim.ui.select`` (each with its title, when it was last used, its
protocol, and why it cannot be loaded when it cannot); choosing a past ACP one
loads it into a conversation of its own; conversations are renamed
(``:GeminiAgentRename``, ``:GeminiAgentConversations rename``) and deleted
(``:GeminiAgentConversations delete``); the history file under
``stdpath("state")`` survives damage (moved aside, said once) and absence. (A
load after a restart with the real ``gemini --acp``: test_agent_history_restart.py.)

Real parts: headless Neovims with the plugin and its Python host, sharing one
``XDG_STATE_HOME`` (the test's sandbox) as a restart would; a scripted ACP agent
with ``loadSession`` (tests/agent_fakes/acp_history_agent.py, which keeps its
sessions in a folder), and the scripted transport for A2A. The picker is the
user's ``vim.ui.select``, replaced by one that records what it was given and
chooses the entry holding a given text (history_picker.py)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_setup import transcript, wait_agent, wait_transcript
from harness import Nvim, wait_for
from history_picker import (
    PICKER,
    conversations,
    history_file,
    history_records,
    notified,
    one_label,
    pick,
    text_of,
)
from pynvim.api import NvimError

HISTORY_AGENT = Path(__file__).parent / "agent_fakes" / "acp_history_agent.py"
WAIT = 90


def _panel(nvim_factory: Callable[..., Nvim], tmp_path: Path) -> Nvim:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    store = tmp_path / "agent-sessions"
    store.mkdir(exist_ok=True)
    cmd = [sys.executable, str(HISTORY_AGENT), "--store", str(store)]
    nvim = nvim_factory(cwd=work, setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}})
    nvim.wait_running()
    nvim.lua(PICKER)
    return nvim


def _cwd(nvim: Nvim) -> str:
    return str(nvim.lua("return vim.fn.getcwd()"))


def _record(
    nvim: Nvim, id_: str, title: str, protocol: str = "acp", **extra: Any
) -> dict[str, Any]:
    """A past conversation of a day ago (no minute to wait for), used an hour ago."""
    now = time.time()
    return {
        "id": id_,
        "cwd": _cwd(nvim),
        "protocol": protocol,
        "title": title,
        "created_at": now - 86400,
        "updated_at": now - 3600,
        **extra,
    }


def _seed(nvim: Nvim, tmp_path: Path, records: list[dict[str, Any]]) -> None:
    """The history holds ``records``; the scripted agent keeps a conversation for each
    ACP one whose title is not "lost"."""
    path = history_file(nvim)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records))
    for r in records:
        if r["protocol"] == "acp" and "lost" not in r["title"]:
            words = f"about {r['title']}"
            turns = [["user", words], ["agent", f"echo: {words}"]]
            (tmp_path / "agent-sessions" / f"{r['id']}.json").write_text(json.dumps(turns))


def _prompt(nvim: Nvim, words: str) -> dict[str, Any]:
    nvim.api.command(f"GeminiAgent {words}")
    wait_transcript(nvim, f"echo: {words.splitlines()[0]}", WAIT)
    return wait_agent(nvim, "idle", lambda s: s["state"] == "idle")


def _when(label: str) -> float:
    """The time a picker's label shows (local time, to the minute)."""
    return time.mktime(time.strptime(label[2:18], "%Y-%m-%d %H:%M"))


def _minute(t: float) -> float:
    return t - time.localtime(t).tm_sec - (t % 1)


def test_the_picker_lists_live_and_past_conversations_with_title_time_and_protocol(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    _seed(
        nvim,
        tmp_path,
        [
            _record(nvim, "past-1", "the apricot talk"),
            _record(nvim, "task-1", "an a2a task", "a2a", updated_at=time.time() - 7200),
            {**_record(nvim, "elsewhere", "another workspace"), "cwd": str(tmp_path)},
        ],
    )
    before = time.time()
    _prompt(nvim, "hello live")
    after = time.time()
    labels = pick(nvim)
    assert len(labels) == 3, labels  # the other workspace's is not listed
    live, past, task = labels
    assert live.startswith("*") and "hello live" in live and "acp" in live, live
    assert _minute(before) <= _when(live) <= after, (live, before, after)
    assert "the apricot talk" in past and "acp" in past and not past.startswith("!"), past
    used = history_records(nvim)["past-1"]["updated_at"]
    assert time.strftime("%Y-%m-%d %H:%M", time.localtime(used)) in past, past
    assert task.startswith("!") and "a2a" in task and "an a2a task" in task, task
    assert "cannot load: an A2A task cannot be loaded again" in task, task
    # Choosing the A2A one says why and changes nothing.
    pick(nvim, choose="an a2a task")
    assert any("cannot load" in n and "an a2a task" in n for n in notified(nvim)), notified(nvim)
    assert len(conversations(nvim)) == 1


def test_choosing_a_past_conversation_loads_it_into_its_own_transcript(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    _seed(nvim, tmp_path, [_record(nvim, "past-1", "the apricot talk")])
    first = int(_prompt(nvim, "hello live")["conversation"])
    pick(nvim, choose="the apricot talk")

    def loaded() -> dict[str, Any] | None:
        found = [c for c in conversations(nvim) if c["id"] != first]
        return found[0] if found and found[0].get("session_id") == "past-1" else None

    second = wait_for(loaded, WAIT, "the past conversation loaded in a new one")
    wait_for(
        lambda: "echo: about the apricot talk" in text_of(nvim, second["id"]), WAIT, "its replay"
    )
    assert "about the apricot talk" in transcript(nvim), "the loaded one is shown"
    assert second["title"] == "the apricot talk"
    assert "apricot" not in text_of(nvim, first), "the live one keeps its own transcript"
    assert "hello live" in text_of(nvim, first)
    # It goes on, and the picker now lists it as live, once.
    _prompt(nvim, "and more")
    labels = pick(nvim)
    assert one_label(labels, "the apricot talk").startswith("*"), labels
    assert len(labels) == 2, labels
    # Choosing the first one shows it again.
    pick(nvim, choose="hello live")
    assert "hello live" in transcript(nvim)


def test_a_conversation_that_cannot_be_loaded_is_marked_with_the_agents_reason(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    _seed(nvim, tmp_path, [_record(nvim, "gone-1", "the lost talk")])
    assert not pick(nvim)[0].startswith("!")
    pick(nvim, choose="the lost talk")
    wait_for(
        lambda: (
            "Invalid session identifier" in history_records(nvim).get("gone-1", {}).get("error", "")
        ),
        WAIT,
        "the failed load marked in the history",
    )
    label = one_label(pick(nvim), "the lost talk")
    assert label.startswith("!"), label
    assert "cannot load: its last load failed: Invalid session identifier" in label, label
    # It stays in the history, and after a restart too.
    nvim.close()
    again = _panel(nvim_factory, tmp_path)
    assert one_label(pick(again), "the lost talk").startswith("!")


def test_conversations_are_renamed_and_deleted(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    _seed(nvim, tmp_path, [_record(nvim, "past-1", "the apricot talk")])
    session = _prompt(nvim, "first words here\nand a second line")["session_id"]
    assert conversations(nvim)[0]["title"] == "first words here"
    wait_for(
        lambda: history_records(nvim).get(session, {}).get("title") == "first words here",
        WAIT,
        "the title",
    )

    nvim.api.command("GeminiAgentRename My topic")
    assert conversations(nvim)[0]["title"] == "My topic"
    assert history_records(nvim)[session]["title"] == "My topic"
    assert "My topic" in one_label(pick(nvim), "My topic")

    nvim.lua("_G.answer = 'Apricots'")
    pick(nvim, "rename", choose="the apricot talk")
    assert history_records(nvim)["past-1"]["title"] == "Apricots"
    assert "Apricots" in one_label(pick(nvim), "Apricots")

    nvim.lua("_G.answer = '   '")
    with pytest.raises(NvimError, match="one line of text"):
        pick(nvim, "rename", choose="Apricots")
    assert history_records(nvim)["past-1"]["title"] == "Apricots", "a blank title changes nothing"

    pick(nvim, "delete", choose="Apricots")
    assert "past-1" not in history_records(nvim)
    assert not [label for label in pick(nvim) if "Apricots" in label]
    assert session in history_records(nvim), "nothing else is lost"

    # The name survives a restart.
    nvim.close()
    again = _panel(nvim_factory, tmp_path)
    assert pick(again) == [one_label(pick(again), "My topic")]


def test_a_damaged_history_is_moved_aside_said_once_and_starts_empty(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    path = history_file(nvim)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[{"id": "x", "title": "half a fi')
    assert pick(nvim) == []
    asides = list(path.parent.glob(path.name + ".corrupt-*"))
    assert len(asides) == 1 and asides[0].read_text() == '[{"id": "x", "title": "half a fi'
    damaged = [n for n in notified(nvim) if "was damaged" in n]
    assert len(damaged) == 1 and str(asides[0]) in damaged[0] and "starts empty" in damaged[0]
    assert any("no conversations" in n for n in notified(nvim))
    # The history goes on from empty; the damaged file is kept.
    session = _prompt(nvim, "after the damage")["session_id"]
    wait_for(lambda: session in history_records(nvim), WAIT, "the new conversation recorded")
    assert list(history_records(nvim)) == [session]
    assert "after the damage" in one_label(pick(nvim), "after the damage")
    assert [n for n in notified(nvim) if "was damaged" in n] == damaged, "said once"
    assert asides[0].exists()


def test_a_history_damaged_while_the_panel_runs_is_moved_aside_and_said(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    """Damaged while the agent works (the Python side reads it as it records the
    next prompt): the user is told where it went, and the history goes on empty."""
    nvim = _panel(nvim_factory, tmp_path)
    path = history_file(nvim)
    first = _prompt(nvim, "before the damage")["session_id"]
    wait_for(lambda: first in history_records(nvim), WAIT, "the conversation recorded")
    path.write_text("{ not a list")
    nvim.api.command("GeminiAgent after the damage")
    wait_transcript(nvim, "echo: after the damage", WAIT)
    said = wait_for(
        lambda: [n for n in notified(nvim) if "history was damaged" in n], WAIT, "the message"
    )
    asides = list(path.parent.glob(path.name + ".corrupt-*"))
    assert len(asides) == 1 and asides[0].read_text() == "{ not a list"
    # Its name only: a message holding a long path would be cut.
    assert f"({asides[0].name} kept beside it)" in said[0] and "starts empty" in said[0], said
    wait_for(lambda: first in history_records(nvim), WAIT, "the conversation recorded again")


def test_a_missing_history_is_an_empty_one(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    assert not history_file(nvim).exists()
    assert pick(nvim) == []
    assert any("no conversations" in n for n in notified(nvim)), notified(nvim)
    assert not [n for n in notified(nvim) if "was damaged" in n or "cannot" in n]
    _prompt(nvim, "the first one")
    assert ["the first one" in label for label in pick(nvim)] == [True]


def test_an_a2a_conversation_is_recorded_and_listed_as_a2a(scripted_nvim: Nvim) -> None:
    """The scripted transport speaks for an A2A agent: its conversation is task-1."""
    nvim = scripted_nvim
    nvim.lua(PICKER)
    nvim.api.command("GeminiAgent say hello over a2a")
    wait_transcript(nvim, "Hello, world", WAIT)
    wait_for(lambda: "task-1" in history_records(nvim), WAIT, "the task recorded in the history")
    record = history_records(nvim)["task-1"]
    assert (record["protocol"], record["title"], record["cwd"]) == (
        "a2a",
        "say hello over a2a",
        _cwd(nvim),
    )
    label = one_label(pick(nvim), "say hello over a2a")
    assert label.startswith("*") and "a2a" in label, label


def test_only_the_chat_files_a_load_made_are_removed(tmp_path: Path) -> None:
    """chat_files.py changes nothing of the CLI's folder but the chat files of the
    loaded session that the load made: the conversation's own file, another
    session's, and another project's stay."""
    from gemini_companion.agent.acp.chat_files import LoadLeftovers

    session = "0a1b2c3d-1111-2222-3333-444455556666"
    chats = tmp_path / ".gemini" / "tmp" / "project" / "chats"
    other_project = tmp_path / ".gemini" / "tmp" / "other" / "chats"
    chats.mkdir(parents=True)
    other_project.mkdir(parents=True)
    own = chats / "session-2026-11-28T10-00-0a1b2c3d.jsonl"
    own.write_text('{"conversation": "kept"}\n')
    leftovers = LoadLeftovers({"HOME": str(tmp_path)}, session)
    leftovers.before()
    made = chats / "session-2026-11-28T10-05-0a1b2c3d.jsonl"
    made.write_text("{}\n")
    another = chats / "session-2026-11-28T10-05-99999999.jsonl"
    another.write_text("{}\n")
    unrelated = chats / "notes.txt"
    unrelated.write_text("mine\n")
    assert leftovers.remove() == [str(made)]
    assert not made.exists()
    assert own.read_text() == '{"conversation": "kept"}\n'
    assert another.exists() and unrelated.exists()
    assert sorted(p.name for p in other_project.iterdir()) == []
