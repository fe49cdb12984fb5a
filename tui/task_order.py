"""Which tasks the dashboard shows, in which order: filter and sort, as pure functions."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from math import inf
from typing import Any, Generic, TypeVar

from zombietop.judge.monitor import Snapshot, TaskView

T = TypeVar("T")


class SortMode(StrEnum):
    """The orders ``s`` cycles through; urgency is DESIGN.md's order."""

    URGENCY = "urgency"
    HEARTBEAT = "oldest heartbeat"
    PROGRESS = "least progress"
    TASK = "task id"

    def next(self) -> SortMode:
        members = list(SortMode)
        return members[(members.index(self) + 1) % len(members)]


def matches(view: TaskView, text: str) -> bool:
    """True when ``text`` is in the task id, the stage or the health word (any case)."""
    if not text:
        return True
    needle = text.casefold()
    stage = view.heartbeat.stage if view.heartbeat is not None else None
    return (
        needle in view.task_id.casefold()
        or (stage is not None and needle in stage.casefold())
        or needle in str(view.health)
    )


def in_snapshot_order(sort: SortMode, filter_text: str, per_run: bool = True) -> bool:
    """True when ``ordered`` is the snapshot's own tuple: one row per run, nothing to filter or
    sort."""
    return per_run and not filter_text and sort is SortMode.URGENCY


def one_per_job(views: tuple[TaskView, ...]) -> tuple[TaskView, ...]:
    """One row per job, where its chosen run stands: its most urgent unfinished run (the first
    in ``views``, which are in urgency order), else its latest run. ``views`` itself when no
    job has two runs in it."""
    chosen: dict[str, TaskView] = {}
    grouped = False
    for view in views:
        name = view.task.job_name
        best = chosen.get(name)
        if best is None:
            chosen[name] = view
            continue
        grouped = True
        if best.task.state.finished and (not view.task.state.finished or _later(view, best)):
            chosen[name] = view
    if not grouped:
        return views
    keep = {id(view) for view in chosen.values()}
    return tuple(view for view in views if id(view) in keep)


def _later(view: TaskView, than: TaskView) -> bool:
    return (view.task.finished_at or 0.0, view.task.run_number or 0) > (
        than.task.finished_at or 0.0,
        than.task.run_number or 0,
    )


class PerSnapshot(Generic[T]):
    """``derive`` of the last tuple of views it was given, kept while it is given that tuple
    again: at 100,000 tasks a pass over every view costs tens of milliseconds, and a key that
    changes the order or a redraw would pay it again for the same snapshot."""

    def __init__(self, derive: Callable[[tuple[TaskView, ...]], T]) -> None:
        self._derive = derive
        self._kept: tuple[tuple[TaskView, ...], T] | None = None

    def __call__(self, views: tuple[TaskView, ...]) -> T:
        kept = self._kept
        if kept is None or kept[0] is not views:
            kept = (views, self._derive(views))
            self._kept = kept  # one assignment: a reader in another thread sees a pair
        return kept[1]


def ordered(
    snapshot: Snapshot,
    sort: SortMode,
    filter_text: str,
    per_run: bool = True,
    job_rows: Callable[[tuple[TaskView, ...]], tuple[TaskView, ...]] = one_per_job,
) -> tuple[TaskView, ...]:
    """The snapshot's tasks that match the filter, one row per run or (``per_run`` False) one
    row per job as ``job_rows`` groups them, in ``sort`` order (stable: ties by urgency).

    A job's row is chosen in urgency order, before the sort, so it stands for the same run
    whichever the order. Unfiltered in urgency order, one row per run is the snapshot's own
    tuple: the table tells its views apart from the ones it shows by identity, and a copy
    would cost a pass over every view.
    """
    if in_snapshot_order(sort, filter_text, per_run):
        return snapshot.tasks
    views = snapshot.tasks
    if filter_text:
        views = tuple(view for view in views if matches(view, filter_text))
    if not per_run:
        views = job_rows(views)
    key = SORT_KEYS.get(sort)
    return views if key is None else tuple(sorted(views, key=key))


def _silent_since(view: TaskView) -> float:
    """Longest silent first: the oldest heartbeat, then tasks that never beat."""
    return inf if view.verdict.heartbeat_at is None else view.verdict.heartbeat_at


def _progress(view: TaskView) -> float:
    """Least progress first, then tasks that never said."""
    heartbeat = view.heartbeat
    return heartbeat.progress if heartbeat is not None and heartbeat.progress is not None else 101.0


SORT_KEYS: dict[SortMode, Callable[[TaskView], Any]] = {
    SortMode.HEARTBEAT: _silent_since,
    SortMode.PROGRESS: _progress,
    SortMode.TASK: lambda view: view.task_id,
}
"""The sort key of each order but urgency, which is the snapshot's own."""
