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


def in_snapshot_order(sort: SortMode, filter_text: str) -> bool:
    """True when ``ordered`` is the snapshot's own tuple: nothing to filter or sort."""
    return not filter_text and sort is SortMode.URGENCY


def ordered(snapshot: Snapshot, sort: SortMode, filter_text: str) -> tuple[TaskView, ...]:
    """The snapshot's tasks that match the filter, in ``sort`` order (stable: ties by urgency).

    Unfiltered in urgency order, that is the snapshot's own tuple: the table tells its views
    apart from the ones it shows by identity, and a copy would cost a pass over every view.
    """
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
