"""The map of the house is true: docs/modules.md is current, the import graph keeps its floors
and has no circle, every file a page names exists, and a new column is one file, as
docs/architecture.md promises.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import import_graph  # noqa: E402  (scripts/ is no package: its path is added above)
import module_map  # noqa: E402

MAX_FLOORS = 11
"""The import graph's floors, as scripts/import_graph.py counts them: fewer than 12."""

PAGES = sorted(
    [*REPO.glob("*.md"), *(REPO / "docs").rglob("*.md")],
    key=lambda page: page.relative_to(REPO).as_posix(),
)
NAMED_PATH = re.compile(
    r"(?<![\w/.-])((?:core|tui|tests|scripts|docs|bench|screenshots|\.ci)/[\w./-]*[\w/])"
)
"""A path into the repository, as pages write them: ``core/judge/classify.py``, ``docs/``."""


def test_the_module_map_is_current() -> None:
    page = module_map.PAGE.read_text(encoding="utf-8")
    assert page == module_map.render(), "docs/modules.md is stale: python scripts/module_map.py"


def test_every_module_says_what_it_is_for() -> None:
    missing = [
        name
        for name, path in import_graph.module_files().items()
        if module_map.first_line(path) is None
    ]
    assert missing == [], f"modules without a docstring: {missing}"


def test_the_import_graph_keeps_its_floors_and_has_no_circle() -> None:
    found = import_graph.figures()
    assert found["part circles"] == []
    assert found["module circles"] == {
        "every import": [],
        "without typing imports": [],
        "top imports only": [],
    }
    floors = found["floors"]
    assert isinstance(floors, list)
    assert 0 < len(floors) <= MAX_FLOORS, [len(f) for f in floors]


def test_the_graph_finds_a_circle_of_each_kind() -> None:
    """The counts above cannot pass by finding nothing: a circle through a function or a
    type-only import is found, and the floors of a circle are refused."""
    arrows = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
    assert import_graph.circles(arrows) == [["a", "b", "c"]]
    with pytest.raises(ValueError, match="circle"):
        import_graph.floors(arrows)
    assert import_graph.floors([("a", "b"), ("b", "c"), ("a", "c")]) == [["c"], ["b"], ["a"]]
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        import zombietop.clock
        if TYPE_CHECKING:
            from zombietop.model import Task
        def later():
            from zombietop.store import open_store
        """
    )
    reader = import_graph._Reader("zombietop.probe", is_package=False)
    reader.visit(import_graph.ast.parse(source))
    kinds = {name: kind for name, kind, _ in reader.found}
    assert kinds["zombietop.clock"] == "top"
    assert kinds["zombietop.model.Task"] == "typing"
    assert kinds["zombietop.store.open_store"] == "function"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_every_file_a_page_names_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    named = {
        match.group(1).rstrip(".")
        for match in NAMED_PATH.finditer(text)
        # A placeholder (`core/sources/<kind>.py`, `tests/core/test_*.py`) names no one file.
        if text[match.end() : match.end() + 1] not in ("<", "*", "{")
    }
    missing = sorted(path for path in named if not names_a_file(path))
    assert missing == [], f"{page.relative_to(REPO)} names files that do not exist: {missing}"


def names_a_file(path: str) -> bool:
    """Whether ``path`` is a file or folder of the repository, or a name in a module of it
    (``core/http_server.HttpServer``)."""
    if (REPO / path).exists():
        return True
    module, dot, _name = path.rpartition(".")
    return bool(dot) and (REPO / f"{module}.py").is_file()


def test_a_new_column_is_one_file(tmp_path: Path) -> None:
    """The new-column trace of docs/architecture.md, done in a copy: a render function and one
    ``Column`` in ``tui/cells.py`` and nothing else, and the dashboard shows it."""
    package = tmp_path / "zombietop"
    shutil.copytree(REPO / "core", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "tui", package / "tui", ignore=shutil.ignore_patterns("__pycache__"))
    cells = package / "tui" / "cells.py"
    text = cells.read_text(encoding="utf-8")
    last = '    Column(key="attempt", label="TRY", width=3, render=_attempt),\n)'
    assert last in text, "the trace expects TRY to be the last column"
    render = textwrap.dedent(
        """
        def _kind(view: TaskView, now: float, note: RowNote | None) -> Text:
            return Text(f"k:{view.task.step_type or '-'}")


        """
    ).lstrip()
    text = text.replace(
        "COLUMNS: tuple[Column, ...] = (", render + "COLUMNS: tuple[Column, ...] = ("
    )
    text = text.replace(
        last,
        '    Column(key="attempt", label="TRY", width=3, render=_attempt),\n'
        '    Column(key="kind", label="KIND", width=8, render=_kind),\n)',
    )
    cells.write_text(text, encoding="utf-8")
    script = textwrap.dedent(
        """
        import asyncio
        from zombietop.clock import FakeClock
        from zombietop.tui.app import ZombietopApp
        from zombietop.tui.testing import NOW, SampleSource, sample_snapshot

        async def main():
            app = ZombietopApp(SampleSource([sample_snapshot()]), clock=FakeClock(NOW), refresh=2)
            async with app.run_test(size=(220, 48)) as pilot:
                await pilot.app.workers.wait_for_complete()
                await pilot.pause()
                print(app.export_screenshot())

        asyncio.run(main())
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    screen = re.sub(r"<[^>]+>", " ", result.stdout).replace("&#160;", " ")
    assert "KIND" in screen
    assert "k:export" in screen
