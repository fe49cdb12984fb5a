"""What a poll has already read, so the next one reads only what changed; and the reader of one
joined task row (its columns are in ``columns``)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from zombietop.model import Heartbeat, Lease, PendingKill, PollChanges, Task, TaskRecord
from zombietop.store.columns import HEARTBEAT_COLUMNS, KILL_COLUMNS, LEASE_COLUMNS, TASK_COLUMNS

_T = len(TASK_COLUMNS)
_L = _T + len(LEASE_COLUMNS)
_H = _L + len(HEARTBEAT_COLUMNS)

_TASK_ID_AGAIN = (_T, _L, _H)
"""Where a row holds the task id again: its lease's, its beat's and its kill's (None when the
task has none)."""
_FLEET_WORDS = (
    *[TASK_COLUMNS.index(name) for name in ("run_id", "step", "step_type", "state", "host")],
    *[TASK_COLUMNS.index(name) for name in ("command", "cwd", "job")],
    _T + LEASE_COLUMNS.index("owner"),
    *[_L + HEARTBEAT_COLUMNS.index(name) for name in ("stage", "request_name", "source")],
)
"""Where a row holds words that many tasks of a fleet share: a run, a step, a state, a host,
a command line, a worker, a stage."""


def shared_values(row: Iterable[Any]) -> tuple[Any, ...]:
    """One poll row's values, its repeated strings kept once.

    The database hands over a new string for every value of every row: the task id four times
    a row, and the same host, state or step in thousands of rows. A poll cache holds every
    active task's row, so each of those copies would be held for as long as the task runs.
    """
    values = list(row)
    task_id = values[0]
    for index in _TASK_ID_AGAIN:
        if values[index] is not None:
            values[index] = task_id
    for index in _FLEET_WORDS:
        if values[index] is not None:
            values[index] = sys.intern(values[index])
    return tuple(values)


def task_record(row: Iterable[Any]) -> TaskRecord:
    """The task record of one joined row (``columns.TASK_RECORDS``; a sqlite3.Row or an
    asyncpg Record), split into its parts."""
    return record_from_values(tuple(row))


def record_from_values(
    values: tuple[Any, ...],
    old: tuple[Any, ...] = (),
    kept: TaskRecord | None = None,
) -> TaskRecord:
    """Build a record from one poll row; with the row ``old`` and record ``kept`` read before
    for the same task, the parts whose columns did not change are kept (a beat changes the
    heartbeat and a renewal the lease, not the task), so they stay the same objects."""

    def same(start: int, stop: int | None) -> bool:
        return old[start:stop] == values[start:stop]

    def named(columns: Sequence[str], start: int) -> dict[str, Any]:
        return dict(zip(columns, values[start : start + len(columns)], strict=True))

    task = kept.task if kept and same(0, _T) else Task.from_row(named(TASK_COLUMNS, 0))
    lease = beat = kill = None
    if values[_T] is not None:
        lease = kept.lease if kept and same(_T, _L) else Lease.from_row(named(LEASE_COLUMNS, _T))
    if values[_L] is not None:
        beat = (
            kept.heartbeat
            if kept and same(_L, _H)
            else Heartbeat.from_row(named(HEARTBEAT_COLUMNS, _L))
        )
    if values[_H] is not None:
        kill = (
            kept.pending_kill
            if kept and same(_H, None)
            else PendingKill.from_row(named(KILL_COLUMNS, _H))
        )
    return TaskRecord(task=task, lease=lease, heartbeat=beat, pending_kill=kill)


class PollCache:
    """Poll rows by task id as last read: an unchanged row reuses its records (most rows, most
    polls), so a poll costs what changed rather than what exists.

    With a store revision it also follows the store: after one full read, a poll reads only the
    tasks stamped since (``follow``), and drops the finished ones as they leave the window.
    Either way ``last`` says what the latest poll changed, for readers that keep what they
    built from the one before.
    """

    def __init__(self) -> None:
        self._values: dict[str, tuple[Any, ...]] = {}
        self._records: dict[str, TaskRecord] = {}
        self._finished: dict[str, float] = {}
        """finished_at of the finished tasks held, to drop them as the window moves on."""
        self._revision: tuple[int, int] | None = None
        self._floor: float | None = None
        """The held rows are every active task and every task finished since this."""
        self._polls = 0
        self.last: PollChanges | None = None
        """What the latest poll changed (None before the first, and after one that failed)."""

    @property
    def changes(self) -> int:
        return 0 if self._revision is None else self._revision[0]

    @property
    def floor(self) -> float | None:
        """The held rows are every active task and every task finished since this (None:
        no revision to follow)."""
        return self._floor

    def can_follow(self, revision: tuple[int, int] | None, finished_since: float) -> bool:
        """True when reading the tasks changed since the held revision is enough."""
        return (
            revision is not None
            and self._revision is not None
            and revision[1] == self._revision[1]
            and self._floor is not None
            and finished_since >= self._floor
        )

    def reload(
        self,
        rows: Iterable[Any],
        revision: tuple[int, int] | None = None,
        finished_since: float | None = None,
    ) -> list[TaskRecord]:
        """Take a full read as the whole truth."""
        self.last = None
        values, records = self._values, self._records
        self._values, self._records, self._finished = {}, {}, {}
        for row in rows:
            self._keep(shared_values(row), values, records)
        self._revision = revision
        self._floor = finished_since if revision is not None else None
        self._polls += 1
        # Only a read that the next can follow is worth numbering for readers.
        self.last = None if self._floor is None else PollChanges(poll=self._polls, after=None)
        return list(self._records.values())

    def follow(
        self,
        rows: Iterable[Any],
        revision: tuple[int, int] | None,
        finished_since: float,
    ) -> list[TaskRecord]:
        """Apply the rows of the tasks changed since the held revision, whole, then let the
        window move on."""
        # A follow that fails half-way leaves no changes to trust: the next is against nothing.
        after = None if self.last is None else self.last.poll
        self.last = None
        held, records = self._values, self._records
        read = [self._keep(shared_values(row), held, records) for row in rows]
        dropped = [
            task_id
            for task_id, finished_at in self._finished.items()
            if finished_at < finished_since
        ]
        for task_id in dropped:
            del self._values[task_id], records[task_id], self._finished[task_id]
        self._revision, self._floor = revision, finished_since
        self._polls += 1
        self.last = PollChanges(
            poll=self._polls,
            after=after,
            changed={task_id: records[task_id] for task_id in read if task_id in records},
            dropped=frozenset(dropped),
        )
        return list(records.values())

    def _keep(
        self,
        values: tuple[Any, ...],
        old_values: dict[str, tuple[Any, ...]],
        old_records: dict[str, TaskRecord],
    ) -> str:
        task_id: str = values[0]
        old = old_values.get(task_id)
        if old is None:
            record = record_from_values(values)
        elif old == values:
            record = old_records[task_id]
        else:
            record = record_from_values(values, old, old_records[task_id])
        self._values[task_id] = values
        self._records[task_id] = record
        finished_at = record.task.finished_at
        if finished_at is not None:
            self._finished[task_id] = finished_at
        else:
            self._finished.pop(task_id, None)
        return task_id
