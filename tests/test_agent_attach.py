"""What a prompt attaches goes through one reader (issue 29 items 4 and 5, issue 32):
links resolved, regular files only, never blocking, the workspace policy, a path
outside it attached only once the user confirms that path, buffers by exact name.

A real headless Neovim drives the panel against the scripted agents: the A2A one
in the real server's dialect (tests/agent_fakes/coder_agent.py, whose
``prompts`` hold the text parts it received) and the ACP one
(tests/agent_fakes/acp_agent.py, which logs the content blocks it received).
The user's answers to the question come from a ``vim.ui.select`` the test puts in
place, which records what it was asked.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from agent_fakes.coder_agent import CoderAgent, coder_agent
from agent_setup import transcript
from harness import Nvim, wait_for

FAKE_ACP = Path(__file__).parent / "agent_fakes" / "acp_agent.py"
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret key material\n"


@pytest.fixture
def fake() -> Iterator[tuple[str, CoderAgent]]:
    with coder_agent() as served:
        yield served


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home of the test's own holding a private key."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    return home


@pytest.fixture
def a2a(
    nvim_factory: Callable[..., Nvim], fake: tuple[str, CoderAgent], workspace: Path, home: Path
) -> Nvim:
    setup = {"agent": {"protocol": "a2a", "a2a": {"url": fake[0]}}}
    nvim = nvim_factory(cwd=workspace, setup=setup, env={"HOME": str(home)})
    nvim.wait_running()
    answer_select(nvim, {})
    return nvim


@pytest.fixture
def acp(nvim_factory: Callable[..., Nvim], workspace: Path, home: Path, tmp_path: Path) -> Nvim:
    cmd = [sys.executable, str(FAKE_ACP)]
    nvim = nvim_factory(
        cwd=workspace,
        setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}},
        env={"HOME": str(home), "FAKE_ACP_PROMPTS": str(tmp_path / "acp-prompts.jsonl")},
    )
    nvim.wait_running()
    answer_select(nvim, {})
    return nvim


def acp_prompts(tmp_path: Path) -> list[str]:
    """Everything the ACP agent received, one string per prompt (blocks as JSON)."""
    log = tmp_path / "acp-prompts.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    return [json.dumps(json.loads(line)) for line in lines]


def answer_select(nvim: Nvim, answers: dict[str, int]) -> None:
    """``vim.ui.select`` answers the choice ``answers`` gives for the first key found
    in its prompt (2, "do not send", when none), and records every prompt."""
    nvim.lua(
        """
        _G.asked = _G.asked or {}
        local answers = ...
        vim.ui.select = function(items, opts, on_choice)
          table.insert(_G.asked, opts.prompt)
          local choice = 2
          for key, n in pairs(answers) do
            if opts.prompt:find(key, 1, true) then
              choice = n
            end
          end
          on_choice(items[choice], choice)
        end
        """,
        answers or {"": 2},
    )


def asked(nvim: Nvim) -> list[str]:
    return list(nvim.lua("return _G.asked"))


def prompt_text(nvim: Nvim) -> list[str]:
    return list(
        nvim.lua(
            "return vim.api.nvim_buf_get_lines("
            "require('gemini_companion.agent.panel').prompt_buffer(), 0, -1, false)"
        )
    )


def submit(nvim: Nvim, text: str) -> None:
    """Type ``text`` in the panel's prompt and send it, as the user does."""
    nvim.lua(
        """
        local panel = require('gemini_companion.agent.panel')
        if not panel.visible() then require('gemini_companion.agent').open() end
        vim.api.nvim_buf_set_lines(panel.prompt_buffer(), 0, -1, false, { ... })
        panel.submit()
        """,
        text,
    )


def wait_answered(nvim: Nvim, answer: str, answers_before: int) -> None:
    """The agent's ``answer`` drawn once more than ``answers_before`` times, and the
    panel idle after it (an "idle" seen before the answer may be the last turn's)."""
    wait_for(
        lambda: (
            transcript(nvim).count(answer) > answers_before
            and nvim.lua("return require('gemini_companion.agent').state().state") == "idle"
        ),
        30,
        f"{answer!r} and the turn's end",
    )


def a2a_turn(nvim: Nvim, agent: CoderAgent, text: str) -> list[str]:
    """Send ``text``; the parts the agent received for it, once answered."""
    before, answers = len(agent.prompts), transcript(nvim).count("Hello.")
    submit(nvim, text)
    wait_for(lambda: len(agent.prompts) > before, 30, f"the agent to receive {text!r}")
    wait_answered(nvim, "Hello.", answers)
    return agent.prompts[before]


