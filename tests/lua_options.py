"""What the Lua side sends the Python side, for tests that drive the Python side
alone: the Python side keeps no option default of its own (the option schema,
lua/gemini_companion/options.lua, is the one place), so these tests take theirs
from Lua too, read once from a real Neovim running the plugin's own code."""

from __future__ import annotations

import functools
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from harness import ROOT, nvim_executable

# init.lua's start() with the host stubbed: what it would send as `start`.
_DUMP = """
vim.opt.rtp:prepend(%s)
local host = require("gemini_companion.host")
local sent = {}
host.ensure = function() return 1 end
host.start = function(options) sent.start = options end
require("gemini_companion").setup({ auto_start = false })
require("gemini_companion").start()
sent.defaults = require("gemini_companion.config").defaults
sent.names = {}
local function walk(spec, prefix)
  for _, field in ipairs(spec.fields) do
    local path = prefix .. field.name
    sent.names[#sent.names + 1] = path
    if field.type == "table" then
      walk(field, path .. ".")
    end
  end
end
walk(require("gemini_companion.options"), "")
io.write(vim.json.encode(sent))
"""


@functools.cache
def _sent() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "dump.lua"
        script.write_text(_DUMP % json.dumps(str(ROOT)))
        env_dirs = {f"XDG_{n}_HOME": tmp for n in ("CONFIG", "DATA", "STATE", "CACHE")}
        out = subprocess.run(
            [nvim_executable(), "--clean", "-l", str(script)],
            capture_output=True,
            text=True,
            check=True,
            env={"PATH": "/usr/bin:/bin", **env_dirs},
        )
    sent: dict[str, Any] = json.loads(out.stdout)
    return sent


def start_options(**overrides: Any) -> dict[str, Any]:
    """The options init.lua sends with ``start`` for the default configuration, with
    ``overrides`` (e.g. ``nvim_pid``, ``workspace_dirs``) put over them."""
    return {**json.loads(json.dumps(_sent()["start"])), **overrides}


def option_defaults() -> dict[str, Any]:
    """config.lua's defaults: what Lua sends for an option the user did not set."""
    defaults: dict[str, Any] = json.loads(json.dumps(_sent()["defaults"]))
    return defaults


def option_paths() -> list[str]:
    """Every option of the schema as a dotted path (``agent.acp.cmd``)."""
    return list(_sent()["names"])
