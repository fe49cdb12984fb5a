"""Draw zombietop's import graph from its source and count what a newcomer would climb.

    python scripts/import_graph.py            the counts, a line each
    python scripts/import_graph.py --floors   the parts of zombietop on each floor, bottom first
    python scripts/import_graph.py --json     the counts and the floors, for a test or a diff

The graph is read from the code as installed (``core/`` is ``zombietop``, ``tui/`` is
``zombietop.tui``), without importing it. An arrow is one module importing another, of one of
three kinds:

- ``top``: at a module's top, run when the module loads;
- ``function``: inside a function, run when it is called;
- ``typing``: under ``if TYPE_CHECKING:``, never run, only read by mypy.

A **part** is what sits directly in ``zombietop``: a wing (``zombietop.judge``), a package
(``zombietop.store``), the face (``zombietop.tui``) or one module of the vocabulary
(``zombietop.model``). The **floors** are the layers of the parts' graph: the parts that import
no other part are the ground floor, and each other part stands one floor above the highest
part it imports. A **circle** is a set of modules (or parts) that import each other round; it
is counted three times: over every arrow, without the typing arrows, and over the top arrows
only. The house keeps fewer than 12 floors and no circle of any kind (tests/test_architecture.py).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"zombietop": ROOT / "core", "zombietop.tui": ROOT / "tui"}
"""Each import name's folder, as setup.py maps them."""

KINDS = ("top", "function", "typing")


@dataclass(frozen=True, slots=True)
class Arrow:
    """One module importing another."""

    importer: str
    imported: str
    kind: str
    line: int


def module_files() -> dict[str, Path]:
    """Every module of zombietop by its import name (a package by its ``__init__.py``)."""
    found: dict[str, Path] = {}
    for name, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            dotted = ".".join((name, *parts))
            # tui/__init__.py is zombietop.tui, not a module of core/.
            found.setdefault(dotted, path)
    return found


class _Reader(ast.NodeVisitor):
    """Collects the imports of one module with where each sits."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[tuple[str, str, int]] = []
        self._kind = ["top"]

    def _visit_inside(self, node: ast.AST, kind: str) -> None:
        self._kind.append(kind)
        self.generic_visit(node)
        self._kind.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._visit_inside(node, self._inner("function"))

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._visit_inside(node, self._inner("function"))

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        if name != "TYPE_CHECKING":
            self.generic_visit(node)
            return
        self._kind.append("typing")
        for child in node.body:
            self.visit(child)
        self._kind.pop()
        for child in node.orelse:
            self.visit(child)

    def _inner(self, kind: str) -> str:
        # An import under TYPE_CHECKING stays typing, wherever it sits.
        return "typing" if self._kind[-1] == "typing" else kind

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, self._kind[-1], node.lineno))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            anchor = self.package.split(".")
            anchor = anchor[: len(anchor) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            # The longest known prefix of this wins: the submodule when the name is one.
            self.found.append((f"{base}.{alias.name}", self._kind[-1], node.lineno))


def _resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    """The zombietop module a dotted name lands in: the longest known prefix."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


@cache
def arrows() -> tuple[Arrow, ...]:
    """Every import of one zombietop module by another, once per kind."""
    modules = module_files()
    seen: dict[tuple[str, str, str], Arrow] = {}
    for module, path in modules.items():
        reader = _Reader(module, path.name == "__init__.py")
        reader.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for name, kind, line in reader.found:
            target = _resolve(name, modules)
            if target is None or target == module:
                continue
            seen.setdefault((module, target, kind), Arrow(module, target, kind, line))
    return tuple(seen.values())


def part_of(module: str) -> str:
    """The part of zombietop a module belongs to: what sits directly in ``zombietop``."""
    return ".".join(module.split(".")[:2])


