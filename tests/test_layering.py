"""The Python package stays a ladder (style.md, "Growing the house"): no import
cycle, between modules or between the packages they sit in; nothing imports back
up into the entry point or the companion; and the ground-floor modules import
nothing of the package.

Every import counts, wherever it is written: at the top, inside a function, or
under ``if TYPE_CHECKING:``. A type-only import is still an arrow between two
modules (the reader follows it, and it becomes a run-time import the day the type
is needed at run time), so a back-arrow for types is a back-arrow."""

from __future__ import annotations

import ast
from pathlib import Path

from harness import ROOT

PACKAGE = ROOT / "rplugin" / "python3" / "gemini_companion"
GROUND = {"editor", "text", "discovery", "security", "logfile", "pythonpath", "paths"}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str], root: Path = PACKAGE) -> set[str]:
    """The package's modules that ``path`` (in package ``root``) imports, anywhere in it."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rsplit(".", 1)[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            submodules = {f"{target}.{a.name}" for a in node.names} & modules
            found.update(submodules)
            # ``from . import sessions`` imports the submodule, not the package's own
            # code: the package counts only for a name it defines itself.
            if len(submodules) < len(node.names) and target in modules:
                found.add(target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
    return found - {name}


def graph() -> dict[str, set[str]]:
    paths = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def cycles_of(edges: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def walk(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            walk(node, [])
    return cycles


def test_imports_under_type_checking_are_arrows_too_and_a_submodule_is_not_its_package(
    tmp_path: Path,
) -> None:
    source = tmp_path / "gemini_companion" / "low.py"
    source.parent.mkdir()
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .high import High\n"
        "def f() -> None:\n"
        "    from . import late\n"
    )
    modules = {
        "gemini_companion",
        "gemini_companion.low",
        "gemini_companion.high",
        "gemini_companion.late",
    }
    found = imports_of(source, modules, source.parent)
    assert found == {"gemini_companion.high", "gemini_companion.late"}


def test_the_package_has_no_import_cycle() -> None:
    assert cycles_of(graph()) == []


def test_no_package_and_its_neighbours_import_each_other() -> None:
    """Within each package, its children (modules, and sub-packages taken whole)
    form a ladder too: ``tools/ide.py`` importing ``diff`` while ``diff`` imports
    ``tools`` is a cycle between ``tools`` and ``diff``, though no two modules
    import each other."""
    edges = graph()
    packages = {m for m in edges if any(o.startswith(m + ".") for o in edges)}
    found: dict[str, list[list[str]]] = {}
    for package in sorted(packages):

        def child(module: str, package: str = package) -> str | None:
            if not module.startswith(package + "."):
                return None
            return package + "." + module[len(package) + 1 :].split(".", maxsplit=1)[0]

        children: dict[str, set[str]] = {}
        for module, deps in edges.items():
            a = child(module)
            if a is None:
                continue
            for dep in deps:
                b = child(dep)
                if b is not None and b != a:
                    children.setdefault(a, set()).add(b)
        if cycles := cycles_of(children):
            found[package] = cycles
    assert found == {}


def test_nothing_imports_back_up_and_the_ground_floor_imports_nothing() -> None:
    edges = graph()
    assert len(edges) > 15
    for name, deps in edges.items():
        assert "gemini_companion" not in deps, f"{name} imports the pynvim entry point"
        if name != "gemini_companion":
            assert "gemini_companion.companion" not in deps, f"{name} imports the companion"
        if name.rsplit(".", 1)[-1] in GROUND and name.count(".") == 1:
            assert deps == set(), f"{name} is ground floor but imports {sorted(deps)}"


# -- Module size ---------------------------------------------------------------------------

LIMIT = 400  # lines, for every module: no waiver (issue 30 item 6)


def over_limit(sources: list[Path], root: Path = ROOT) -> dict[str, int]:
    """The modules among ``sources`` longer than ``LIMIT`` lines, with their lengths."""
    return {
        str(p.relative_to(root)): n
        for p in sources
        if (n := len(p.read_text().splitlines())) > LIMIT
    }


def test_a_module_over_the_limit_counts_even_when_it_says_why(tmp_path: Path) -> None:
    """The limit is ``LIMIT`` lines inclusive, and a header saying why a module is
    long ("long because ...") no longer lets it pass."""
    for name, lines in (("at.py", LIMIT), ("over.py", LIMIT + 1), ("over.lua", LIMIT + 1)):
        head = '"""Long because it says so."""' if name.endswith(".py") else "-- Long because."
        (tmp_path / name).write_text("\n".join([head, *["x = 1"] * (lines - 1)]) + "\n")
    found = over_limit(sorted(tmp_path.iterdir()), tmp_path)
    assert found == {"over.lua": LIMIT + 1, "over.py": LIMIT + 1}


def test_no_module_is_over_400_lines() -> None:
    """A long module is a sign of more than one job: every Python and Lua module of
    the plugin (under lua/, plugin/ and rplugin/) is at most ``LIMIT`` lines, whatever
    its top says. Split one that grows past it by job."""
    sources = [
        *(ROOT / "lua").rglob("*.lua"),
        *(ROOT / "plugin").rglob("*.lua"),
        *(ROOT / "rplugin").rglob("*.py"),
    ]
    assert len(sources) > 50
    long = over_limit(sources)
    assert long == {}, f"over {LIMIT} lines: {long}. Split each module by job."


# -- The transports are built of parts, not ladders ----------------------------------------

TRANSPORT_PACKAGES = ("agent/acp", "agent/a2a")


def project_classes() -> dict[str, set[str]]:
    """Each class name the package defines -> the modules (paths) defining it."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_no_transport_class_derives_from_another_class_of_the_plugin() -> None:
    """The ACP and A2A transports are built of small parts, each with its own narrow
    interface, not ladders of classes sharing their state through ``self`` (issue 30
    item 6): no class in ``agent/acp`` or ``agent/a2a`` extends a class of the
    plugin, but the ``Transport`` contract. Allowed besides: an error extending the
    plugin's errors (``...Error``), and the wire schema's data models (acp/messages.py,
    pydantic) extending each other."""
    classes = project_classes()
    ladders = []
    for package in TRANSPORT_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            module = str(path.relative_to(PACKAGE))
            if module == "agent/acp/messages.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ClassDef):
                    continue
                for base in node.bases:
                    name = (
                        base.id
                        if isinstance(base, ast.Name)
                        else base.attr
                        if isinstance(base, ast.Attribute)
                        else ""
                    )
                    if name not in classes or name == "Transport" or name.endswith("Error"):
                        continue
                    ladders.append(f"{module}: {node.name}({name})")
    assert ladders == [], f"classes extending the plugin's own: {ladders}"