def test_a_link_to_a_key_outside_is_sent_only_once_the_user_confirms_its_real_path(
    a2a: Nvim, fake: tuple[str, CoderAgent], workspace: Path, home: Path
) -> None:
    _, agent = fake
    key = home / ".ssh" / "id_rsa"
    (workspace / "link.md").symlink_to(key)
    submit(a2a, "explain @link.md")
    wait_for(lambda: asked(a2a), 30, "the question")
    assert asked(a2a) == [f"@{key} is outside the workspace: attach it?"]
    # Declined: nothing sent, the text back in the prompt.
    wait_for(lambda: prompt_text(a2a) == ["explain @link.md"], 30, "the text back")
    assert a2a_turn(a2a, agent, "hello") == ["hello"]
    assert not any("secret key material" in part for p in agent.prompts for part in p)

    # Confirmed: attached under its real path, which the transcript shows.
    answer_select(a2a, {str(key): 1})
    parts = a2a_turn(a2a, agent, "explain @link.md")
    assert parts[0] == "explain @link.md"
    assert parts[1] == f"Content from @{key}:\n{KEY}"
    assert f"@{key}" in transcript(a2a)
    assert f"@{workspace / 'link.md'}" not in transcript(a2a)


@pytest.mark.parametrize("protocol", ["a2a", "acp"])
def test_lines_of_a_link_to_a_key_outside_are_not_sent_unless_confirmed(
    request: pytest.FixtureRequest,
    fake: tuple[str, CoderAgent],
    workspace: Path,
    tmp_path: Path,
    protocol: str,
) -> None:
    nvim: Nvim = request.getfixturevalue(protocol)
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    (workspace / "link.md").symlink_to(key)
    submit(nvim, "explain @link.md#L1-1")
    wait_for(lambda: asked(nvim), 30, "the question")
    assert asked(nvim) == [f"@{key} is outside the workspace: attach it?"]
    wait_for(lambda: prompt_text(nvim) == ["explain @link.md#L1-1"], 30, "the text back")
    submit(nvim, "hello")
    wait_answered(nvim, "Hello." if protocol == "a2a" else "echo: hello", 0)
    if protocol == "a2a":
        received = json.dumps(fake[1].prompts)
    else:
        received = "\n".join(acp_prompts(tmp_path))
    assert "hello" in received
    assert "PRIVATE KEY" not in received
    # Lines a file does not have: one line, nothing sent, the text back.
    (workspace / "two.py").write_text("one\ntwo\n")
    nvim.lua("_G.told = {}; vim.notify = function(msg) table.insert(_G.told, msg) end")
    submit(nvim, "explain @two.py#L9-10")
    told = wait_for(lambda: nvim.lua("return _G.told"), 30, "the message")
    assert told == [
        f"'{workspace / 'two.py'}' has no line 9: nothing sent (your text is back in the prompt)"
    ]
    wait_for(lambda: prompt_text(nvim) == ["explain @two.py#L9-10"], 30, "the text back")


def test_files_named_outside_the_workspace_are_asked_about_each_by_its_real_path(
    a2a: Nvim, fake: tuple[str, CoderAgent], workspace: Path, home: Path, tmp_path: Path
) -> None:
    _, agent = fake
    (tmp_path / "outside.txt").write_text("outside the workspace\n")
    answer_select(a2a, {"id_rsa": 1, "outside.txt": 1})  # not /etc/passwd
    submit(a2a, "compare @~/.ssh/id_rsa @../outside.txt @/etc/passwd")
    wait_for(lambda: len(asked(a2a)) == 3, 30, "three questions")
    assert asked(a2a) == [
        f"@{home / '.ssh' / 'id_rsa'} is outside the workspace: attach it?",
        f"@{tmp_path / 'outside.txt'} is outside the workspace: attach it?",
        f"@{os.path.realpath('/etc/passwd')} is outside the workspace: attach it?",
    ]
    wait_for(lambda: prompt_text(a2a)[0].startswith("compare"), 30, "the text back")
    assert a2a_turn(a2a, agent, "hello") == ["hello"]
    # The API's references go through the same check (A2A embedded them with open()).
    a2a.lua(
        "require('gemini_companion.agent').send('look', { references = { { path = ... } } })",
        str(tmp_path / "outside.txt"),
    )
    wait_for(lambda: len(asked(a2a)) == 4, 30, "the question")
    parts = wait_for(lambda: agent.prompts[-1] if agent.prompts[-1][0] == "look" else None, 30, "")
    assert parts[1] == f"Content from @{tmp_path / 'outside.txt'}:\noutside the workspace\n"
    assert len(agent.prompts) == 2


