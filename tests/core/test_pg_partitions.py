"""PostgreSQL's event log by day: the migration keeps every row, the pruner makes the days ahead
and drops a past day whole, and waits for a day that still holds a kept task's events."""

from __future__ import annotations

import asyncpg
import pytest

from tests.conftest import PostgresForTests
from tests.core.test_store_retention import DAY, KEEP, finished
from tests.stores import open_for_test
from zombietop.clock import FakeClock
from zombietop.model import EventKind
from zombietop.store import Store
from zombietop.store.pg_partitions import AHEAD_DAYS, partition_name
from zombietop.store.pruner import prune
from zombietop.store.retention import day_start

pytestmark = pytest.mark.backends("postgresql")

COLUMNS = "event_id, at, task_id, kind, actor, message, data"


async def _partitions(url: str) -> set[str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'events'::regclass"
        )
    finally:
        await conn.close()
    return {row[0] for row in rows}


async def test_the_migration_moves_every_event_into_the_partitioned_log(
    postgres: PostgresForTests, clock: FakeClock
) -> None:
    """A store at v19 with 2,000 events over 60 days (some of no task) opens at v20 with the same
    rows, ids included; the next event's id follows the last, and the log reads as before."""
    from zombietop.store.postgres import MIGRATIONS, SCHEMA_VERSION

    url = postgres.create_database(empty=True)
    conn = await asyncpg.connect(url)
    for number in range(SCHEMA_VERSION - 1):
        await conn.execute(MIGRATIONS[number])
    await conn.execute(
        "INSERT INTO zombietop_store VALUES (true, 'zombietop', $1)", SCHEMA_VERSION - 1
    )
    await conn.execute(
        "INSERT INTO events (at, task_id, kind, actor, message, data) "
        "SELECT $1 - n * 2592.0, CASE WHEN n % 7 = 0 THEN NULL ELSE 'task-' || (n % 40) END, "
        "'note', 'test', 'event ' || n, '{\"n\": ' || n || '}' FROM generate_series(1, 2000) n",
        clock.now(),
    )
    await conn.execute("DELETE FROM events WHERE event_id % 13 = 0")  # gaps in the ids
    before = [tuple(row) for row in await conn.fetch(f"SELECT {COLUMNS} FROM events ORDER BY 1")]
    await conn.close()
    assert len(before) == 2000 - 2000 // 13

    async with await open_for_test(url, clock) as store:
        await store.record_event(kind=EventKind.NOTE, actor="test", message="after")
        newest = await store.events(limit=2)
    assert newest[0].message == "after" and newest[0].event_id == before[-1][0] + 1
    assert newest[1].event_id == before[-1][0]

    conn = await asyncpg.connect(url)
    try:
        after = [
            tuple(row)
            for row in await conn.fetch(
                f"SELECT {COLUMNS} FROM events WHERE message <> 'after' ORDER BY 1"
            )
        ]
        assert after == before
        assert await conn.fetchval("SELECT schema_version FROM zombietop_store") == SCHEMA_VERSION
        assert await conn.fetchval("SELECT count(*) FROM pg_partitioned_table") == 1
        assert await conn.fetchval("SELECT to_regclass('events_unpartitioned')") is None
    finally:
        await conn.close()


async def test_retention_drops_a_past_day_and_waits_for_a_kept_task(
    store_location: str, pinned_store: Store, fake_clock: FakeClock
) -> None:
    """Days are made ahead; 31 days on, the day of a pruned task and of events of no task is
    dropped whole, and the day of a task still running waits for it, its events all there and
    those of a pruned task beside them deleted."""
    first = await pinned_store.keep_partitions(0.0)
    today = day_start(fake_clock.now())
    assert (
        set(first.made)
        == {partition_name(today + n * DAY) for n in range(AHEAD_DAYS + 1)}
        <= await _partitions(store_location)
    )
    assert (await pinned_store.keep_partitions(0.0)).made == (), "made once"

    fake_clock.advance(today + DAY * 1.5 - fake_clock.now())  # the middle of tomorrow
    await finished(pinned_store, "done-1")
    await pinned_store.record_event(kind=EventKind.NOTE, actor="test", message="of no task")
    fake_clock.advance(DAY)  # the day after: a task that is still running
    await pinned_store.create_task(
        task_id="kept-1", run_id="r", step="kept", step_type="default", actor="t"
    )
    await finished(pinned_store, "done-2")  # its day is kept-1's: deleted there, not dropped
    kept_events = len(await pinned_store.events(task_id="kept-1"))
    assert kept_events >= 1 and await pinned_store.events(task_id="done-2")

    fake_clock.advance(KEEP + DAY)
    run = await prune(pinned_store, KEEP)
    assert run.tasks == 2 and run.days_dropped == 2, run  # today's day and done-1's
    days = await _partitions(store_location)
    assert partition_name(today + DAY) not in days
    assert partition_name(today + 2 * DAY) in days, "kept-1's day waits for it"
    assert [
        e.message for e in await pinned_store.events(limit=1000) if e.message == "of no task"
    ] == []
    assert len(await pinned_store.events(task_id="kept-1")) == kept_events
    assert await pinned_store.events(task_id="done-2") == []
    assert partition_name(day_start(fake_clock.now()) + AHEAD_DAYS * DAY) in days

    again = await pinned_store.keep_partitions(fake_clock.now() - KEEP)
    assert again.dropped == () and again.waiting == (partition_name(today + 2 * DAY),)


async def test_a_new_day_takes_its_events_out_of_the_default_partition(
    store_location: str, pinned_store: Store, fake_clock: FakeClock
) -> None:
    """Events written before their day had a partition (in the default one) move into it when
    it is made, ids and all; the log reads the same before and after."""
    for n in range(5):
        await pinned_store.record_event(kind=EventKind.NOTE, actor="test", message=f"early {n}")
    before = await pinned_store.events(limit=100)
    run = await pinned_store.keep_partitions(0.0)
    assert partition_name(day_start(fake_clock.now())) in run.made
    assert await pinned_store.events(limit=100) == before
    conn = await asyncpg.connect(store_location)
    try:
        assert await conn.fetchval("SELECT count(*) FROM events_default") == 0
        today = partition_name(day_start(fake_clock.now()))
        assert await conn.fetchval(f'SELECT count(*) FROM "{today}"') == len(before)
    finally:
        await conn.close()
