"""The prompt buffer (issue 22 items 3 and 5): context in the prompt and the user's habits.

Real parts: a headless Neovim with the plugin (a UI attached at 80 columns where the
screen matters), the real ``gemini`` 0.61.0 in ``--acp`` mode and the real A2A server
0.25.2, both against the fake Gemini API on loopback (tests/fake_gemini.py), whose
request log is what the model was sent. Completion is driven as nvim-cmp's and
blink.cmp's omni sources drive it: 'omnifunc' called with findstart 1, then with
the typed base.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import agent_setup
import pytest
from agent_setup import GEMINI_JS, SERVER_BIN, a2a_setup, transcript
from fake_gemini import FakeGemini, fake_gemini, text_turn
from fake_model import gemini_home
from harness import Nvim, wait_for

AGENT_WAIT = 120

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with fake_gemini() as f:
        yield f


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "calc.py").write_text(CALC)
    (work / "src" / "notes.md").write_text("# Notes\n")
    (work / "other.py").write_text("saved = 1\n")
    return work


def home_with_ide(tmp_path: Path, ide: bool) -> Path:
    home = gemini_home(tmp_path)
    settings_file = home / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["ide"] = {"enabled": ide}
    settings_file.write_text(json.dumps(settings))
    return home


def acp_nvim(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, work: Path, tmp_path: Path, ide: bool
) -> Nvim:
    home = home_with_ide(tmp_path, ide)
    nvim = nvim_factory(
        cwd=work,
        setup={"agent": {"protocol": "acp", "acp": {"cmd": ["node", str(GEMINI_JS), "--acp"]}}},
        env={
            "HOME": str(home),
            "GEMINI_API_KEY": "offline-test-key",
            "GOOGLE_GEMINI_BASE_URL": fake.url,
        },
    )
    nvim.wait_running()
    return nvim


def wait_transcript(nvim: Nvim, needle: str, timeout: float = AGENT_WAIT) -> str:
    return agent_setup.wait_transcript(nvim, needle, timeout)


def agent_state(nvim: Nvim) -> str:
    return str(nvim.lua("return require('gemini_companion.agent').state().state"))


def wait_idle(nvim: Nvim) -> None:
    wait_for(lambda: agent_state(nvim) == "idle", AGENT_WAIT, "the turn to end")


def user_text(request: dict[str, Any]) -> str:
    """All the text of the user's turns in one model request."""
    out = []
    for content in request["body"].get("contents", []):
        if content.get("role") == "user":
            out.extend(str(p.get("text", "")) for p in content.get("parts", []))
    return "\n".join(out)


def wait_request(fake: FakeGemini, needle: str, timeout: float = AGENT_WAIT) -> str:
    def check() -> str | None:
        for request in fake.stream_requests():
            text = user_text(request)
            if needle in text:
                return text
        return None

    try:
        return wait_for(check, timeout, f"{needle!r} in a request to the model")
    except AssertionError as exc:
        seen = [user_text(r)[-2000:] for r in fake.stream_requests()]
        raise AssertionError(f"{exc}\n--- requests ---\n{seen}") from None


def omni(nvim: Nvim, line: str) -> tuple[int, list[dict[str, Any]]]:
    """Complete at the end of `line` in the prompt buffer as a completion plugin does."""
    return tuple(  # type: ignore[return-value]
        nvim.lua(
            """
            local line = ...
            local panel = require('gemini_companion.agent.panel')
            local buf = panel.prompt_buffer()
            local _, pwin = panel.windows()
            vim.api.nvim_set_current_win(pwin)
            vim.api.nvim_buf_set_lines(buf, 0, -1, false, { line })
            vim.api.nvim_win_set_cursor(pwin, { 1, #line })
            local func = vim.bo[buf].omnifunc:match('^v:lua%.(.+)')
            local start = vim.fn.luaeval(func .. '(_A[1], _A[2])', { 1, '' })
            local items = vim.fn.luaeval(func .. '(_A[1], _A[2])', { 0, line:sub(start + 1) })
            return { start, items.words or items }
            """,
            line,
        )
    )


