"""Read ``[views.NAME]``: the dashboard's saved views, each a filter, a sort, its rows (runs or
jobs) and its columns.

This module checks the shape of each view: its keys, their types and ``rows``. Which sort and
column names exist is the dashboard's to say (its columns live with the face), and it checks
them as it loads the config, before any screen opens (``zombietop.tui.views``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zombietop.config.settings import VIEW_ROWS, View
from zombietop.config.values import unknown_key, where
from zombietop.errors import ConfigError

VIEW_KEYS = ["rows", "filter", "sort", "columns"]


def read_views(path: Path | None, table: Mapping[str, Any]) -> tuple[View, ...]:
    """``[views.NAME]``: each view, in the file's order."""
    return tuple(_view(path, name, entry) for name, entry in table.items())


def _view(path: Path | None, name: str, table: Any) -> View:
    section = f"views.{name}"
    label = f"{where(path)} [{section}]"
    if not isinstance(table, Mapping):
        raise ConfigError(
            f'{where(path)}: [{section}] must be a table, e.g. rows = "jobs" and filter = "..."'
        )
    if not name.strip() or not name.isprintable():
        raise ConfigError(f"{where(path)}: [views.{name!r}]: a view's name must be printable text")
    for key in table:
        if key not in VIEW_KEYS:
            raise unknown_key(path, section, key, VIEW_KEYS)
    rows = table.get("rows", "runs")
    if rows not in VIEW_ROWS:
        raise ConfigError(
            f'{label}: rows = {rows!r}: give "runs" (the task table, one row per run) or '
            '"jobs" (one row per job)'
        )
    for key in ("filter", "sort"):
        if key in table and not isinstance(table[key], str):
            raise ConfigError(f"{label}: {key} must be a string, not {table[key]!r}")
    columns = table.get("columns", [])
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ConfigError(
            f'{label}: columns must be a list of column names, e.g. columns = ["health", '
            f'"task", "stage"], not {columns!r}'
        )
    if len(set(columns)) != len(columns):
        twice = sorted({c for c in columns if columns.count(c) > 1})
        raise ConfigError(f"{label}: columns names {', '.join(twice)} more than once")
    return View(
        name=name,
        rows=rows,
        filter=table.get("filter", "").strip(),
        sort=table.get("sort"),
        columns=tuple(columns),
    )
