"""What the agent panel's tests share: the real A2A server's set-up against the fake
Gemini API, and reading the panel of a test's Neovim (its transcript, its state, and
waiting on either). The fixtures built on these are in conftest.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fake_gemini import FakeGemini
from harness import INTEROP, ROOT, Nvim, wait_for

WAIT = 60  # what a wait allows by default: agents start slowly on a busy machine
SERVER_BIN = ROOT / "tests" / "a2a_server" / "node_modules" / ".bin" / "gemini-cli-a2a-server"
START = 180  # the A2A server's start: 3-4 s on an idle machine, much more on a busy one
GEMINI_JS = INTEROP / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"


def acp_setup(responses: Path, home: Path) -> dict[str, Any]:
    """``nvim_factory``'s ``setup`` and ``env`` for a panel on the real ``gemini --acp``,
    offline: the model answers from ``responses`` (fake_model.write_responses), and
    ``home`` is the CLI's HOME (fake_model.gemini_home)."""
    cmd = ["node", str(GEMINI_JS), "--acp", "--fake-responses-non-strict", str(responses)]
    return {
        "setup": {"agent": {"protocol": "acp", "acp": {"cmd": cmd}}},
        "env": {"HOME": str(home), "GEMINI_API_KEY": "offline-test-key"},
    }


def a2a_setup(fake: FakeGemini, home: Path, **env: str) -> dict[str, Any]:
    home.mkdir(exist_ok=True)
    return {
        "agent": {
            "protocol": "a2a",
            "a2a": {
                "cmd": [str(SERVER_BIN)],
                "env": {
                    "HOME": str(home),
                    "GEMINI_API_KEY": "test-key",
                    "GOOGLE_GEMINI_BASE_URL": fake.url,
                    **env,
                },
            },
        }
    }


def transcript(nvim: Nvim) -> str:
    return "\n".join(nvim.lua("return require('gemini_companion.agent').transcript()"))


def agent_state(nvim: Nvim) -> dict[str, Any]:
    return dict(nvim.lua("return require('gemini_companion.agent').state()"))


def wait_transcript(nvim: Nvim, text: str, timeout: float = WAIT) -> str:
    def check() -> str | None:
        found = transcript(nvim)
        return found if text in found else None

    try:
        return wait_for(check, timeout, f"{text!r} in the transcript")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- transcript ---\n{transcript(nvim)}") from None


def wait_agent(
    nvim: Nvim, what: str, check: Callable[[dict[str, Any]], bool], timeout: float = WAIT
) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        state = agent_state(nvim)
        return state if check(state) else None

    try:
        return wait_for(probe, timeout, what, interval=0.05)
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}\n--- state ---\n{agent_state(nvim)}\n--- transcript ---\n{transcript(nvim)}"
        ) from None


# A window's rows as the screen shows them (its text area), or with ``status`` its
# status line: screenstring() cell by cell.
_WINDOW_ROWS = """
local win, status = ...
local row, col = unpack(vim.api.nvim_win_get_position(win))
local first, last = row + 1, row + vim.api.nvim_win_get_height(win)
if status then
  first, last = last + 1, last + 1
end
local rows = {}
for r = first, last do
  local cells = {}
  for c = col + 1, col + vim.api.nvim_win_get_width(win) do
    cells[#cells + 1] = vim.fn.screenstring(r, c)
  end
  rows[#rows + 1] = table.concat(cells)
end
return rows
"""


def panel_window(nvim: Nvim, which: int = 1) -> int:
    """The panel's transcript window (1) or prompt window (2)."""
    return int(
        nvim.lua(f"return (select({which}, require('gemini_companion.agent.panel').windows()))")
    )


def screen_rows(nvim: Nvim, win: int) -> list[str]:
    """The rows of window ``win`` as the screen shows them, after ``:redraw!``."""
    nvim.api.command("redraw!")
    return list(nvim.lua(_WINDOW_ROWS, win, False))


def status_row(nvim: Nvim, win: int) -> str:
    """The status line of window ``win`` as the screen shows it, after ``:redraw!``."""
    nvim.api.command("redraw!")
    return str(nvim.lua(_WINDOW_ROWS, win, True)[0])


# Whether each transcript cell ({ row, col }, 1-based) is drawn with a highlight,
# after ``:redraw!``; a message naming the first cell not on screen instead.
_DRAWN = """
local cells = ...
vim.cmd('redraw!')
local b = require('gemini_companion.agent.transcript').buffer()
local win = vim.fn.win_findbuf(b)[1]
local out = {}
for _, c in ipairs(cells) do
  local pos = vim.fn.screenpos(win, c[1], c[2])
  if pos.row == 0 then
    return 'row ' .. c[1] .. ' is not on screen'
  end
  local cell = vim.api.nvim__inspect_cell(1, pos.row - 1, pos.col - 1)
  out[#out + 1] = cell[3] ~= nil and next(cell[3]) ~= nil
end
return out
"""


def highlighted(nvim: Nvim, cells: list[list[int]]) -> list[bool] | str:
    """Whether each transcript cell ``[row, col]`` (1-based) is drawn with a highlight
    on screen, after a full redraw; what is wrong when one is not on screen."""
    found = nvim.lua(_DRAWN, cells)
    return found if isinstance(found, str) else [bool(x) for x in found]
