"""A history that survives Neovim restarts (issue 30, requirement 2):
``:GeminiAgentConversations`` lists the workspace's live and past conversations
through ``vim.ui.select`` (each with its title, when it was last used, its
protocol, and why it cannot be loaded when it cannot); choosing a past ACP one
loads it into a conversation of its own; conversations are renamed
(``:GeminiAgentRename``, ``:GeminiAgentConversations rename``) and deleted
(``:GeminiAgentConversations delete``); the history file under
``stdpath("state")`` survives damage (moved aside, said once) and absence; and
Gemini CLI 0.61.0's per-minute chat files never lose a conversation loaded again
just after a restart.

Real parts: headless Neovims with the plugin and its Python host, sharing one
``XDG_STATE_HOME`` (the test's sandbox) as a restart would; a scripted ACP agent
with ``loadSession`` (tests/agent_fakes/acp_history_agent.py, which keeps its
sessions in a folder); and the real ``gemini --acp`` offline with IDE mode on.
The picker is the user's ``vim.ui.select``, replaced here by one that records
what it was given and chooses the entry holding a given text."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_setup import acp_setup, transcript, wait_agent, wait_transcript
from fake_model import gemini_home, text, write_responses
from harness import Nvim, wait_for
from pynvim.api import NvimError

HISTORY_AGENT = Path(__file__).parent / "agent_fakes" / "acp_history_agent.py"
WAIT = 90

# vim.ui.select and vim.ui.input as a user's picker: what they were given is kept
# (_G.picks: each call's prompt and labels), and the entry whose label holds
# _G.choose is chosen (none when it is nil); vim.ui.input answers _G.answer.
# Messages are kept too (_G.notes).
_PICKER = """
_G.picks, _G.notes = {}, {}
vim.ui.select = function(items, opts, on_choice)
  local labels = {}
  for i, item in ipairs(items) do
    labels[i] = opts.format_item(item)
  end
  table.insert(_G.picks, { prompt = opts.prompt, labels = labels })
  local want = _G.choose
  _G.choose = nil
  for i, label in ipairs(labels) do
    if type(want) == "string" and label:find(want, 1, true) then
      return on_choice(items[i], i)
    end
  end
  on_choice(nil, nil)
end
vim.ui.input = function(_, on_confirm)
  on_confirm(_G.answer)
end
local notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(_G.notes, msg)
  return notify(msg, level, opts)
end
"""


def _panel(nvim_factory: Callable[..., Nvim], tmp_path: Path) -> Nvim:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    store = tmp_path / "agent-sessions"
    store.mkdir(exist_ok=True)
    cmd = [sys.executable, str(HISTORY_AGENT), "--store", str(store)]
    nvim = nvim_factory(cwd=work, setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}})
    nvim.wait_running()
    nvim.lua(_PICKER)
    return nvim


def _history_file(nvim: Nvim) -> Path:
    return Path(nvim.lua("return require('gemini_companion.agent').sessions_file()"))


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
    path = _history_file(nvim)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records))
    for r in records:
        if r["protocol"] == "acp" and "lost" not in r["title"]:
            words = f"about {r['title']}"
            turns = [["user", words], ["agent", f"echo: {words}"]]
            (tmp_path / "agent-sessions" / f"{r['id']}.json").write_text(json.dumps(turns))


def _pick(nvim: Nvim, args: str = "", choose: str | None = None) -> list[str]:
    """Run ``:GeminiAgentConversations args``, choosing the entry holding ``choose``;
    the labels the picker showed."""
    nvim.lua("_G.choose = ...", choose)
    before = len(nvim.lua("return _G.picks"))
    nvim.api.command(f"GeminiAgentConversations {args}".rstrip())
    picks = nvim.lua("return _G.picks")
    return list(picks[-1]["labels"]) if len(picks) > before else []


def _conversations(nvim: Nvim) -> list[dict[str, Any]]:
    return [dict(c) for c in nvim.lua("return require('gemini_companion.agent').conversations()")]


def _text_of(nvim: Nvim, conversation: int) -> str:
    return "\n".join(
        nvim.lua("return require('gemini_companion.agent').transcript(...)", conversation)
    )


def _records(nvim: Nvim) -> dict[str, dict[str, Any]]:
    path = _history_file(nvim)
    if not path.exists():
        return {}
    return {r["id"]: r for r in json.loads(path.read_text())}


def _notes(nvim: Nvim) -> list[str]:
    return [str(n) for n in nvim.lua("return _G.notes")]


def _prompt(nvim: Nvim, words: str) -> dict[str, Any]:
    nvim.api.command(f"GeminiAgent {words}")
    wait_transcript(nvim, f"echo: {words.splitlines()[0]}", WAIT)
    return wait_agent(nvim, "idle", lambda s: s["state"] == "idle")


def _when(label: str) -> float:
    """The time a picker's label shows (local time, to the minute)."""
    return time.mktime(time.strptime(label[2:18], "%Y-%m-%d %H:%M"))


