"""Two conversations stream at the same instant on one real ``gemini --acp`` with
IDE mode on (issue 30, requirement 1 and "Done when").

Real parts: a headless Neovim with the plugin and its Python host, the real
``gemini`` 0.61.0 in ``--acp`` mode, an IDE client of the companion (IDE mode on),
and the fake Gemini API on loopback (tests/fake_gemini.py, the model being the one
fake). The API holds each conversation's answer until both conversations' requests
are in, then streams the two answers in step, chunk by chunk: each chunk of one
goes out with the same chunk of the other."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from agent_setup import GEMINI_JS
from conversation_helpers import (
    RECORD_EVENTS,
    agent,
    assert_one_agent_both_working,
    context,
    conversations,
    text_of,
    wait_conversation,
    wait_text,
)
from fake_gemini import FakeGemini, Turn
from fake_model import gemini_home
from harness import Nvim, wait_for

CHUNKS = 40


def _answer(word: str) -> Turn:
    """``word0 word1 ...``: held at the gate ``both``, then each chunk sent in step
    with the other answer's (a barrier of two before each)."""
    turn: Turn = [{"wait": "both"}]
    for i in range(CHUNKS):
        turn += [{"barrier": f"chunk {i}", "count": 2}, [{"text": f"{word}{i} "}]]
    return turn


@pytest.mark.usefixtures("interop")
def test_two_conversations_stream_at_the_same_instant_on_one_real_gemini_acp_in_ide_mode(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fake.add_for("tell me of mangos", _answer("mango"))
    fake.add_for("tell me of kiwis", _answer("kiwi"))
    nvim = nvim_factory(
        cwd=work,
        setup={"agent": {"protocol": "acp", "acp": {"cmd": ["node", str(GEMINI_JS), "--acp"]}}},
        env={
            "HOME": str(gemini_home(tmp_path, ide=True)),
            "GEMINI_API_KEY": "offline-test-key",
            "GOOGLE_GEMINI_BASE_URL": fake.url,
        },
    )
    nvim.wait_running()
    nvim.lua(RECORD_EVENTS)
    log = Path(nvim.lua("return require('gemini_companion.config').log_file()"))

    nvim.api.command("GeminiAgent tell me of mangos")
    first = int(agent(nvim, "conversations()")[0]["id"])
    second = int(agent(nvim, "new()"))
    assert second != first
    nvim.api.command("GeminiAgent tell me of kiwis")

    # Both requests are in the API at once, each answer held: both conversations work.
    try:
        wait_for(lambda: fake.held("both") == 2, 180, "both conversations' model requests")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{context(nvim)}") from None
    # (Held there, both stay working: the panel's state reaches Lua in its own time.)
    for conversation in (first, second):
        wait_conversation(nvim, conversation, "working", lambda c: c["state"] == "working")
    assert fake.held("both") == 2
    fake.release("both")

    for conversation, word in ((first, "mango"), (second, "kiwi")):
        wait_text(nvim, conversation, f"{word}{CHUNKS - 1}")
        wait_conversation(nvim, conversation, "idle", lambda c: c["state"] == "idle")
    assert fake.most_streaming == 2, "the two answers streamed at the same time"
    one, two = text_of(nvim, first), text_of(nvim, second)
    # Each transcript holds its whole answer, once, and nothing of the other's.
    assert " ".join(f"mango{i}" for i in range(CHUNKS)) in one, one
    assert " ".join(f"kiwi{i}" for i in range(CHUNKS)) in two, two
    assert "kiwi" not in one and "mango" not in two, (one, two)
    listed = conversations(nvim)
    assert listed[first]["session_id"] != listed[second]["session_id"]
    assert_one_agent_both_working(nvim, log, first, second)
