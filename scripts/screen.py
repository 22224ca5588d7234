"""Capture the agent panel as a user sees it, for the README: doc/agent-panel.svg.

A real headless Neovim with this checkout's plugin drives the real ``gemini``
0.61.0 ``--acp`` offline (canned model answers, ``--fake-responses-non-strict``;
it needs tests/interop/node_modules, which scripts/setup installs), at 100x30:
a Lua file open, a prompt whose ``@ca`` is completed to ``@calc.lua`` with
``<C-x><C-o>`` and sent with ``<C-s>``, the answer in markdown (a code fence in
Lua, a heading, bold and inline code), and the next prompt being typed with
another completed ``@file``. A UI is attached through pynvim from the start
(``ext_linegrid``, RGB colours); the screen it was sent, every cell with its
highlight attributes, is written as an SVG: one ``<text>`` per run of cells alike, in the colours of
Neovim's default colour scheme, in a monospace font.

With ``--diff``, IDE mode's diff tab instead (doc/diff-tab.svg): calc.lua open,
and a proposal adding a function, sent by an MCP client's ``openDiff`` as the
Gemini CLI sends it.

Run: .venv/bin/python scripts/screen.py [--diff] [out.svg]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_model import gemini_home, text, write_responses  # noqa: E402
from harness import INTEROP, Nvim, Sandbox, empty_manifest, wait_for  # noqa: E402
from mcp_client import mcp_client  # noqa: E402

GEMINI_JS = INTEROP / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
COLUMNS, LINES = 100, 30
# The diff tab: two windows wide enough for the winbar's keys, the diff in full.
DIFF_COLUMNS, DIFF_LINES = 120, 18
WAIT = 120

CALC = """local M = {}

--- The sum of two numbers.
function M.add(a, b)
  return a + b
end

return M
"""

# The model's answer, streamed in these chunks.
ANSWER = [
    "`calc.lua` returns a module with one\nfunction:\n\n",
    "```lua\nfunction M.add(a, b)\n  return a + b\nend\n```\n\n",
    "## Summary\n\n- **add** returns the sum of `a` and `b`.\n",
    "- Nothing else is exported.\n",
]


# What highlights the transcript, for the record.
HIGHLIGHTER = """
local b = require('gemini_companion.agent.transcript').buffer()
if vim.treesitter.highlighter.active[b] then return "Neovim's tree-sitter highlighter" end
local marks = 0
for name, ns in pairs(vim.api.nvim_get_namespaces()) do
  if name:find('^gemini_companion_agent_') then
    marks = marks + #vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, {})
  end