def _graph(pairs: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for importer, imported in pairs:
        graph.setdefault(importer, set()).add(imported)
        graph.setdefault(imported, set())
    return graph


def _strong_components(graph: Mapping[str, set[str]]) -> Iterator[list[str]]:
    """Tarjan's strongly connected components, without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                yield sorted(component)


def circles(pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The sets of nodes that import each other round, largest first."""
    found = [c for c in _strong_components(_graph(pairs)) if len(c) > 1]
    return sorted(found, key=lambda c: (-len(c), c))


def floors(pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The layers of an acyclic graph, ground floor first: a node stands one floor above the
    highest node it imports."""
    graph = _graph(pairs)
    height: dict[str, int] = {}
    for root in sorted(graph):
        work = [(root, iter(sorted(graph[root])))]
        climbing = {root}
        while work:
            node, children = work[-1]
            child = next((c for c in children if c not in height), None)
            if child is not None:
                if child in climbing:
                    raise ValueError(f"the graph has a circle through {child}")
                climbing.add(child)
                work.append((child, iter(sorted(graph[child]))))
                continue
            work.pop()
            climbing.discard(node)
            height[node] = 1 + max((height[c] for c in graph[node]), default=-1)
    levels: list[list[str]] = [[] for _ in range(1 + max(height.values(), default=-1))]
    for node, level in height.items():
        levels[level].append(node)
    return [sorted(level) for level in levels]


def figures() -> dict[str, object]:
    """The counts the house is held to, and the floors themselves."""
    every = arrows()
    kinds = {
        "every import": KINDS,
        "without typing imports": ("top", "function"),
        "top imports only": ("top",),
    }
    modules = module_files()
    parts = sorted({part_of(m) for m in modules} - {"zombietop"})
    part_pairs = {
        (part_of(a.importer), part_of(a.imported))
        for a in every
        if part_of(a.importer) != part_of(a.imported)
        and "zombietop" not in (part_of(a.importer), part_of(a.imported))
    }
    module_circles = {
        label: circles((a.importer, a.imported) for a in every if a.kind in chosen)
        for label, chosen in kinds.items()
    }
    part_circles = circles(part_pairs)
    return {
        "modules": len(modules),
        "parts": len(parts),
        "arrows": len({(a.importer, a.imported) for a in every}),
        "arrows by kind": {kind: sum(a.kind == kind for a in every) for kind in KINDS},
        "module circles": module_circles,
        "part circles": part_circles,
        "floors": [] if part_circles else floors(part_pairs),
    }


def _short(name: str) -> str:
    return name.removeprefix("zombietop.")


def print_counts(found: Mapping[str, object]) -> None:
    floors_found = found["floors"]
    assert isinstance(floors_found, list)
    by_kind = found["arrows by kind"]
    assert isinstance(by_kind, dict)
    print(f"modules: {found['modules']} (parts directly in zombietop: {found['parts']})")
    print(f"import arrows: {found['arrows']} ({', '.join(f'{k} {n}' for k, n in by_kind.items())})")
    part_circles = found["part circles"]
    assert isinstance(part_circles, list)
    print(f"floors of the parts: {len(floors_found) if floors_found else 'none (circles)'}")
    print(f"circles among the parts: {len(part_circles)}")
    for circle in part_circles:
        print("    " + " <-> ".join(_short(n) for n in circle))
    module_circles = found["module circles"]
    assert isinstance(module_circles, dict)
    for label, found_circles in module_circles.items():
        print(f"circles among the modules, {label}: {len(found_circles)}")
        for circle in found_circles:
            print(f"    {len(circle)} modules: " + ", ".join(_short(n) for n in circle))


def print_floors(found: Mapping[str, object]) -> None:
    levels = found["floors"]
    assert isinstance(levels, list)
    for number, level in reversed(list(enumerate(levels))):
        print(f"{number:>2}  " + " ".join(_short(n) for n in level))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--floors", action="store_true", help="print each floor's parts")
    shown.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    found = figures()
    if args.json:
        json.dump(found, sys.stdout, indent=2)
        print()
    elif args.floors:
        print_floors(found)
    else:
        print_counts(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
