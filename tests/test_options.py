"""One option schema (lua/gemini_companion/options.lua, issue 24 item 4) and the
places that show it: config.lua derives the defaults and the validation from it;
scripts/gen_options.lua writes types.lua's option classes and the help's defaults
block and option list from it (the first test fails while either file differs);
the README's example and the Python side take their values from it. Each place is
also read here as a user or LuaLS reads it and compared with config.defaults."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from harness import ROOT, Nvim

GENERATOR = ROOT / "scripts" / "gen_options.lua"

TYPES = (ROOT / "lua" / "gemini_companion" / "types.lua").read_text()
DOC = (ROOT / "doc" / "gemini-companion.txt").read_text()

# Options whose value is a free-form map or list: their keys are the user's, not options.
OPEN_ENDED = {
    "terminal.args",
    "terminal.env",
    "diff.allowed_dirs",
    "agent.a2a.env",
    "agent.acp.env",
}

# Every option as a dotted path, from config.defaults (tables are walked, lists
# and the open-ended maps are leaves).
DEFAULT_PATHS = """
local open = ...
local paths = {}
local function walk(prefix, tbl)
  for key, value in pairs(tbl) do
    local path = prefix == "" and key or (prefix .. "." .. key)
    paths[#paths + 1] = path
    if type(value) == "table" and not vim.islist(value) and not open[path] then
      walk(path, value)
    end
  end
end
walk("", require("gemini_companion.config").defaults)
return paths
"""


def type_paths(cls: str = "gemini_companion.Options", prefix: str = "") -> dict[str, str]:
    """``path -> type`` of every ``---@field`` of ``cls`` and of the classes it uses."""
    match = re.search(rf"^---@class \(exact\) {re.escape(cls)}\n((?:---@field .*\n)+)", TYPES, re.M)
    assert match, f"types.lua has no class {cls}"
    found: dict[str, str] = {}
    for line in match.group(1).splitlines():
        name, kind = line.split()[1:3]
        path = prefix + name.rstrip("?")
        found[path] = kind
        nested = f"---@class (exact) {kind}\n" in TYPES
        if kind.startswith("gemini_companion.") and nested and path not in OPEN_ENDED:
            found.update(type_paths(kind, path + "."))
    return found


@pytest.fixture
def nvim(nvim_factory: Callable[..., Nvim]) -> Nvim:
    return nvim_factory(setup={"auto_start": False})


def defaults(nvim: Nvim) -> set[str]:
    return set(nvim.lua(DEFAULT_PATHS, {p: True for p in OPEN_ENDED}))


def test_types_lua_and_the_help_are_what_the_schema_generates(nvim: Nvim) -> None:
    differed = nvim.lua("return dofile(...).run(select(2, ...), true)", str(GENERATOR), str(ROOT))
    assert differed == [], (
        f"{', '.join(differed)} differ from the option schema. Options live in"
        " lua/gemini_companion/options.lua only: change them there (never in types.lua"
        " or the help), then run scripts/gen-options and commit what it rewrites."
    )


def test_types_lua_declares_every_option_with_a_default(nvim: Nvim) -> None:
    declared = type_paths()
    assert defaults(nvim) - set(declared) == set()
    # The others have no default (unset means "not used"): validation knows them
    # (test_validation_... below gives each a wrong value).
    assert {"log_file", "context.trusted"} <= set(declared) - defaults(nvim)


def test_the_helps_defaults_block_is_config_defaults(nvim: Nvim) -> None:
    block = re.search(r'require\("gemini_companion"\)\.setup\(\{\n(.*?)\n    \}\)', DOC, re.S)
    assert block, "the help's defaults block is missing"
    same = nvim.lua(
        """
        local chunk = assert(loadstring("return {" .. ... .. "}"))
        return vim.deep_equal(chunk(), require("gemini_companion.config").defaults)
        """,
        block.group(1),
    )
    assert same is True, "doc/gemini-companion.txt's defaults differ from config.defaults"


def test_the_help_has_a_tag_for_every_declared_option() -> None:
    tags = set(re.findall(r"\*gemini-companion-config\.([\w.]+)\*", DOC))
    # Two levels deep: the float window's and the keymaps' own fields are described
    # under terminal.float and diff.keymaps.
    wanted = {p for p in type_paths() if p.count(".") <= 1}
    assert wanted - tags == set()


def test_validation_names_every_option_given_a_wrong_value_or_an_unknown_key(
    nvim: Nvim,
) -> None:
    before = nvim.lua("return require('gemini_companion.config').get()")
    errors: dict[str, Any] = nvim.lua(
        """
        local open = ...
        local errors = {}
        local function set_at(path, value)
          local opts, node = {}, nil
          node = opts
          local keys = vim.split(path, ".", { plain = true })
          for i = 1, #keys - 1 do
            node[keys[i]] = {}
            node = node[keys[i]]
          end
          node[keys[#keys]] = value
          local ok, err = pcall(require("gemini_companion").setup, opts)
          return ok and "accepted" or err
        end
        local function walk(prefix, tbl)
          for key, value in pairs(tbl) do
            local path = prefix == "" and key or (prefix .. "." .. key)
            errors[path] = set_at(path, function() end)
            if type(value) == "table" and not vim.islist(value) and not open[path] then
              errors[path .. ".no_such_option"] = set_at(path .. ".no_such_option", 1)
              walk(path, value)
            end
          end
        end
        walk("", require("gemini_companion.config").defaults)
        errors.no_such_option = set_at("no_such_option", 1)
        for _, path in ipairs(select(2, ...)) do
          errors[path] = set_at(path, function() end)
        end
        return errors
        """,
        {p: True for p in OPEN_ENDED},
        sorted(set(type_paths()) - defaults(nvim)),
    )
    assert set(type_paths()) <= set(errors)
    for path, error in errors.items():
        assert error != "accepted", f"setup() accepted a bad {path}"
        assert f"'{path}'" in error, (path, error)
    # And nothing changed.
    assert nvim.lua("return require('gemini_companion.config').get()") == before


def test_the_readmes_example_gives_every_option_its_default(nvim: Nvim) -> None:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"### Options\n\n```lua\n(.*?)```", readme, re.S)
    assert block, "README.md's Options example is missing"
    wrong = nvim.lua(
        """
        local given
        local chunk = assert(loadstring(...))
        setfenv(chunk, { require = function() return { setup = function(t) given = t end } end })
        chunk()
        local defaults = require("gemini_companion.config").defaults
        local wrong = {}
        local function walk(prefix, tbl, default)
          for key, value in pairs(tbl) do
            local path = prefix .. key
            local expected = type(default) == "table" and default[key] or nil
            if type(value) == "table" and not vim.islist(value) and next(value) then
              walk(path .. ".", value, expected)
            elseif not vim.deep_equal(value, expected) then
              wrong[#wrong + 1] = path
            end
          end
        end
        walk("", given, defaults)
        for key in pairs(defaults) do
          if given[key] == nil then
            wrong[#wrong + 1] = key .. " (missing)"
          end
        end
        return wrong
        """,
        block.group(1),
    )
    assert wrong == [], f"README.md's Options example differs from config.defaults at {wrong}"