end
return ("the plugin's markdown highlighter (%d extmarks)"):format(marks)
"""


# Marks of the code fences parsed in their language (agent/markdown_code.lua).
CODE_MARKS = """
local ns = vim.api.nvim_get_namespaces()['gemini_companion_agent_code']
local b = require('gemini_companion.agent.transcript').buffer()
return ns and #vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, {}) or 0
"""


@dataclass
class Screen:
    """The grid a UI is sent (grid 1: windows, floats and the command line)."""

    width: int = 0
    height: int = 0
    cells: list[list[list[Any]]] = field(default_factory=list)  # [text, hl id]
    attrs: dict[int, dict[str, Any]] = field(default_factory=dict)
    fg: int = 0xFFFFFF
    bg: int = 0x000000
    cursor: tuple[int, int] = (0, 0)
    mode: str = ""
    highlighter: str = ""

    def resize(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.cells = [[[" ", 0] for _ in range(width)] for _ in range(height)]

    def line(self, row: int, col: int, cells: list[list[Any]]) -> None:
        hl = 0
        for cell in cells:
            char = cell[0]
            if len(cell) > 1:
                hl = cell[1]
            for _ in range(cell[2] if len(cell) > 2 else 1):
                if col < self.width:
                    self.cells[row][col] = [char, hl]
                col += 1

    def scroll(self, top: int, bot: int, left: int, right: int, rows: int) -> None:
        span = range(top, bot - rows) if rows > 0 else range(bot - 1, top - rows - 1, -1)
        for row in span:
            self.cells[row][left:right] = [list(c) for c in self.cells[row + rows][left:right]]

    def handle(self, name: str, args: list[Any]) -> None:
        if name == "grid_resize":
            self.resize(args[1], args[2])
        elif name == "default_colors_set":
            if args[0] >= 0:
                self.fg = args[0]
            if args[1] >= 0:
                self.bg = args[1]
        elif name == "hl_attr_define":
            self.attrs[args[0]] = args[1]
        elif name == "grid_line":
            self.line(args[1], args[2], args[3])
        elif name == "grid_clear":
            self.resize(self.width, self.height)
        elif name == "grid_scroll":
            self.scroll(args[1], args[2], args[3], args[4], args[5])
        elif name == "grid_cursor_goto":
            self.cursor = (args[1], args[2])
        elif name == "mode_change":
            self.mode = args[0]


def read_screen(nvim: Nvim) -> Screen:
    """Redraw, and take in all the UI was sent since it attached, up to a marker
    notification sent after the redraw (the channel keeps the order)."""
    screen = Screen()
    nvim.api.command("redraw!")
    nvim.api.command("call rpcnotify(0, 'screen_done')")
    while True:
        message = nvim.api.next_message()
        if message is None:
            continue
        kind, name, args = message[0], message[1], message[2]
        if kind != "notification":
            continue
        if name == "screen_done":
            return screen
        if name == "redraw":
            for event in args:
                for call in event[1:]:
                    screen.handle(event[0], call)


def colour(value: int) -> str:
    return f"#{value:06x}"


def svg(screen: Screen, title: str = "The agent panel of gemini-companion.nvim") -> str:
    cw, ch, size = 8.4, 18, 14
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{screen.width * cw:.0f}"'
        f' height="{screen.height * ch}" viewBox="0 0 {screen.width * cw:.1f} {screen.height * ch}"'
        f' font-family="DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace"'
        f' font-size="{size}" xml:space="preserve">',
        f"<title>{escape(title)}, {screen.width}x{screen.height}</title>",
        f'<rect width="100%" height="100%" fill="{colour(screen.bg)}"/>',
    ]
    texts: list[str] = []
    for row_index, row in enumerate(screen.cells):
        col = 0
        while col < screen.width:
            hl = row[col][1]
            end = col
            while end < screen.width and row[end][1] == hl:
                end += 1
            attr = screen.attrs.get(hl, {})
            fg = attr.get("foreground", screen.fg)
            bg = attr.get("background", screen.bg)
            if attr.get("reverse"):
                fg, bg = bg, fg
            x, y = col * cw, row_index * ch
            if bg != screen.bg:
                out.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{(end - col) * cw:.1f}" height="{ch}"'
                    f' fill="{colour(bg)}"/>'
                )
            chars = "".join(cell[0] for cell in row[col:end])
            # A window separator as one unbroken line, not glyphs with gaps.
            for i, cell in enumerate(row[col:end]):
                if cell[0] == "│":
                    out.append(
                        f'<rect x="{x + (i + 0.5) * cw:.1f}" y="{y}" width="1" height="{ch}"'
                        f' fill="{colour(fg)}"/>'
                    )
            chars = chars.replace("│", " ")
            if chars.strip():
                style = [f'fill="{colour(fg)}"']
                if attr.get("bold"):
                    style.append('font-weight="bold"')
                if attr.get("italic"):
                    style.append('font-style="italic"')
                if attr.get("underline") or attr.get("undercurl"):
                    style.append('text-decoration="underline"')
                if attr.get("strikethrough"):
                    style.append('text-decoration="line-through"')
                # Each run fills its cells exactly, whatever the font's advance.
                width = sum(1 for cell in row[col:end] if cell[0] != "") * cw
                texts.append(
                    f'<text x="{x:.1f}" y="{y + ch - 5}" textLength="{width:.1f}"'
                    f' lengthAdjust="spacingAndGlyphs" {" ".join(style)}>{escape(chars)}</text>'
                )
            col = end
    out.extend(texts)
    if screen.mode.startswith("insert"):
        row, col = screen.cursor
        out.append(
            f'<rect x="{col * cw:.1f}" y="{row * ch}" width="1.5" height="{ch}"'
            f' fill="{colour(screen.fg)}"/>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def current_line(nvim: Nvim) -> str:
    return str(nvim.lua("return vim.api.nvim_get_current_line()"))


def capture(root: Path) -> Screen:
    work = root / "project"
    work.mkdir(parents=True)
    (work / "calc.lua").write_text(CALC)
    fake = write_responses(root / "fake.jsonl", [[[text(chunk)] for chunk in ANSWER]])
    cmd = ["node", str(GEMINI_JS), "--acp", "--fake-responses-non-strict", str(fake)]
    nvim = Nvim(
        Sandbox.create(root / "nvim", empty_manifest(root / "manifest" / "rplugin.vim")),
        cwd=work,
        setup={"agent": {"protocol": "acp", "acp": {"cmd": cmd}}},
        env={"HOME": str(gemini_home(root, ide=False)), "GEMINI_API_KEY": "offline-screen-key"},
        extra_init=f"vim.o.columns = {COLUMNS}; vim.o.lines = {LINES}",
    )
    try:
        nvim.wait_running()
        # A UI from the start, as a user has: Neovim redraws, and the transcript's
        # code fences are parsed in their language once on screen.
        nvim.api.ui_attach(COLUMNS, LINES, rgb=True, ext_linegrid=True)
        nvim.api.command("edit calc.lua")
        nvim.api.command("GeminiAgent")
        nvim.api.input("iexplain @ca<C-x><C-o>")
        wait_for(lambda: current_line(nvim) == "explain @calc.lua", WAIT, "@calc.lua completed")
        nvim.api.input(" and what it returns<C-s>")
        wait_for(
            lambda: (
                nvim.lua("return require('gemini_companion.agent').state().state") == "idle"
                and "Nothing else is exported."
                in "\n".join(nvim.lua("return require('gemini_companion.agent').transcript()"))
            ),
            WAIT,
            "the answer",
        )
        nvim.api.input("now add a test for @ca<C-x><C-o>")
        wait_for(
            lambda: current_line(nvim) == "now add a test for @calc.lua",
            WAIT,
            "the next prompt's @calc.lua completed",
        )
        nvim.api.input(" ")  # the mode line says -- INSERT -- again
        wait_for(lambda: current_line(nvim).endswith(" "), WAIT, "the space typed")
        wait_for(lambda: nvim.lua(CODE_MARKS) > 0, WAIT, "the code fence parsed as Lua")
        screen = read_screen(nvim)
        screen.highlighter = str(nvim.lua(HIGHLIGHTER))
        return screen
    finally:
        nvim.close()


# The proposal the diff tab shows: calc.lua with a second function.
PROPOSAL = CALC.replace(
    "\nreturn M\n",
    "\n--- The difference of two numbers.\nfunction M.sub(a, b)\n  return a - b\nend\n\nreturn M\n",
)


def capture_diff(root: Path) -> Screen:
    """IDE mode's diff tab, opened by an MCP client's ``openDiff`` as the Gemini CLI
    sends it (the real CLI needs a model to propose an edit; the tab is the same)."""
    work = root / "project"
    work.mkdir(parents=True)
    (work / "calc.lua").write_text(CALC)
    nvim = Nvim(
        Sandbox.create(root / "nvim", empty_manifest(root / "manifest" / "rplugin.vim")),
        cwd=work,
        extra_init=f"vim.o.columns = {DIFF_COLUMNS}; vim.o.lines = {DIFF_LINES}",
    )
    try:
        state = nvim.wait_running()
        nvim.api.ui_attach(DIFF_COLUMNS, DIFF_LINES, rgb=True, ext_linegrid=True)
        nvim.api.command("edit calc.lua")
        with mcp_client(state["port"], nvim.token()) as conn:
            conn.call_tool("openDiff", {"filePath": str(work / "calc.lua"), "newContent": PROPOSAL})
            wait_for(lambda: nvim.lua("return vim.fn.tabpagenr('$')") == 2, WAIT, "the diff tab")
            return read_screen(nvim)
    finally:
        nvim.close()


def main() -> None:
    diff = "--diff" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if a != "--diff"]
    default = "diff-tab.svg" if diff else "agent-panel.svg"
    out = Path(args[0]) if args else ROOT / "doc" / default
    # A fixed folder: the path the transcript shows is the same on every run.
    root = Path(tempfile.gettempdir()) / "gemini-screen"
    shutil.rmtree(root, ignore_errors=True)
    try:
        screen = capture_diff(root) if diff else capture(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if diff:
        out.write_text(svg(screen, "A diff tab of gemini-companion.nvim"))
        print(f"{out}: {screen.width}x{screen.height}, {len(screen.attrs)} highlight attributes")
        return
    out.write_text(svg(screen))
    print(
        f"{out}: {screen.width}x{screen.height}, {len(screen.attrs)} highlight attributes;"
        f" the transcript highlighted by {screen.highlighter}"
    )


if __name__ == "__main__":
    main()
