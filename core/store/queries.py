"""Named SQL blocks, read once from a package's ``sql/`` folder.

A block starts with a ``-- name --`` line. The store keeps one file per concern:
``sql/common/<concern>.sql`` holds the blocks both backends run word for word, and
``sql/<backend>/<concern>.sql`` the blocks each backend writes its own way. A source keeps one
file per backend in its own package (``zombietop.sources``: ``sql/airflow_sqlite.sql``) and
reads it with the same loader.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

_NAME = re.compile(r"^-- ([a-z0-9_]+) --$", re.MULTILINE)

COMMON = "common"
"""The folder of the blocks every backend shares."""

MIGRATION = "schema_v"
"""The name of a migration block, before its number: ``schema_v1``, ``schema_v2``..."""


def files(backend: str, package: str = "zombietop.store") -> list[Traversable]:
    """The ``.sql`` files that make up ``backend``'s blocks in ``package``: the one file
    ``sql/<backend>.sql``, or else every file of ``sql/common/`` and ``sql/<backend>/``."""
    sql = resources.files(package).joinpath("sql")
    single = sql.joinpath(f"{backend}.sql")
    if single.is_file():
        return [single]
    if not sql.joinpath(backend).is_dir():
        raise RuntimeError(f"no SQL for backend {backend!r} in {sql}")
    found: list[Traversable] = []
    for folder in (COMMON, backend):
        where = sql.joinpath(folder)
        if where.is_dir():
            found += sorted(
                (each for each in where.iterdir() if each.name.endswith(".sql")),
                key=lambda each: each.name,
            )
    return found


def blocks_of(text: str) -> list[tuple[str, str]]:
    """The ``(name, sql)`` blocks of one file's text, in order (a name may repeat here)."""
    pieces = _NAME.split(text)
    # pieces = [preamble, name1, body1, name2, body2, ...]
    return [(name, body.strip()) for name, body in zip(pieces[1::2], pieces[2::2], strict=True)]


@cache
def load(backend: str, package: str = "zombietop.store") -> dict[str, str]:
    """Return ``{name: sql}`` of every block ``backend`` runs in ``package``; a name defined
    twice (in one file, or in two) is an error, so no block silently hides another."""
    blocks: dict[str, str] = {}
    where: dict[str, str] = {}
    for file in files(backend, package):
        found = blocks_of(file.read_text(encoding="utf-8"))
        if not found:
            raise RuntimeError(f"{file} holds no named blocks")
        for name, sql in found:
            if name in blocks:
                raise RuntimeError(
                    f"SQL block {name!r} is defined twice, in {where[name]} and in {file}"
                )
            blocks[name], where[name] = sql, str(file)
    return blocks


def migrations(blocks: dict[str, str]) -> tuple[str, ...]:
    """Return the migration blocks of ``blocks`` in order, so that adding a migration is adding
    its block. Their names must run from ``schema_v1`` up without a gap: a missing number would
    leave a store at a version it never reached."""
    names = [name for name in blocks if name.startswith(MIGRATION)]
    expected = [f"{MIGRATION}{number}" for number in range(1, len(names) + 1)]
    if sorted(names) != sorted(expected):
        raise RuntimeError(
            f"the migration blocks must be named {MIGRATION}1 to {MIGRATION}{len(names)}, "
            f"one each, without a gap; found {', '.join(sorted(names))}"
        )
    return tuple(blocks[name] for name in expected)