def _minute(t: float) -> float:
    return t - time.localtime(t).tm_sec - (t % 1)


def _label(labels: list[str], needle: str) -> str:
    found = [label for label in labels if needle in label]
    assert len(found) == 1, (needle, labels)
    return found[0]


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
    labels = _pick(nvim)
    assert len(labels) == 3, labels  # the other workspace's is not listed
    live, past, task = labels
    assert live.startswith("*") and "hello live" in live and "acp" in live, live
    assert _minute(before) <= _when(live) <= after, (live, before, after)
    assert "the apricot talk" in past and "acp" in past and not past.startswith("!"), past
    used = _records(nvim)["past-1"]["updated_at"]
    assert time.strftime("%Y-%m-%d %H:%M", time.localtime(used)) in past, past
    assert task.startswith("!") and "a2a" in task and "an a2a task" in task, task
    assert "cannot load: an A2A task cannot be loaded again" in task, task
    # Choosing the A2A one says why and changes nothing.
    _pick(nvim, choose="an a2a task")
    assert any("cannot load" in n and "an a2a task" in n for n in _notes(nvim)), _notes(nvim)
    assert len(_conversations(nvim)) == 1


def test_choosing_a_past_conversation_loads_it_into_its_own_transcript(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    _seed(nvim, tmp_path, [_record(nvim, "past-1", "the apricot talk")])
    first = int(_prompt(nvim, "hello live")["conversation"])
    _pick(nvim, choose="the apricot talk")

    def loaded() -> dict[str, Any] | None:
        found = [c for c in _conversations(nvim) if c["id"] != first]
        return found[0] if found and found[0].get("session_id") == "past-1" else None

    second = wait_for(loaded, WAIT, "the past conversation loaded in a new one")
    wait_for(
        lambda: "echo: about the apricot talk" in _text_of(nvim, second["id"]), WAIT, "its replay"
    )
    assert "about the apricot talk" in transcript(nvim), "the loaded one is shown"
    assert second["title"] == "the apricot talk"
    assert "apricot" not in _text_of(nvim, first), "the live one keeps its own transcript"
    assert "hello live" in _text_of(nvim, first)
    # It goes on, and the picker now lists it as live, once.
    _prompt(nvim, "and more")
    labels = _pick(nvim)
    assert _label(labels, "the apricot talk").startswith("*"), labels
    assert len(labels) == 2, labels
    # Choosing the first one shows it again.
    _pick(nvim, choose="hello live")
    assert "hello live" in transcript(nvim)


def test_a_conversation_that_cannot_be_loaded_is_marked_with_the_agents_reason(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    _seed(nvim, tmp_path, [_record(nvim, "gone-1", "the lost talk")])
    assert not _pick(nvim)[0].startswith("!")
    _pick(nvim, choose="the lost talk")
    wait_for(
        lambda: "Invalid session identifier" in _records(nvim).get("gone-1", {}).get("error", ""),
        WAIT,
        "the failed load marked in the history",
    )
    label = _label(_pick(nvim), "the lost talk")
    assert label.startswith("!"), label
    assert "cannot load: its last load failed: Invalid session identifier" in label, label
    # It stays in the history, and after a restart too.
    nvim.close()
    again = _panel(nvim_factory, tmp_path)
    assert _label(_pick(again), "the lost talk").startswith("!")


def test_conversations_are_renamed_and_deleted(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    _seed(nvim, tmp_path, [_record(nvim, "past-1", "the apricot talk")])
    session = _prompt(nvim, "first words here\nand a second line")["session_id"]
    assert _conversations(nvim)[0]["title"] == "first words here"
    wait_for(
        lambda: _records(nvim).get(session, {}).get("title") == "first words here",
        WAIT,
        "the title",
    )

    nvim.api.command("GeminiAgentRename My topic")
    assert _conversations(nvim)[0]["title"] == "My topic"
    assert _records(nvim)[session]["title"] == "My topic"
    assert "My topic" in _label(_pick(nvim), "My topic")

    nvim.lua("_G.answer = 'Apricots'")
    _pick(nvim, "rename", choose="the apricot talk")
    assert _records(nvim)["past-1"]["title"] == "Apricots"
    assert "Apricots" in _label(_pick(nvim), "Apricots")

    nvim.lua("_G.answer = '   '")
    with pytest.raises(NvimError, match="one line of text"):
        _pick(nvim, "rename", choose="Apricots")
    assert _records(nvim)["past-1"]["title"] == "Apricots", "a blank title changes nothing"

    _pick(nvim, "delete", choose="Apricots")
    assert "past-1" not in _records(nvim)
    assert not [label for label in _pick(nvim) if "Apricots" in label]
    assert session in _records(nvim), "nothing else is lost"

    # The name survives a restart.
    nvim.close()
    again = _panel(nvim_factory, tmp_path)
    assert _pick(again) == [_label(_pick(again), "My topic")]


def test_a_damaged_history_is_moved_aside_said_once_and_starts_empty(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    path = _history_file(nvim)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[{"id": "x", "title": "half a fi')
    assert _pick(nvim) == []
    asides = list(path.parent.glob(path.name + ".corrupt-*"))
    assert len(asides) == 1 and asides[0].read_text() == '[{"id": "x", "title": "half a fi'
    damaged = [n for n in _notes(nvim) if "was damaged" in n]
    assert len(damaged) == 1 and str(asides[0]) in damaged[0] and "starts empty" in damaged[0]
    assert any("no conversations" in n for n in _notes(nvim))
    # The history goes on from empty; the damaged file is kept.
    session = _prompt(nvim, "after the damage")["session_id"]
    wait_for(lambda: session in _records(nvim), WAIT, "the new conversation recorded")
    assert list(_records(nvim)) == [session]
    assert "after the damage" in _label(_pick(nvim), "after the damage")
    assert [n for n in _notes(nvim) if "was damaged" in n] == damaged, "said once"
    assert asides[0].exists()


def test_a_missing_history_is_an_empty_one(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    nvim = _panel(nvim_factory, tmp_path)
    assert not _history_file(nvim).exists()
    assert _pick(nvim) == []
    assert any("no conversations" in n for n in _notes(nvim)), _notes(nvim)
    assert not [n for n in _notes(nvim) if "was damaged" in n or "cannot" in n]
    _prompt(nvim, "the first one")
    assert ["the first one" in label for label in _pick(nvim)] == [True]


def test_an_a2a_conversation_is_recorded_and_listed_as_a2a(scripted_nvim: Nvim) -> None:
    """The scripted transport speaks for an A2A agent: its conversation is task-1."""
    nvim = scripted_nvim
    nvim.lua(_PICKER)
    nvim.api.command("GeminiAgent say hello over a2a")
    wait_transcript(nvim, "Hello, world", WAIT)
    wait_for(lambda: "task-1" in _records(nvim), WAIT, "the task recorded in the history")
    record = _records(nvim)["task-1"]
    assert (record["protocol"], record["title"], record["cwd"]) == (
        "a2a",
        "say hello over a2a",
        _cwd(nvim),
    )
    label = _label(_pick(nvim), "say hello over a2a")
    assert label.startswith("*") and "a2a" in label, label


# -- the real gemini --acp: a load just after a restart loses nothing ------------------


@pytest.mark.usefixtures("interop")
def test_a_conversation_loaded_again_just_after_a_restart_is_not_lost(
    nvim_factory: Callable[..., Nvim], tmp_path: Path
) -> None:
    """A conversation loaded once, then again after a restart of Neovim: Gemini CLI
    0.61.0's load leaves a chat file without conversation in it, and the CLI's next
    start deleted every file of that session with it (acp/chat_files.py); the
    second load answered "No previous sessions found for this project."."""
    work = tmp_path / "work"
    work.mkdir()
    home = gemini_home(tmp_path, ide=True)

    def start(answer: str) -> Nvim:
        fake = write_responses(tmp_path / "fake-responses.jsonl", [[[text(answer)]]])
        nvim = nvim_factory(cwd=work, **acp_setup(fake, home))
        nvim.wait_running()
        nvim.lua(_PICKER)
        return nvim

    def agents() -> list[Path]:
        return [
            p
            for p in Path("/proc").glob("[0-9]*")
            if b"--acp" in _cmdline(p) and str(tmp_path).encode() in _cmdline(p)
        ]

    def load(nvim: Nvim) -> str:
        _pick(nvim, choose="remember the word apricot")

        def loaded() -> str | None:
            found = [c for c in _conversations(nvim) if c.get("session_id") == session]
            return _text_of(nvim, found[0]["id"]) if found else None

        try:
            return str(
                wait_for(lambda: (t := loaded()) and "Noted: apricot." in t and t, WAIT, "the load")
            )
        except AssertionError as exc:
            notes = "\n".join(_notes(nvim))
            files = sorted(p.name for p in home.glob(".gemini/tmp/*/chats/*"))
            convs = [(c, _text_of(nvim, c["id"])) for c in _conversations(nvim)]
            raise AssertionError(f"{exc}\n{notes}\n{convs}\n{files}") from None

    first = start("Noted: apricot.")
    first.api.command("GeminiAgent remember the word apricot")
    wait_transcript(first, "Noted: apricot.", WAIT)
    session = wait_agent(first, "idle", lambda s: s["state"] == "idle")["session_id"]
    first.close()
    wait_for(lambda: not agents(), 30, "the agent to exit with Neovim")
    second = start("unused")
    assert "remember the word apricot" in load(second)
    second.close()
    wait_for(lambda: not agents(), 30, "the agent to exit with Neovim")

    third = start("Still here.")  # a new CLI: its start cleans up its chat files
    assert "remember the word apricot" in load(third)
    third.api.command("GeminiAgent are you there?")
    wait_transcript(third, "Still here.", WAIT)
    assert not _records(third)[session]["error"]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""
