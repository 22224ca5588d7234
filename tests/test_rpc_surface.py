"""The RPC surface between Lua and Python is declared once, as data
(lua/gemini_companion/rpc.lua: each message, its direction, its kind), and every
place that sends or handles a message is held to it (issue 24 item 5): host.lua
(what it sends with ``rpcnotify``, its ``_receive`` handlers and whether each is
one-way or answered), ``__init__.py`` (its ``rpc_export`` handlers), ``editor.py``
(the ``Editor`` protocol: one-way methods return None, answered ones a future),
``nvim_editor.py`` (which message each method sends, by ``_send`` or
``_request``), ``early.py`` (the state it sends before pynvim loads) and the
list in doc/gemini-companion-development.txt. Each side is read from its
source, as a reader would."""

from __future__ import annotations

import ast
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import ROOT, Nvim, nvim_executable

LUA = ROOT / "lua" / "gemini_companion"
PY = ROOT / "rplugin" / "python3" / "gemini_companion"
HOST = LUA / "host.lua"
PREFIX = "gemini_companion_"
FIX = (
    " Every message between Lua and Python is declared in lua/gemini_companion/rpc.lua"
    " (name, direction, kind): declare it there and implement it on both sides"
    " (see that file's header), or remove it from both."
)

Surface = set[tuple[str, str]]  # (name, kind)


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    script = tmp_path_factory.mktemp("rpc") / "dump.lua"
    script.write_text(f"io.write(vim.json.encode(dofile({json.dumps(str(LUA / 'rpc.lua'))})))")
    out = subprocess.run(
        [nvim_executable(), "--clean", "-l", str(script)],
        capture_output=True,
        text=True,
        check=True,
    )
    messages: list[dict[str, Any]] = json.loads(out.stdout)
    return messages


def declared_surface(messages: list[dict[str, Any]], to: str) -> Surface:
    return {(m["name"], m["kind"]) for m in messages if m["to"] == to}


# -- Lua ---------------------------------------------------------------------------------


def host_sends() -> Surface:
    """What host.lua sends to Python: ``notify("gemini_companion_<name>", ...)``."""
    text = HOST.read_text()
    assert "rpcrequest" not in text, "host.lua waits for Python (rpcrequest)"
    return {(name, "notify") for name in re.findall(rf'notify\("{PREFIX}(\w+)"', text)}


def host_handles() -> Surface:
    """host.lua's ``handlers``: each key, one-way or answered by the comment above it."""
    text = HOST.read_text()
    table = re.search(r"^local handlers = \{\n(.*?)^\}", text, re.M | re.S)
    assert table, "host.lua has no handlers table"
    found: Surface = set()
    for kind, name in re.findall(
        r"^  -- (one-way|answered)\b.*\n(?:  --.*\n)*  (\w+) = function", table.group(1), re.M
    ):
        found.add((name, "notify" if kind == "one-way" else "request"))
    keys = re.findall(r"^  (\w+) = function", table.group(1), re.M)
    assert len(keys) == len(found), (
        "a host.lua handler lacks its '-- one-way' or '-- answered' comment"
    )
    return found


def test_only_host_lua_talks_to_python() -> None:
    others = [
        p.relative_to(ROOT)
        for p in LUA.rglob("*.lua")
        if p != HOST and re.search(r"rpcnotify|rpcrequest|rpc = true", lua_code(p))
    ]
    assert others == [], f"Lua modules other than host.lua talk to Python: {others}"


def lua_code(path: Path) -> str:
    """A Lua file without its comments."""
    return re.sub(r"--.*", "", path.read_text())


# -- Python ------------------------------------------------------------------------------


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def exported() -> Surface:
    """``__init__.py``'s ``@pynvim.rpc_export(...)`` handlers; sync=True would be a request."""
    found: Surface = set()
    for node in ast.walk(parse(PY / "__init__.py")):
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if (
                isinstance(deco, ast.Call)
                and isinstance(deco.func, ast.Attribute)
                and deco.func.attr == "rpc_export"
            ):
                first = deco.args[0]
                assert isinstance(first, ast.Constant) and isinstance(first.value, str)
                assert first.value.startswith(PREFIX), first.value
                sync = any(
                    k.arg == "sync" and isinstance(k.value, ast.Constant) and k.value.value
                    for k in deco.keywords
                )
                found.add((first.value.removeprefix(PREFIX), "request" if sync else "notify"))
    return found


def editor_methods() -> dict[str, str]:
    """The ``Editor`` protocol's methods: ``name -> kind`` (None: one-way; a future: answered)."""
    tree = parse(PY / "editor.py")
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Editor")
    found: dict[str, str] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            returns = ast.unparse(node.returns) if node.returns else ""
            found[node.name] = "notify" if returns == "None" else "request"
            assert returns == "None" or "Future" in returns, (node.name, returns)
    return found


def nvim_editor_sends() -> dict[str, tuple[str, str]]:
    """``NvimEditor``'s methods: ``method -> (message, kind)`` from its ``_send``/``_request``."""
    tree = parse(PY / "nvim_editor.py")
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "NvimEditor")
    found: dict[str, tuple[str, str]] = {}
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef) or method.name.startswith("_"):
            continue
        for node in ast.walk(method):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("_send", "_request")
            ):
                name = node.args[0]
                assert isinstance(name, ast.Constant), method.name
                assert method.name not in found, f"NvimEditor.{method.name} sends twice"
                kind = "notify" if node.func.attr == "_send" else "request"
                found[method.name] = (name.value, kind)
        assert method.name in found, f"NvimEditor.{method.name} sends no message"
    return found


