"""The size of the rooms: each module, class and function stays small enough to read in one sitting.

The limits are the style's (CONTRIBUTING.md#style): a module in core/ or tui/ over 700 lines, a
class over 500 or a function over 80 is a sign that two concepts share a room. When one of these
tests fails, split the room by concern (docs/architecture.md says where things live); do not raise
the limit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOMS = ("core", "tui")

MODULE_LINES = 700
CLASS_LINES = 500
FUNCTION_LINES = 80


def modules() -> Iterator[Path]:
    for folder in ROOMS:
        yield from sorted((REPO / folder).rglob("*.py"))


def length(node: ast.AST) -> int:
    assert isinstance(node, ast.stmt) and node.end_lineno is not None
    return node.end_lineno - node.lineno + 1


def where(path: Path, node: ast.AST | None = None) -> str:
    name = str(path.relative_to(REPO))
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return f"{name}:{node.lineno} {node.name}"
    return name


def too_long(limit: int, kinds: tuple[type[ast.AST], ...]) -> list[str]:
    found = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, kinds) and length(node) > limit:
                found.append(f"{where(path, node)} ({length(node)} lines)")
    return found


def test_the_rooms_are_there() -> None:
    # A test that reads no module would pass whatever the code did.
    assert len(list(modules())) > 50


def test_no_module_is_over_700_lines() -> None:
    over = [
        f"{where(path)} ({lines} lines)"
        for path in modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    ]
    assert not over, "\n".join(over)


def test_no_class_is_over_500_lines() -> None:
    over = too_long(CLASS_LINES, (ast.ClassDef,))
    assert not over, "\n".join(over)


def test_no_function_is_over_80_lines() -> None:
    over = too_long(FUNCTION_LINES, (ast.FunctionDef, ast.AsyncFunctionDef))
    assert not over, "\n".join(over)
