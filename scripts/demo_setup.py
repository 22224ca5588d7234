"""Writes the configuration scripts/run starts Neovim with (under .demo/).

``live``: the plugin with your own Gemini CLI setup. ``offline``: the plugin, a
demo project, and the real Gemini CLI with canned model answers in a private home
with IDE mode on, so the whole round trip (the CLI proposes an edit, the diff opens
in Neovim, you accept it, the CLI writes the file) runs without an account.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ORIGINAL = 'def greet(name):\n    return "Hello, " + name + "!"\n'
PROPOSED = (
    "def greet(name: str) -> str:\n"
    '    """Return a friendly greeting for ``name``."""\n'
    '    return f"Hello, {name}!"\n'
)
PROMPT = "Add type hints and a docstring to greet() in hello.py"


def _turn(parts: list[dict[str, object]]) -> dict[str, object]:
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 10,
            "totalTokenCount": 20,
        },
    }
    return {"method": "generateContentStream", "response": [chunk]}


def canned_responses(target: Path) -> list[dict[str, object]]:
    """The model's side of the demo: an edit of ``target``, then a closing remark."""
    edit = {
        "functionCall": {
            "name": "write_file",
            "args": {"file_path": str(target), "content": PROPOSED},
        }
    }
    done = {"text": "Done: greet() now has type hints and a docstring."}
    return [_turn([{"text": "I'll update hello.py."}, edit]), _turn([done]), _turn([done])]


def offline(demo: Path, gemini: str) -> dict[str, object]:
    project = demo / "project"
    project.mkdir(parents=True, exist_ok=True)
    target = project / "hello.py"
    target.write_text(ORIGINAL)  # every demo starts from the same file
    home = demo / "home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {
        "ide": {"enabled": True, "hasSeenNudge": True},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"disableAutoUpdate": True},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2))
    responses = demo / "responses.jsonl"
    responses.write_text("".join(json.dumps(r) + "\n" for r in canned_responses(target)))
    return {
        "cmd": gemini,
        "args": ["--fake-responses-non-strict", str(responses)],
        "env": {"HOME": str(home), "GEMINI_API_KEY": "offline-demo"},
    }


# One short line each: longer than the screen's last line (under 68 columns at
# 80), Neovim asks to "Press ENTER" before the demo can be used.
WELCOME = {
    "offline": "gemini-companion demo: :Gemini, review its edit, then :w",
    "live": "gemini-companion: :Gemini opens the Gemini CLI",
}


def main() -> None:
    demo, mode, gemini = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    terminal = offline(demo, gemini) if mode == "offline" else {"cmd": gemini}
    opts = {"terminal": terminal}
    lines = [
        f"vim.opt.rtp:prepend({json.dumps(str(ROOT))})",
        f"vim.g.python3_host_prog = {json.dumps(str(ROOT / '.venv' / 'bin' / 'python'))}",
        f"require('gemini_companion').setup(vim.json.decode({json.dumps(json.dumps(opts))}))",
        "vim.o.statusline = \"%f %m %= %{%v:lua.require'gemini_companion'.statusline()%} \"",
        "vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = function()",
        f"  vim.defer_fn(function() vim.notify({json.dumps(WELCOME[mode])}) end, 200)",
        "end })",
    ]
    if mode == "offline":
        # The demo's prompt, typed once the CLI has connected to this Neovim: given at
        # its start, the canned edit could come before the connection, and be
        # confirmed in the terminal instead of a diff here.
        lines += [
            "vim.api.nvim_create_autocmd('User', {",
            "  pattern = 'GeminiCompanionStatus',",
            "  callback = function()",
            "    if #require('gemini_companion').status().sessions > 0 then",
            f"      require('gemini_companion').send({json.dumps(PROMPT)}, {{ submit = true }})",
            "      return true",
            "    end",
            "  end,",
            "})",
        ]
    init = "\n".join(lines)
    (demo / "init.lua").write_text(init + "\n")


if __name__ == "__main__":
    main()
