"""The PostgreSQL event log's day partitions: made ahead, and dropped whole once past retention.

``events`` is partitioned by range of ``at`` (schema v20), one partition a UTC day named
``events_dYYYYMMDD``, and a default partition for any time no day covers (the rows from before
v20, a clock far off). The pruner calls ``keep_partitions`` after a finished pass:

- it makes the partitions of today and the ``AHEAD_DAYS`` days after it, moving into each the
  rows the default partition already holds for that day, so inserts find their day's partition;
- it drops a day partition whose whole day is before the cutoff when none of its events belongs
  to a task: the pass has just deleted the events of every task it could remove, so any task
  event left there belongs to a task the store still keeps (unfinished, an open incident, an
  ack in force), and the day waits for it. What such a wait holds back is deleted by task, as
  on SQLite.

Each step is its own short transaction under one advisory lock, so two pruners (two agents
with no watchdog) never make or drop the same day twice.
"""

from __future__ import annotations

import calendar
import re
import time
from typing import Any

import asyncpg

DAY_S = 86400.0
AHEAD_DAYS = 7
"""Days made ahead of today: a pruner runs every hour, so a week covers a long outage."""
PARENT = "events"
_NAME = re.compile(r"^events_d(\d{8})$")
_LOCK = 1515146563
"""pg_advisory_xact_lock key of partition upkeep (the migrations' is 1515146562)."""


def day_start(moment: float) -> float:
    """The start of ``moment``'s UTC day, in seconds since the epoch."""
    return moment - moment % DAY_S


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


async def drop_partition(db: asyncpg.Connection, name: str) -> bool:
    """Drop a day partition if none of its events belongs to a task; False if one does."""
    await db.execute("SELECT pg_advisory_xact_lock($1)", _LOCK)
    if name not in await day_partitions(db):
        return True  # another pruner dropped it
    table = _quoted(name)
    if await db.fetchval(f"SELECT EXISTS (SELECT 1 FROM {table} WHERE task_id IS NOT NULL)"):
        return False
    await db.execute(f"DROP TABLE {table}")
    return True


def _quoted(name: str) -> str:
    # Names come from partition_name or the catalog, and match _NAME; quoted all the same.
    assert _NAME.match(name), name
    return '"' + name + '"'


def _number(value: Any) -> str:
    return repr(float(value))