def early_sends() -> Surface:
    """early.py's hand-packed notifications: ``[RECEIVE, ["<name>", ...]]``."""
    found: Surface = set()
    for node in ast.walk(parse(PY / "early.py")):
        if (
            isinstance(node, ast.List)
            and len(node.elts) == 2
            and isinstance(node.elts[0], ast.Name)
            and node.elts[0].id == "RECEIVE"
            and isinstance(node.elts[1], ast.List)
            and isinstance(node.elts[1].elts[0], ast.Constant)
        ):
            found.add((node.elts[1].elts[0].value, "notify"))
    assert found, "early.py sends nothing through host.lua's _receive"
    return found


def calls_lua(path: Path) -> bool:
    """Whether ``path`` holds Lua code for host.lua or calls ``exec_lua`` (docstrings
    aside)."""
    tree = parse(path)
    docs = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }
    lua = re.compile(r"gemini_companion\.host|\b_receive\b")
    return any(
        (
            (isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs)
            and bool(lua.search(n.value))
        )
        or (isinstance(n, ast.Attribute) and n.attr == "exec_lua")
        for n in ast.walk(tree)
    )


def test_only_nvim_editor_and_early_talk_to_lua() -> None:
    others = [
        p.relative_to(ROOT)
        for p in PY.rglob("*.py")
        if p.name not in ("nvim_editor.py", "early.py") and calls_lua(p)
    ]
    assert others == [], f"Python modules other than nvim_editor.py and early.py call Lua: {others}"
    assert calls_lua(PY / "nvim_editor.py") and calls_lua(PY / "early.py")


# -- Both sides against the declaration --------------------------------------------------


def test_lua_to_python_messages_are_the_declared_ones(declared: list[dict[str, Any]]) -> None:
    want = declared_surface(declared, "python")
    assert all(kind == "notify" for _, kind in want), "Lua never waits for Python: notify only"
    assert host_sends() == want, (
        f"host.lua sends {sorted(host_sends() - want)} undeclared; declared but not sent:"
        f" {sorted(want - host_sends())}." + FIX
    )
    assert exported() == want, (
        f"__init__.py handles {sorted(exported() - want)} undeclared; declared but not"
        f" handled: {sorted(want - exported())}." + FIX
    )


def test_python_to_lua_messages_are_the_declared_ones(declared: list[dict[str, Any]]) -> None:
    want = declared_surface(declared, "lua")
    assert host_handles() == want, (
        f"host.lua's handlers {sorted(host_handles() - want)} are undeclared or of another"
        f" kind; declared but not handled so: {sorted(want - host_handles())}." + FIX
    )
    sends = nvim_editor_sends()
    by_method = {m["python"]: (m["name"], m["kind"]) for m in declared if m["to"] == "lua"}
    assert sends == by_method, (
        f"NvimEditor sends {sorted(set(sends.items()) - set(by_method.items()))}; declared:"
        f" {sorted(set(by_method.items()) - set(sends.items()))}." + FIX
    )
    kinds = {method: kind for method, (_, kind) in by_method.items()}
    assert editor_methods() == kinds, (
        "editor.py's Editor protocol differs from the declaration (one-way methods"
        f" return None, answered ones a Future): {editor_methods()} != {kinds}." + FIX
    )
    assert early_sends() <= want, f"early.py sends undeclared {early_sends() - want}." + FIX


def test_every_answer_names_a_message_of_the_other_direction(
    declared: list[dict[str, Any]],
) -> None:
    for message in declared:
        if "answer" in message:
            other = "lua" if message["to"] == "python" else "python"
            assert (message["answer"], "notify") in declared_surface(declared, other), message


def test_the_helps_list_of_messages_is_the_declared_one(declared: list[dict[str, Any]]) -> None:
    doc = (ROOT / "doc" / "gemini-companion-development.txt").read_text()
    section = doc.split("*gemini-companion-dev-rpc*", 1)[1].split("\n===", 1)[0]
    found: set[tuple[str, str, str]] = set()
    # An entry: its direction and names (maybe on more lines), then its kind.
    entry = r"^(Lua → Python|Python → Lua)  (.*?)\n {14}(one-way|answered)"
    for direction, names, kind in re.findall(entry, section, re.M | re.S):
        to = "python" if direction == "Lua → Python" else "lua"
        for name in re.findall(r"`(\w+)`", names):
            found.add((name, to, "request" if kind == "answered" else "notify"))
    want = {(m["name"], m["to"], m["kind"]) for m in declared}
    assert found == want, (
        f"doc/gemini-companion-development.txt's list of messages has {sorted(found - want)}"
        f" not so declared and misses {sorted(want - found)} (lua/gemini_companion/rpc.lua)"
    )


def test_a_message_the_lua_side_does_not_know_is_an_error_naming_it(
    nvim_factory: Callable[..., Nvim],
) -> None:
    nvim = nvim_factory(setup={"auto_start": False})
    ok, err = nvim.lua(
        "return { pcall(require('gemini_companion.host')._receive, 'no_such_message') }"
    )
    assert ok is False
    assert "unknown message from the Python side: no_such_message" in err