def send_from_insert(nvim: Nvim, text: str) -> None:
    """Type `text` in the prompt in insert mode and send it with <C-s>."""
    nvim.lua(
        """
        local panel = require('gemini_companion.agent.panel')
        local _, pwin = panel.windows()
        vim.api.nvim_set_current_win(pwin)
        vim.api.nvim_buf_set_lines(panel.prompt_buffer(), 0, -1, false, {})
        """
    )
    nvim.api.input("i")
    nvim.api.input(text.replace("<", "<lt>"))
    nvim.api.input("<C-s>")
    prompt = "require('gemini_companion.agent.panel').prompt_buffer()"
    wait_for(
        lambda: nvim.lua(f"return vim.api.nvim_buf_get_lines({prompt}, 0, -1, false)") == [""],
        10,
        "the prompt to be sent",
    )


@pytest.mark.usefixtures("interop")
@pytest.mark.parametrize("ide", [True, False], ids=["ide-enabled", "ide-disabled"])
def test_at_completes_files_and_buffers_and_sends_them_with_the_unsaved_text(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, work: Path, tmp_path: Path, ide: bool
) -> None:
    nvim = acp_nvim(nvim_factory, fake, work, tmp_path, ide)
    fake.add(text_turn("Both files read."))
    # other.py open with an edit not written yet.
    nvim.api.command("edit other.py")
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'unsaved = 2' })")
    nvim.api.command("GeminiAgent")

    start, items = omni(nvim, "explain @ca")
    assert start == len("explain ")
    words = [i["word"] for i in items]
    assert words[0] == "@calc.py", words
    start, items = omni(nvim, "see @notes")
    assert "@src/notes.md" in [i["word"] for i in items]
    start, items = omni(nvim, "and @oth")
    other = next(i for i in items if i["word"] == "@other.py")
    assert "unsaved" in other["menu"]
    start, items = omni(nvim, "fix #di")
    assert [i["word"] for i in items] == ["#diagnostics"]
    assert omni(nvim, "mail a@b")[0] < 0  # not after a space: no completion

    send_from_insert(nvim, "explain @calc.py and @other.py")
    # Insert mode is kept: a follow-up typed at once is text, not commands.
    assert nvim.api.request("nvim_get_mode")["mode"] == "i"
    nvim.api.input("next")
    wait_for(lambda: nvim.lua("return vim.api.nvim_get_current_line()") == "next", 10, "typed text")

    sent = wait_request(fake, "unsaved = 2")
    assert "return a + b" in sent  # calc.py, read by the agent (a resource link)
    assert "saved = 1" not in sent  # other.py as the buffer shows it, not the disk
    wait_transcript(nvim, "Both files read.")
    shown = transcript(nvim)
    assert "@" + str(work / "other.py") + " (unsaved text)" in shown


@pytest.mark.usefixtures("interop")
def test_a_first_prompt_sent_while_the_agent_starts_is_answered(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, work: Path, tmp_path: Path
) -> None:
    nvim = acp_nvim(nvim_factory, fake, work, tmp_path, ide=False)
    fake.add(text_turn("Ready and answering."))
    nvim.api.command("GeminiAgent")
    wait_for(lambda: agent_state(nvim) == "starting", 30, "the agent to be starting")
    send_from_insert(nvim, "hello early")
    wait_transcript(nvim, "Ready and answering.")
    assert "hello early" in user_text(fake.stream_requests()[-1])
    assert "busy" not in nvim.api.request("nvim_exec2", "messages", {"output": True})["output"]


@pytest.mark.usefixtures("interop")
def test_a_range_the_selection_and_the_diagnostics_are_embedded(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, work: Path, tmp_path: Path
) -> None:
    nvim = acp_nvim(nvim_factory, fake, work, tmp_path, ide=False)
    fake.add(text_turn("Range seen."), text_turn("Selection seen."))
    nvim.api.command("edit calc.py")
    nvim.api.command("5,6GeminiAgent explain these lines")
    sent = wait_request(fake, "explain these lines")
    assert "def mul(a, b):\n    return a * b" in sent
    assert "def add" not in sent
    wait_idle(nvim)

    # A selection made in calc.py, and a diagnostic on it, then the prompt.
    assert nvim.lua("return vim.api.nvim_buf_get_name(0)") == str(work / "calc.py")
    nvim.api.input("ggVj<Esc>")
    nvim.lua(
        """
        local ns = vim.api.nvim_create_namespace('test_lint')
        vim.diagnostic.set(ns, 0, { { lnum = 1, col = 4, message = 'lint says no', severity = 1 } })
        """
    )
    nvim.lua("require('gemini_companion.agent').open()")
    send_from_insert(nvim, "what about #selection and #diagnostics")
    sent = wait_request(fake, "lint says no")
    assert "def add(a, b):\n    return a + b" in sent
    # The user's words and each attachment stay apart (issue 32: 0.61.0 joins the
    # text and the resources' "@uri" as they come).
    assert "#diagnostics@" not in sent and "what about #selection and #diagnostics\n" in sent
    assert "#L1-2@file" not in sent, sent
    wait_transcript(nvim, "Selection seen.")


