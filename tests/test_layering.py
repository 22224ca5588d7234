"""The Python package stays a ladder (style.md, "Growing the house"): no import
cycle, nothing imports back up into the entry point or the companion, and the
ground-floor modules import nothing of the package. Imports under
``if TYPE_CHECKING:`` are for the type checker only and are left out."""

from __future__ import annotations

import ast
from pathlib import Path

from harness import ROOT

PACKAGE = ROOT / "rplugin" / "python3" / "gemini_companion"
GROUND = {"editor", "text", "discovery", "security", "logfile", "pythonpath"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.If)
                and isinstance(child.test, ast.Name)
                and child.test.id == "TYPE_CHECKING"
            ):
                continue
            if isinstance(child, ast.ImportFrom) and child.level:
                base = package
                for _ in range(child.level - 1):
                    base = base.rsplit(".", 1)[0]
                target = f"{base}.{child.module}" if child.module else base
                found.update(
                    m
                    for m in (target, *(f"{target}.{a.name}" for a in child.names))
                    if m in modules
                )
            visit(child)

    visit(ast.parse(path.read_text()))
    return found - {name}


def graph() -> dict[str, set[str]]:
    paths = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def test_the_package_has_no_import_cycle() -> None:
    edges = graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def walk(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            walk(node, [])
    assert cycles == []


def test_nothing_imports_back_up_and_the_ground_floor_imports_nothing() -> None:
    edges = graph()
    assert len(edges) > 15
    for name, deps in edges.items():
        assert "gemini_companion" not in deps, f"{name} imports the pynvim entry point"
        if name != "gemini_companion":
            assert "gemini_companion.companion" not in deps, f"{name} imports the companion"
        if name.rsplit(".", 1)[-1] in GROUND and name.count(".") == 1:
            assert deps == set(), f"{name} is ground floor but imports {sorted(deps)}"
