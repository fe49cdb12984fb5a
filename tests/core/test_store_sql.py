"""The store's named SQL blocks: every block the code runs exists for each backend that runs it,
and no block is defined twice (in common/ and a backend's folder, or twice in one file)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from zombietop.store import queries
from zombietop.store.retention import PRUNED_WITH_A_SOURCE_TASK, PRUNED_WITH_A_TASK

STORE = Path(queries.__file__).parent
BACKENDS = ("sqlite", "postgresql")
ADAPTER = {"_run", "_row", "_rows", "_run_many", "_run_bulk", "_insert"}
"""The adapter methods that run a block by name (``SQLBase``); the name is the second argument."""
BULK = "_run_bulk"
"""Runs block NAME on SQLite, and NAME_bulk (one statement over arrays) on PostgreSQL."""
TABLES = {"Q", "QUERIES", "SQL", "_SQL"}
"""The backends' own tables of blocks, read by subscript."""
BACKEND_MODULES = {"sqlite.py": ("sqlite",), "postgres.py": ("postgresql",)}
"""A module here runs its blocks on its own backend; every other module runs them on both."""
NOT_BLOCKS = {"sqlite_inline.py"}
"""Modules whose adapter-named methods run SQL text, not named blocks."""
ONE_BACKEND = {"select_tasks_changed": ("sqlite",)}
"""Blocks a shared module runs only on some backends: the poll reads the tasks changed since a
revision only from a backend that has revisions (``SQLBase._revision``; SQLite's)."""


def used_blocks() -> dict[str, set[str]]:
    """``{name: backends}`` of every block named in the store's code, read from its source."""
    used: dict[str, set[str]] = {}
    for path in sorted(STORE.glob("*.py")):
        if path.name in NOT_BLOCKS:
            continue
        backends = BACKEND_MODULES.get(path.name, BACKENDS)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for name in _block_names(node, path):
                if _calls(node, BULK):
                    used.setdefault(name, set()).add("sqlite")
                    used.setdefault(f"{name}_bulk", set()).add("postgresql")
                    continue
                used.setdefault(name, set()).update(ONE_BACKEND.get(name, backends))
    for name in (*PRUNED_WITH_A_TASK, *PRUNED_WITH_A_SOURCE_TASK):  # run in loops, by a variable
        used.setdefault(name, set()).update(BACKENDS)
    return used


def _calls(node: ast.AST, method: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
    )


def _block_names(node: ast.AST, path: Path) -> list[str]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        called_on = node.func.value
        if not (isinstance(called_on, ast.Name) and called_on.id == "self"):
            return []
        if node.func.attr not in ADAPTER or len(node.args) < 2:
            return []
        return _named(node.args[1], path, node.lineno)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        if node.value.id in TABLES and isinstance(node.slice, ast.Constant):
            value = node.slice.value
            return [value] if isinstance(value, str) else []
    return []


