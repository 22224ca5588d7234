"""The agent panel under the markdown renderers users install (issue 22, item 4):
render-markdown.nvim and markview.nvim, loaded in a real Neovim as their READMEs
and ours tell users (`gemini_agent` in their file types), draw over the transcript
as an answer streams in, while the user types in the prompt, and the panel keeps
working under them.

CI cannot install them (only package registries are reachable there): point
RENDER_MARKDOWN_DIR / MARKVIEW_DIR at a checkout of each to run these; without
the variable the test is skipped, saying so. The panel is driven through the real
Python host with the scripted transport (tests/agent_fakes) in place of a protocol."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_setup import panel_window, screen_rows, transcript, wait_agent, wait_transcript
from harness import ROOT, Nvim, json_lines, wait_for

SCRIPTED = f"{ROOT / 'tests' / 'agent_fakes' / 'scripted_transport.py'}:ScriptedTransport"


@dataclass(frozen=True)
class Renderer:
    name: str
    variable: str
    module: str
    namespace: str
    setup: str  # the user's set-up, as the README tells them


RENDERERS = [
    Renderer(
        "render-markdown.nvim",
        "RENDER_MARKDOWN_DIR",
        "render-markdown",
        "render-markdown.nvim",
        "require('render-markdown').setup({ file_types = { 'markdown', 'gemini_agent' } })",
    ),
    Renderer(
        "markview.nvim",
        "MARKVIEW_DIR",
        "markview",
        "markview/markdown",
        "require('markview').setup({ preview = {"
        " filetypes = { 'markdown', 'gemini_agent' }, ignore_buftypes = {} } })",
    ),
]

# The renderer's marks in the transcript: { row, details } (no namespace id).
MARKS = """
local ns = vim.api.nvim_get_namespaces()[...]
if not ns then return {} end
local buf = require('gemini_companion.agent.transcript').buffer()
local marks = vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
return vim.tbl_map(function(m) m[4].ns_id = nil; return { m[2], m[4] } end, marks)
"""


DRAWN = ("virt_text", "conceal", "conceal_lines", "hl_group", "line_hl_group", "sign_text")


@pytest.fixture(params=RENDERERS, ids=[r.name for r in RENDERERS])
def renderer(request: pytest.FixtureRequest) -> Renderer:
    found: Renderer = request.param
    where = os.environ.get(found.variable)
    if not where:
        pytest.skip(
            f"{found.variable} is not set: point it at a checkout of {found.name} to test"
            " the panel under it (CI cannot install it)"
        )
    if not (Path(where) / "lua" / found.module).exists():
        pytest.fail(f"{found.variable}={where} holds no lua/{found.module}: not {found.name}")
    return found


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    return tmp_path / "transport.jsonl"


@pytest.fixture(params=[True, "treesitter", False], ids=lambda m: f"markdown={m}")
def markdown(request: pytest.FixtureRequest) -> bool | str:
    """The panel's own highlighting (`agent.markdown`): the renderer draws over each."""
    mode: bool | str = request.param
    return mode


@pytest.fixture
def nvim(
    nvim_factory: Callable[..., Nvim],
    renderer: Renderer,
    markdown: bool | str,
    tmp_path: Path,
    log_file: Path,
) -> Nvim:
    work = tmp_path / "work"
    work.mkdir()
    where = os.environ[renderer.variable]
    instance = nvim_factory(
        setup={"agent": {"markdown": markdown}},
        cwd=work,
        env={"GEMINI_COMPANION_TEST_TRANSPORT": SCRIPTED, "SCRIPTED_TRANSPORT_LOG": str(log_file)},
        extra_init=f"vim.opt.rtp:append({json.dumps(where)})\n{renderer.setup}\n"
        "vim.o.columns = 120; vim.o.lines = 40",
    )
    instance.wait_running()
    return instance


def marks(nvim: Nvim, renderer: Renderer) -> list[tuple[int, dict[str, Any]]]:
    return [(row, details) for row, details in nvim.lua(MARKS, renderer.namespace)]


def drawn_rows(nvim: Nvim, renderer: Renderer) -> set[int]:
    return {row for row, details in marks(nvim, renderer) if any(k in details for k in DRAWN)}


def line_index(nvim: Nvim, text: str) -> int:
    lines = nvim.lua(
        "return vim.api.nvim_buf_get_lines("
        "require('gemini_companion.agent.transcript').buffer(), 0, -1, false)"
    )
    return int(lines.index(text))


def answered(nvim: Nvim) -> None:
    """The scripted answer to "markdown" (a heading, bold, a Lua code fence) is in."""
    wait_transcript(nvim, "```lua")
    wait_agent(nvim, "the turn's end", lambda state: state["state"] == "idle")


def test_the_renderer_draws_a_streamed_answer_while_you_type_in_the_prompt(
    nvim: Nvim, renderer: Renderer
) -> None:
    """The answer streams into the transcript while the cursor is in the prompt, in
    insert mode (`<C-s>` keeps it there): the renderer draws its heading and its
    code fence without the user moving into the transcript."""
    nvim.api.command("GeminiAgent")
    nvim.api.input("<Esc>imarkdown<C-s>")
    answered(nvim)
    heading, fence = line_index(nvim, "## Summary"), line_index(nvim, "```lua")
    code = fence + 1
    wait_for(
        lambda: {heading, fence, code} <= drawn_rows(nvim, renderer),
        10,
        f"{renderer.name}'s marks on the heading and the code fence",
    )
    assert nvim.api.request("nvim_get_mode")["mode"] == "i"  # still typing
    assert nvim.lua("return vim.bo.filetype") == "gemini_agent_prompt"
    rows = screen_rows(nvim, panel_window(nvim))
    shown = "\n".join(rows)
    [summary] = [row for row in rows if "Summary" in row]
    assert "##" not in summary, f"the heading's markup shows\n{shown}"
    assert transcript(nvim).split("\n")[code].strip() in shown  # the code itself stays


def test_the_panel_works_under_the_renderer(nvim: Nvim, renderer: Renderer, log_file: Path) -> None:
    """Role lines, a permission shown with its options and answered, the turn going
    on: all as without a renderer."""
    nvim.api.command("GeminiAgent")
    nvim.api.input("<Esc>imarkdown<C-s>")
    answered(nvim)
    nvim.api.input("shell<C-s>")
    wait_transcript(nvim, ":GeminiAccept [option] or :GeminiReject")
    wait_for(lambda: drawn_rows(nvim, renderer), 10, f"{renderer.name}'s marks")
    rows = screen_rows(nvim, panel_window(nvim))
    shown = "\n".join(rows)
    for needle in ("▍ You", "▍ Gemini", "Waiting for you: Run ls -la", "proceed_once", "Allow"):
        assert needle in shown, f"{needle!r} is not on the screen\n{shown}"
    assert any(row.startswith("▍ Gemini") for row in rows), shown
    nvim.api.input("<Esc>")
    nvim.api.command("GeminiAccept")
    wait_transcript(nvim, "After the tool.")
    answers = wait_for(
        lambda: [r for r in json_lines(log_file) if r["call"] == "answer"], 10, "the answer"
    )
    assert [(a["call_id"], a["option"]) for a in answers] == [("call-1", "proceed_once")]
    text = transcript(nvim)
    assert text.count("▍ You") == 2 and text.count("▍ Gemini") == 2, text
    assert "(done)" in text
