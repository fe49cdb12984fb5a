"""Retention (``[store] keep_finished``): finished tasks are pruned oldest first, and
``status --all`` reads the older ones a page at a time, newest first.

Its SQL is in ``sql/common/retention.sql`` and ``sql/<backend>/retention.sql``.
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass

from zombietop.model import (
    TaskRecord,
    TaskState,
)
from zombietop.store.poll_cache import task_record
from zombietop.store.sql_base import Conn, SQLBase

PRUNED_WITH_A_TASK = (
    "prune_events",
    "prune_heartbeat_history",
    "prune_heartbeats",
    "prune_leases",
    "prune_acks",
    "prune_process_samples",
    "prune_pending_kills",
    "prune_host_requests",
    "prune_tasks",
)
"""What a pruned task takes with it, each a named statement over the batch's ids (the tasks
last, so nothing is left pointing at a task that is gone)."""

PRUNED_WITH_A_SOURCE_TASK = (
    "prune_source_events",
    "prune_source_acks",
    "prune_source_kills",
    "prune_source_host_requests",
)
"""What the store keeps of a read-only source's task, pruned with it."""


DAY_S = 86400.0


def day_start(moment: float) -> float:
    """The start of ``moment``'s UTC day, in seconds since the epoch: where PostgreSQL's event
    log starts a partition. Events before the day of a prune's cutoff are in days the upkeep
    drops whole (``keep_partitions``), so the pass leaves them there; SQLite ignores it."""
    return moment - moment % DAY_S


FinishedKey = tuple[float, str]
"""Where a task stands among the finished ones: ``(finished_at, task_id)``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneBatch:
    """What one prune transaction removed."""

    task_ids: tuple[str, ...]
    """The tasks removed, oldest first, with their events, heartbeats, lease and the rest."""
    last: FinishedKey | None
    """The last task removed: the next batch starts after it (None when nothing was)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRun:
    """What one upkeep of the event log's day partitions did (PostgreSQL; SQLite has none)."""

    made: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    """Days past the cutoff kept because a task the store keeps has events in them."""


class RetentionInterface(abc.ABC):
    """Part of ``Store``, implemented by ``Retention`` below: prune finished tasks, count them, and
    read them page by page."""

    @abc.abstractmethod
    async def prune_finished(
        self, before: float, *, limit: int, after: FinishedKey | None = None
    ) -> PruneBatch:
        """Remove, in one short write transaction, up to ``limit`` tasks finished before
        ``before`` (store time), oldest first after ``after``, with everything kept of them.

        A task something still needs stays: an open incident, an unfinished task that names
        it upstream, an open kill or host request, an ack in force.
        """

    @abc.abstractmethod
    async def prune_source_tasks(
        self, before: float, *, limit: int, after: str = ""
    ) -> tuple[tuple[str, ...], str | None]:
        """In one short write, remove what is kept (events, ended acks, closed kills and host
        requests) of up to ``limit`` source tasks whose newest event is before ``before``, in
        id order after ``after``, that have nothing open (an incident, a hold, a kill, a host
        request, an ack in force). Return the ids removed and the next batch's start, or None."""

    @abc.abstractmethod
    async def keep_partitions(self, before: float) -> PartitionRun:
        """Make the event log's partitions of today and the days ahead, and drop whole each day
        before ``before`` (store time) that holds no event of a task; the pruner calls it after
        a finished pass. A store without partitions does nothing."""

    @abc.abstractmethod
    async def finished_counts(self, before: float) -> dict[TaskState, int]:
        """How many tasks finished before ``before``, by state."""

    @abc.abstractmethod
    async def finished_page(self, after: FinishedKey, *, limit: int) -> list[TaskRecord]:
        """Up to ``limit`` tasks finished before ``after``, newest first: pass the last one's
        ``(finished_at, task_id)`` for the next page, ``(moment, "")`` for the first."""


class Retention(SQLBase[Conn], RetentionInterface):
    """Prune finished tasks, count them, and read them page by page."""

    async def prune_finished(
        self, before: float, *, limit: int, after: FinishedKey | None = None
    ) -> PruneBatch:
        after_at, after_id = after if after is not None else (float("-inf"), "")
        async with self._write() as db:
            now = await self._now_in(db)
            rows = await self._rows(
                db,
                "select_prunable_tasks",
                {
                    "before": before,
                    "after_at": after_at,
                    "after_id": after_id,
                    "now": now,
                    "limit": limit,
                },
            )
            if not rows:
                return PruneBatch(task_ids=(), last=None)
            ids = {"ids": json.dumps([row[0] for row in rows]), "day_floor": day_start(before)}
            for name in PRUNED_WITH_A_TASK:
                await self._run(db, name, ids)
        return PruneBatch(
            task_ids=tuple(row[0] for row in rows), last=(float(rows[-1][1]), rows[-1][0])
        )

    async def prune_source_tasks(
        self, before: float, *, limit: int, after: str = ""
    ) -> tuple[tuple[str, ...], str | None]:
        params = {
            "before": before,
            "after_id": after,
            "limit": limit,
            "day_floor": day_start(before),
        }
        async with self._read() as db:
            found = [
                row[0] for row in await self._rows(db, "select_source_task_candidates", params)
            ]
        if not found:
            return (), None
        async with self._write() as db:
            now = await self._now_in(db)
            checked = {"ids": json.dumps(found), "before": before, "now": now}
            rows = await self._rows(db, "select_prunable_source_tasks", checked)
            removed = tuple(row[0] for row in rows)
            if removed:
                ids = {"ids": json.dumps(list(removed)), "day_floor": day_start(before)}
                for name in PRUNED_WITH_A_SOURCE_TASK:
                    await self._run(db, name, ids)
        return removed, found[-1]

    async def keep_partitions(self, before: float) -> PartitionRun:
        return PartitionRun()

    async def finished_counts(self, before: float) -> dict[TaskState, int]:
        async with self._read() as db:
            rows = await self._rows(db, "count_finished_before", {"before": before})
        return {TaskState(row[0]): int(row[1]) for row in rows}

    async def finished_page(self, after: FinishedKey, *, limit: int) -> list[TaskRecord]:
        async with self._read() as db:
            rows = await self._rows(
                db,
                "select_finished_page",
                {"after_at": after[0], "after_id": after[1], "limit": limit},
            )
        return [task_record(row) for row in rows]
