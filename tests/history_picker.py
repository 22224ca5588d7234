"""What the history's tests share (test_agent_history.py,
test_agent_history_restart.py): the user's picker replaced by one that records
what it was given and chooses an entry, and reading the history and the
conversations of a test's Neovim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import Nvim

# vim.ui.select and vim.ui.input as a user's picker: what they were given is kept
# (_G.picks: each call's prompt and labels), and the entry whose label holds
# _G.choose is chosen (none when it is nil); vim.ui.input answers _G.answer.
# Messages are kept too (_G.notes).
PICKER = """
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


def history_file(nvim: Nvim) -> Path:
    return Path(nvim.lua("return require('gemini_companion.agent').sessions_file()"))


def pick(nvim: Nvim, args: str = "", choose: str | None = None) -> list[str]:
    """Run ``:GeminiAgentConversations args``, choosing the entry holding ``choose``;
    the labels the picker showed."""
    nvim.lua("_G.choose = ...", choose)
    before = len(nvim.lua("return _G.picks"))
    nvim.api.command(f"GeminiAgentConversations {args}".rstrip())
    picks = nvim.lua("return _G.picks")
    return list(picks[-1]["labels"]) if len(picks) > before else []


def conversations(nvim: Nvim) -> list[dict[str, Any]]:
    return [dict(c) for c in nvim.lua("return require('gemini_companion.agent').conversations()")]


def text_of(nvim: Nvim, conversation: int) -> str:
    return "\n".join(
        nvim.lua("return require('gemini_companion.agent').transcript(...)", conversation)
    )


def history_records(nvim: Nvim) -> dict[str, dict[str, Any]]:
    path = history_file(nvim)
    if not path.exists():
        return {}
    return {r["id"]: r for r in json.loads(path.read_text())}


def notified(nvim: Nvim) -> list[str]:
    return [str(n) for n in nvim.lua("return _G.notes")]


def one_label(labels: list[str], needle: str) -> str:
    found = [label for label in labels if needle in label]
    assert len(found) == 1, (needle, labels)
    return found[0]
