"""Which tasks the dashboard shows, in which order: filter and sort, as pure functions."""

from __future__ import annotations

from enum import StrEnum
from math import inf

from zombietop.monitor import Snapshot, TaskView


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
    in ``views``), else its latest run. ``views`` itself when no job has two runs in it."""
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


def ordered(
    snapshot: Snapshot, sort: SortMode, filter_text: str, per_run: bool = True
) -> tuple[TaskView, ...]:
    """The snapshot's tasks that match the filter, in ``sort`` order (stable: ties by urgency),
    one row per run or (``per_run`` False) one row per job.

    Unfiltered in urgency order, that is the snapshot's own tuple: the table tells its views
    apart from the ones it shows by identity, and a copy would cost a pass over every view.
    """
    if not per_run:
        return one_per_job(ordered(snapshot, sort, filter_text))
    if in_snapshot_order(sort, filter_text):
        return snapshot.tasks
    if filter_text:
        views = [view for view in snapshot.tasks if matches(view, filter_text)]
    else:
        views = list(snapshot.tasks)
    if sort is SortMode.HEARTBEAT:
        # Longest silent first: the oldest heartbeat, then tasks that never beat.
        views.sort(key=lambda v: inf if v.verdict.heartbeat_at is None else v.verdict.heartbeat_at)
    elif sort is SortMode.PROGRESS:
        views.sort(
            key=lambda v: (
                v.heartbeat.progress
                if v.heartbeat is not None and v.heartbeat.progress is not None
                else 101.0
            )
        )
    elif sort is SortMode.TASK:
        views.sort(key=lambda v: v.task_id)
    return tuple(views)
