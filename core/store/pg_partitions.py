"""The PostgreSQL event log's day partitions: made ahead, and dropped whole once past retention.

``events`` is partitioned by range of ``at`` (schema v20), one partition a UTC day named
``events_dYYYYMMDD``, and a default partition for any time no day covers (the rows from before
v20, a clock far off). The pruner calls ``keep_partitions`` after a finished pass:

- it makes the partitions of today and the ``AHEAD_DAYS`` days after it, moving into each the
  rows the default partition already holds for that day, so inserts find their day's partition;
- it drops whole a day partition whose day ended before the cutoff's day when no task with
  events in it still needs them (the pass left those days' events to it: ``prune_events``).
  A task that does (still in the store, still writing events, an open incident, kill, request,
  hold or ack) keeps the day: the events there of the other tasks are then deleted, as the
  pass would have, and the day waits for it.

Each step is its own short transaction under one advisory lock, so two pruners (two agents
with no watchdog) never make or drop the same day twice.
"""

from __future__ import annotations

import calendar
import re
import time
from typing import Any

import asyncpg

from zombietop.store.retention import DAY_S

AHEAD_DAYS = 7
"""Days made ahead of today: a pruner runs every hour, so a week covers a long outage."""
PARENT = "events"
_NAME = re.compile(r"^events_d(\d{8})$")
_LOCK = 1515146563
"""pg_advisory_xact_lock key of partition upkeep (the migrations' is 1515146562)."""


def partition_name(start: float) -> str:
    return f"{PARENT}_d{time.strftime('%Y%m%d', time.gmtime(start))}"


def partition_start(name: str) -> float | None:
    """The UTC day a partition's name says (None: not a day partition)."""
    found = _NAME.match(name)
    if found is None:
        return None
    return float(calendar.timegm(time.strptime(found.group(1), "%Y%m%d")))


async def day_partitions(db: asyncpg.Connection) -> dict[str, float]:
    """The day partitions ``events`` has now, name -> start of the day."""
    rows = await db.fetch(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = $1::regclass",
        PARENT,
    )
    found = {row[0]: partition_start(row[0]) for row in rows}
    return {name: start for name, start in found.items() if start is not None}


async def make_partition(db: asyncpg.Connection, start: float) -> bool:
    """Make the partition of the day at ``start``, moving its rows out of the default partition
    first (attaching checks the default holds none of the day). False if it was there."""
    await db.execute("SELECT pg_advisory_xact_lock($1)", _LOCK)
    name = partition_name(start)
    if name in await day_partitions(db):
        return False
    table = _quoted(name)
    await db.execute(f"CREATE TABLE {table} (LIKE {PARENT} INCLUDING DEFAULTS)")
    await db.execute(
        f"WITH moved AS (DELETE FROM {PARENT}_default WHERE at >= $1 AND at < $2 RETURNING *) "
        f"INSERT INTO {table} SELECT * FROM moved",
        start,
        start + DAY_S,
    )
    await db.execute(
        f"ALTER TABLE {PARENT} ATTACH PARTITION {table} "
        f"FOR VALUES FROM ({_number(start)}) TO ({_number(start + DAY_S)})"
    )
    return True


_KEPT = """
EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = e.task_id)
OR EXISTS (SELECT 1 FROM events n WHERE n.task_id = e.task_id AND n.at >= $1)
OR EXISTS (SELECT 1 FROM pending_kills k WHERE k.task_id = e.task_id AND k.outcome IS NULL)
OR EXISTS (SELECT 1 FROM host_requests r
           WHERE r.task_id = e.task_id AND r.finished_at IS NULL)
OR EXISTS (SELECT 1 FROM source_acks a WHERE a.task_id = e.task_id AND a.until_at > $2)
OR COALESCE((SELECT p.data::jsonb ->> 'page' FROM events p
             WHERE p.task_id = e.task_id AND p.kind IN ('page', 'watchdog')
               AND p.data::jsonb ->> 'page' IN ('incident', 'all_clear')
               AND NOT (p.data::jsonb ? 'released')
             ORDER BY p.event_id DESC LIMIT 1), '') = 'incident'
OR COALESCE((SELECT h.kind FROM events h
             WHERE h.task_id = e.task_id AND h.kind IN ('quarantined', 'unquarantined')
             ORDER BY h.event_id DESC LIMIT 1), '') = 'quarantined'
"""
"""Whether the task ``e.task_id`` still needs its events: it is in the store, it has events
after the cutoff's day ($1), or something of it is open (a kill, a host request, an ack in
force at $2, an incident, a hold), as ``select_prunable_tasks`` and
``select_prunable_source_tasks`` judge (sql/postgresql/retention.sql)."""


async def drop_partition(db: asyncpg.Connection, name: str, *, floor: float, now: float) -> bool:
    """Drop a past day partition whole if no task in it still needs its events; else delete
    the events there of the tasks that do not (as a prune pass would have) and keep the rest.
    Return whether the day is gone."""
    await db.execute("SELECT pg_advisory_xact_lock($1)", _LOCK)
    if name not in await day_partitions(db):
        return True  # another pruner dropped it
    table = _quoted(name)
    held = await db.fetchval(
        f"SELECT EXISTS (SELECT 1 FROM (SELECT DISTINCT task_id FROM {table} "
        f"WHERE task_id IS NOT NULL) e WHERE {_KEPT})",
        floor,
        now,
    )
    if not held:
        await db.execute(f"DROP TABLE {table}")
        return True
    await db.execute(
        f"DELETE FROM {table} e WHERE e.task_id IS NOT NULL AND NOT ({_KEPT})", floor, now
    )
    return False


def _quoted(name: str) -> str:
    # Names come from partition_name or the catalog, and match _NAME; quoted all the same.
    assert _NAME.match(name), name
    return '"' + name + '"'


def _number(value: Any) -> str:
    return repr(float(value))