def test_long_messages_never_wait_for_enter_at_80_columns(
    nvim_factory: Callable[..., Nvim], work: Path
) -> None:
    nvim = nvim_factory(cwd=work)
    nvim.wait_running()
    nvim.api.request("nvim_ui_attach", 80, 24, {"ext_linegrid": True})
    nvim.lua("require('gemini_companion.agent.panel').open()")  # no agent: the state is ours
    # An error the Python side shows (a notify op of a transcript batch), long, then
    # a second message; scheduled, so that a "Press ENTER" cannot hold this call.
    nvim.lua(
        """
        require('gemini_companion.agent.state')._update({ state = 'working' })
        vim.schedule(function()
          require('gemini_companion.agent.transcript')._apply({
            { op = 'notify', level = 'error', text = string.rep('the agent failed badly ', 12) },
            { op = 'notify', level = 'warning', text = 'and a second line\\nover two lines' },
          })
          vim.cmd.startinsert() -- insert mode once the messages are shown, not before
        end)
        """
    )
    # nvim_get_mode is answered even while Neovim waits for Enter.
    mode = wait_for(
        lambda: (m := nvim.api.request("nvim_get_mode"))["mode"] in ("i", "r", "rm") and m,
        10,
        "the messages to be shown",
    )
    if mode["blocking"]:
        nvim.api.input("<CR>")  # or this Neovim would wait for Enter at the end too
    assert mode["mode"] not in ("r", "rm") and not mode["blocking"], mode
    # A prompt refused while the agent works: its warning, from insert mode.
    nvim.api.input("follow-up<C-s>")
    wait_for(
        lambda: (
            "follow-up"
            in nvim.lua("return require('gemini_companion.agent.panel').history_entries()")
        ),
        10,
        "the prompt to be refused",
    )
    mode = nvim.api.request("nvim_get_mode")
    if mode["blocking"]:
        nvim.api.input("<CR>")
    assert mode["mode"] == "i" and not mode["blocking"], mode
    assert nvim.lua("return vim.api.nvim_get_current_line()") == "follow-up"  # kept


def test_question_mark_lists_the_panels_keys(nvim_factory: Callable[..., Nvim], work: Path) -> None:
    nvim = nvim_factory(cwd=work)
    nvim.wait_running()
    nvim.api.command("GeminiAgent")
    nvim.api.input("<Esc>?")  # a Normal mode key; the panel opens in Insert mode
    lines = wait_for(
        lambda: (
            nvim.lua(
                "return vim.api.nvim_win_get_config(0).relative ~= ''"
                " and vim.api.nvim_buf_get_lines(0, 0, -1, false)"
            )
            or None
        ),
        5,
        "the keys float",
    )
    text = "\n".join(lines)
    assert "<C-s>" in text and "Send the prompt" in text and "<C-c>" in text
    nvim.api.input("q")
    wait_for(
        lambda: nvim.lua("return vim.api.nvim_win_get_config(0).relative") == "", 5, "it closes"
    )


@pytest.mark.skipif(not SERVER_BIN.exists(), reason="scripts/setup installs the A2A server")
def test_over_a2a_attached_files_reach_the_model_as_parts(
    nvim_factory: Callable[..., Nvim], fake: FakeGemini, work: Path, tmp_path: Path
) -> None:
    nvim = nvim_factory(cwd=work, setup=a2a_setup(fake, tmp_path / "a2a-home"))
    nvim.wait_running()
    fake.add(text_turn("Parts seen."))
    nvim.api.command("edit other.py")
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'unsaved = 2' })")
    nvim.api.command("GeminiAgent")
    send_from_insert(nvim, "explain @calc.py and #buffer")
    sent = wait_request(fake, "explain @calc.py", timeout=180)
    assert "return a + b" in sent
    assert "unsaved = 2" in sent
    request = next(r for r in fake.stream_requests() if "explain @calc.py" in user_text(r))
    user = [c for c in request["body"]["contents"] if c.get("role") == "user"][-1]
    assert len(user["parts"]) >= 3  # the text, then one part per attachment
    wait_transcript(nvim, "Parts seen.", timeout=180)