def test_a_fifo_is_never_opened_and_the_agent_answers_on(
    a2a: Nvim, fake: tuple[str, CoderAgent], workspace: Path
) -> None:
    _, agent = fake
    os.mkfifo(workspace / "pipe")
    (workspace / "pipe.md").write_text("notes\n")
    a2a.api.command("edit pipe.md")  # `vim.fn.bufnr('…/pipe')` is that buffer
    try:
        parts = a2a_turn(a2a, agent, "look at @pipe")
        assert parts == ["look at @pipe"]  # not a file: plain text
        # Named by the API: refused with one line, nothing sent, nothing blocked.
        a2a.lua(
            "require('gemini_companion.agent').send('read', { references = { { path = ... } } })",
            str(workspace / "pipe"),
        )
        wait_for(lambda: prompt_text(a2a) == ["read"], 30, "the text back")
        assert a2a_turn(a2a, agent, "hello") == ["hello"]
        assert len(agent.prompts) == 2
    finally:  # the code before the fix holds a thread on the FIFO: let it go
        with contextlib.suppress(OSError):  # no reader (ENXIO): nobody held
            os.close(os.open(workspace / "pipe", os.O_WRONLY | os.O_NONBLOCK))


def test_a_mention_names_the_buffer_of_that_exact_file(
    a2a: Nvim, fake: tuple[str, CoderAgent], workspace: Path
) -> None:
    _, agent = fake
    (workspace / "a.py").write_text("a on disk\n")
    (workspace / "a.py.orig").write_text("orig on disk\n")
    (workspace / "[id].tsx").write_text("id on disk\n")
    (workspace / "d.tsx").write_text("d on disk\n")
    for name, unsaved in (("a.py.orig", "orig unsaved"), ("d.tsx", "d unsaved")):
        a2a.api.command(f"edit {name}")
        a2a.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { ... })", unsaved)
    parts = a2a_turn(a2a, agent, "explain @a.py and @[id].tsx")
    assert parts[1:] == [
        f"Content from @{workspace / 'a.py'}:\na on disk\n",
        f"Content from @{workspace / '[id].tsx'}:\nid on disk\n",
    ]


def test_a_failing_context_source_is_one_line_and_keeps_the_text(
    a2a: Nvim, workspace: Path
) -> None:
    (workspace / "x.py").write_text("x = 1\n")
    a2a.api.command("edit x.py")
    a2a.lua(
        """
        _G.told = {}
        vim.notify = function(msg) table.insert(_G.told, msg) end
        vim.diagnostic.get = function() error('diagnostics are broken') end
        """
    )
    sent = a2a.lua("return require('gemini_companion.agent').submit('fix #diagnostics')")
    assert sent is False
    told = wait_for(lambda: a2a.lua("return _G.told"), 10, "the message")
    assert len(told) == 1 and "\n" not in told[0], told
    assert "#diagnostics cannot be attached" in told[0] and "diagnostics are broken" in told[0]
    assert "traceback" not in told[0]


def test_at_completion_sees_a_file_the_moment_it_exists(a2a: Nvim, workspace: Path) -> None:
    a2a.lua("require('gemini_companion.agent').open()")

    def words(typed: str) -> list[str]:
        items = a2a.lua(
            """
            local typed = ...
            local complete = require('gemini_companion.agent.complete')
            complete.omnifunc(1, '')
            local items = complete.omnifunc(0, typed)
            return vim.tbl_map(function(i) return i.word end, items.words or items)
            """,
            typed,
        )
        return list(items)

    assert words("@fresh") == []
    (workspace / "fresh.py").write_text("new\n")
    assert words("@fresh") == ["@fresh.py"]


def test_a_folder_of_diff_allowed_dirs_needs_no_question_and_others_still_do(
    nvim_factory: Callable[..., Nvim], fake: tuple[str, CoderAgent], workspace: Path, tmp_path: Path
) -> None:
    url, agent = fake
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("shared notes\n")
    (tmp_path / "outside.txt").write_text("outside the workspace\n")
    setup = {
        "agent": {"protocol": "a2a", "a2a": {"url": url}},
        "diff": {"allowed_dirs": [str(shared)]},
    }
    nvim = nvim_factory(cwd=workspace, setup=setup)
    nvim.wait_running()
    answer_select(nvim, {})
    submit(nvim, "compare @../shared/notes.txt and @../outside.txt")
    wait_for(lambda: asked(nvim), 30, "the question")
    assert asked(nvim) == [f"@{tmp_path / 'outside.txt'} is outside the workspace: attach it?"]
    wait_for(lambda: prompt_text(nvim)[0].startswith("compare"), 30, "the text back")
    parts = a2a_turn(nvim, agent, "read @../shared/notes.txt")
    assert parts == [
        "read @../shared/notes.txt",
        f"Content from @{shared / 'notes.txt'}:\nshared notes\n",
    ]
    assert len(asked(nvim)) == 1
