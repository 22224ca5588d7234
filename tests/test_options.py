"""One option schema (lua/gemini_companion/options.lua, issue 24 item 4) and the
places that show it: config.lua derives the defaults and the validation from it;
scripts/gen_options.lua writes types.lua's option classes and the help's defaults
block and option list from it (the first test fails while either file differs);
the README's example (a few options) and the Python side take their values from
it. Each place is also read here as a user or LuaLS reads it and compared with
config.defaults."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest
from harness import ROOT, Nvim
from lua_options import option_defaults, option_paths, start_options

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


def test_the_readmes_example_gives_the_options_it_names_their_defaults(nvim: Nvim) -> None:
    """The README shows a few options, at their defaults: none may drift from the schema."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Configure\n.*?```lua\n(.*?)```", readme, re.S)
    assert block, "README.md's Configure example is missing"
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
        return wrong
        """,
        block.group(1),
    )
    assert wrong == [], f"README.md's Configure example differs from config.defaults at {wrong}"


# -- The Python side -----------------------------------------------------------------


def _defaulted(cls: type) -> set[str]:
    return {
        f.name
        for f in dataclasses.fields(cls)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    }


def test_the_python_side_keeps_no_option_default_of_its_own() -> None:
    """Lua sends every option, merged over the schema's defaults, so the Python classes
    that read them hold no default: only the options the schema leaves unset
    (``context.trusted``, ``agent.acp.auth_method``: None) and what is not an option."""
    from gemini_companion.agent.acp.options import AcpOptions
    from gemini_companion.companion import StartOptions
    from gemini_companion.context import ContextTracker
    from gemini_companion.logfile import configure_logging
    from gemini_companion.server import ServerOptions

    assert _defaulted(StartOptions) == {"context_trusted", "tools", "quiet", "extra"}
    assert _defaulted(AcpOptions) == {"auth_method", "sessions_file"}
    assert {"keep_alive_seconds", "max_body_bytes"}.isdisjoint(_defaulted(ServerOptions))
    debounce = inspect.signature(ContextTracker).parameters["debounce_ms"]
    assert debounce.default is inspect.Parameter.empty
    level = inspect.signature(configure_logging).parameters["level"]
    assert level.default is inspect.Parameter.empty


def test_the_python_side_reads_what_lua_sends() -> None:
    from gemini_companion.agent.acp.options import AcpOptions
    from gemini_companion.companion import StartOptions

    defaults = option_defaults()
    start = StartOptions.from_lua(start_options())
    assert start.keep_alive_seconds == defaults["keep_alive_seconds"]
    assert start.max_body_bytes == defaults["max_request_bytes"]
    assert start.context_debounce_ms == defaults["context"]["debounce_ms"]
    assert start.context_trusted is None
    assert start.allowed_dirs == defaults["diff"]["allowed_dirs"]
    assert start.tools_enabled is defaults["tools"]["enabled"]
    acp = AcpOptions.from_mapping(defaults["agent"]["acp"])
    assert acp.cmd == tuple(defaults["agent"]["acp"]["cmd"])
    assert acp.env == {}
    assert acp.startup_timeout == defaults["agent"]["acp"]["startup_timeout"]
    assert acp.cancel_timeout == defaults["agent"]["acp"]["cancel_timeout"]
    assert acp.auth_method is None


def test_no_python_module_falls_back_to_a_default_of_an_option() -> None:
    """``options.get("cmd") or ["gemini-cli-a2a-server"]`` is a second copy of a
    default: a fallback for an option's name must be empty (None, "", [] or {})."""
    names = {path.rsplit(".", 1)[-1] for path in option_paths()}
    package = ROOT / "rplugin" / "python3" / "gemini_companion"

    def empty(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return not node.value
        return (isinstance(node, ast.List | ast.Tuple | ast.Set) and not node.elts) or (
            isinstance(node, ast.Dict) and not node.keys
        )

    def option_get(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and bool(node.args)
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in names
        )

    found = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            fallback: list[ast.expr] = []
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
                if option_get(node.values[0]):
                    fallback = node.values[1:]
            elif option_get(node) and isinstance(node, ast.Call):
                fallback = node.args[1:]
            if not all(empty(f) for f in fallback):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == [], "defaults of options repeated in Python (the schema holds them):\n" + (
        "\n".join(found)
    )