def _named(arg: ast.expr, path: Path, line: int) -> list[str]:
    """The block names an argument can be: a string, or either string of ``a if c else b``."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.IfExp):
        return _named(arg.body, path, line) + _named(arg.orelse, path, line)
    # A block named by a variable is either the adapter passing its own argument on, or
    # the prune loops (PRUNED_WITH_A_TASK, PRUNED_WITH_A_SOURCE_TASK, counted above); anything
    # else this test can't see.
    assert isinstance(arg, ast.Name) and arg.id == "name", (
        f"{path.name}:{line} runs a block named by an expression this test cannot "
        "read; name it with a string, or teach this test the new form"
    )
    return []


def defined_blocks(backend: str) -> list[tuple[str, str]]:
    """``(name, file)`` of every block ``backend`` loads, duplicates kept."""
    return [
        (name, f"{_folder(file)}/{file.name}")
        for file in queries.files(backend)
        for name, _ in queries.blocks_of(file.read_text(encoding="utf-8"))
    ]


def test_the_code_names_blocks() -> None:
    """The scan finds the blocks the code runs (if it found none, the tests below prove
    nothing)."""
    used = used_blocks()
    assert {"select_tasks_for_poll", "insert_event", "lock_task", "select_revision"} <= set(used)
    assert len(used) > 80


@pytest.mark.parametrize("dialect", BACKENDS)
def test_every_block_the_code_runs_exists(dialect: str) -> None:
    loaded = queries.load(dialect)
    missing = sorted(name for name, on in used_blocks().items() if dialect in on)
    missing = [name for name in missing if name not in loaded]
    assert not missing, f"no {dialect} SQL for {missing}"


@pytest.mark.parametrize("dialect", BACKENDS)
def test_every_block_is_run_by_the_code(dialect: str) -> None:
    """A block no code runs is dead SQL (the schema's blocks are run by number)."""
    used = used_blocks()
    unused = sorted(
        name
        for name in queries.load(dialect)
        if dialect not in used.get(name, ()) and not name.startswith(queries.MIGRATION)
    )
    assert not unused, f"{dialect} blocks nothing runs: {unused}"


@pytest.mark.parametrize("dialect", BACKENDS)
def test_no_block_is_defined_twice(dialect: str) -> None:
    found = defined_blocks(dialect)
    twice = {name: n for name, n in Counter(name for name, _ in found).items() if n > 1}
    where = {name: [file for each, file in found if each == name] for name in twice}
    assert not twice, f"{dialect} blocks defined more than once: {where}"


def test_a_block_both_backends_write_alike_is_in_common() -> None:
    """Two copies of one text drift apart: a block the same on both backends lives once."""
    sqlite, postgresql = (
        dict(
            block
            for file in queries.files(backend)
            if _folder(file) == backend
            for block in queries.blocks_of(file.read_text(encoding="utf-8"))
        )
        for backend in BACKENDS
    )
    same = sorted(name for name, sql in sqlite.items() if postgresql.get(name) == sql)
    assert not same, f"move these blocks to sql/common/: {same}"


def test_each_concern_file_has_its_python_module() -> None:
    """One store feature, one Python place and one SQL place: ``sql/*/<concern>.sql`` is run
    by ``<concern>.py`` (migrations and backend plumbing by the backend modules)."""
    sql = resources.files("zombietop.store").joinpath("sql")
    concerns = {
        Path(file.name).stem
        for folder in ("common", *BACKENDS)
        for file in sql.joinpath(folder).iterdir()
        if file.name.endswith(".sql")
    }
    orphans = sorted(
        c for c in concerns - {"migrations", "backend"} if not (STORE / f"{c}.py").exists()
    )
    assert not orphans, f"SQL files without a module of that name in core/store/: {orphans}"


def test_a_source_still_loads_its_own_file() -> None:
    """Sources keep one file a backend in their own package (``sql/airflow_sqlite.sql``)."""
    for backend in BACKENDS:
        assert queries.load(f"airflow_{backend}", package="zombietop.sources")


def test_a_backend_without_sql_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no SQL for backend 'mysql'"):
        queries.files("mysql")


@pytest.mark.parametrize("dialect", BACKENDS)
def test_the_schema_version_is_the_count_of_migration_blocks(dialect: str) -> None:
    """Adding a migration is adding its block: the store's version follows the file."""
    from zombietop.store import postgres, sqlite

    text = resources.files("zombietop.store").joinpath("sql", dialect, "migrations.sql")
    headers = re.findall(r"^-- schema_v\d+ --$", text.read_text(), re.MULTILINE)
    store = {"sqlite": sqlite, "postgresql": postgres}[dialect]
    assert store.SCHEMA_VERSION == len(store.MIGRATIONS) == len(headers)
    assert store.MIGRATIONS[-1] == queries.load(dialect)[f"schema_v{len(headers)}"]


def test_migrations_are_taken_in_number_order() -> None:
    blocks = {"schema_v2": "two", "select_x": "x", "schema_v10": "ten", "schema_v1": "one"}
    blocks |= {f"schema_v{n}": str(n) for n in range(3, 10)}
    assert queries.migrations(blocks) == ("one", "two", *map(str, range(3, 10)), "ten")


def test_a_gap_in_the_migrations_is_an_error() -> None:
    blocks = {"schema_v1": "one", "schema_v3": "three"}
    with pytest.raises(RuntimeError, match="schema_v1 to schema_v2, one each, without a gap"):
        queries.migrations(blocks)


def _folder(file: object) -> str:
    return Path(str(file)).parent.name
