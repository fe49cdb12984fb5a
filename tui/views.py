"""Saved views (``[views.NAME]``) as the dashboard reads them: their sort and column names
checked against the table's own, the columns a view shows, and the wall narrowed to a view.

The config checks each view's shape (``zombietop.config.views``); the names of the task
table's columns and sorts live here, with the face, so they are checked here, as the dashboard
loads its config and before any screen opens: a view that names nothing valid is refused then,
not when its key is pressed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from zombietop.config import Config, View
from zombietop.config.values import where
from zombietop.errors import ConfigError
from zombietop.health import Health
from zombietop.judge.job_table import JOB_COLUMNS, JobSort
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.judge.snapshot import is_held
from zombietop.tui.cells import COLUMNS, Column, columns_for_width
from zombietop.tui.task_order import SortMode, matches

RUNS, JOBS = "runs", "jobs"
ALWAYS_SHOWN = {RUNS: "task", JOBS: "job"}
"""The column a view cannot leave out: the one that says which task or job a row is."""


def sorts_of(rows: str) -> list[str]:
    return [str(sort) for sort in (JobSort if rows == JOBS else SortMode)]


def columns_of(rows: str) -> list[str]:
    return list(JOB_COLUMNS) if rows == JOBS else [column.key for column in COLUMNS]


def check_views(config: Config) -> None:
    """Refuse a view whose sort or columns the table does not have, naming the view and key."""
    for view in config.views:
        label = f"{where(config.path)} [views.{view.name}]"
        sorts = sorts_of(view.rows)
        if view.sort is not None and view.sort not in sorts:
            raise ConfigError(
                f"{label}: sort = {view.sort!r} is not an order of the {view.rows} table; give "
                f"one of {', '.join(repr(sort) for sort in sorts)}"
            )
        known = columns_of(view.rows)
        for column in view.columns:
            if column not in known:
                raise ConfigError(
                    f"{label}: columns: {column!r} is not a column of the {view.rows} table; "
                    f"its columns are {', '.join(repr(name) for name in known)}"
                )


def view_named(views: Sequence[View], name: str, path: str) -> View:
    """The view called ``name``, or an error that lists the views there are."""
    for view in views:
        if view.name == name:
            return view
    there = ", ".join(view.name for view in views) or "none"
    raise ConfigError(
        f"--view {name}: no view of that name in {path} (its views: {there}); add "
        f'[views.{name}] with rows = "runs" or "jobs", a filter, a sort and columns'
    )


def shown_keys(view: View | None) -> tuple[str, ...] | None:
    """The column keys ``view`` shows, its always-shown column first among them; None: all."""
    if view is None or not view.columns:
        return None
    keys = list(view.columns)
    always = ALWAYS_SHOWN[view.rows]
    if always not in keys:
        keys.insert(0, always)
    return tuple(keys)


def run_columns(width: int, view: View | None) -> tuple[Column, ...]:
    """The task table's columns for ``width`` cells: a view's own, in the table's order, or
    those that fit (``columns_for_width``)."""
    keys = shown_keys(view)
    fitted = columns_for_width(width)
    if keys is None:
        return fitted
    wide = {column.key: column for column in fitted}
    return tuple(wide.get(column.key, column) for column in COLUMNS if column.key in keys)


def in_view(view: TaskView, text: str, rows: str) -> bool:
    """Whether a task belongs on a wall narrowed to a view's filter: by its task id, stage or
    health, and for a view of jobs by its job's name."""
    if rows == JOBS:
        return text.casefold() in view.task.job_name.casefold()
    return matches(view, text)


def narrowed(snapshot: Snapshot, view: View | None) -> Snapshot:
    """``snapshot`` with only the tasks ``view``'s filter keeps, counted again (the wall)."""
    if view is None or not view.filter or snapshot.taken_at is None:
        return snapshot
    kept = tuple(task for task in snapshot.tasks if in_view(task, view.filter, view.rows))
    counts = dict.fromkeys(Health, 0)
    counts.update(Counter(task.health for task in kept))
    return replace(
        snapshot,
        tasks=kept,
        counts=counts,
        quarantined=sum(map(is_held, kept)),
    )
