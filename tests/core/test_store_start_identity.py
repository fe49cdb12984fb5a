"""The store keeps a process's start identity (boot id and ticks) beside its wall-clock start:
schema v11 on SQLite, v9 on PostgreSQL. Rows from before keep working, compared by wall clock."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.core.realprocs import Children
from tests.stores import open_for_test
from zombietop.model import TaskState
from zombietop.procs import PsutilProbe, read_start, this_host
from zombietop.start_identity import StartIdentity
from zombietop.store import Store
from zombietop.store.sqlite import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLiteStore,
    _statements,
)

if TYPE_CHECKING:
    from tests.conftest import PostgresForTests

STARTED = StartIdentity(boot_id="ecfddbb6-2122-4567-b92d-24030369d68d", ticks=360_014)


async def test_a_start_identity_is_kept_with_the_process_and_its_kill(live_store: Store) -> None:
    await live_store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="t")
    lease = await live_store.acquire_lease("t1", owner="w", ttl=60)
    await live_store.set_process(
        "t1",
        owner="w",
        token=lease.token,
        pid=4121,
        pid_start_time=1000.25,
        pid_start_identity=STARTED,
        host="box",
    )
    task = (await live_store.get_record("t1")).task
    assert (task.pid, task.pid_start_time, task.pid_start_identity) == (4121, 1000.25, STARTED)
    [polled] = await live_store.poll(None)
    assert polled.task.pid_start_identity == STARTED

    kill = await live_store.open_kill(
        "t1",
        pid=4121,
        pid_start_time=1000.25,
        pid_start_identity=STARTED,
        pgid=4121,
        host="box",
        requested_by="oncall",
        grace=30,
    )
    assert kill.pid_start_identity == STARTED
    assert (await live_store.open_kills("box")) == [kill]
    closed = await live_store.close_kill("t1", outcome="exited", actor="t", message="gone")
    assert closed is not None and closed.pid_start_identity == STARTED

    # A resume forgets the old process, its start identity too.
    requeued, _ = await live_store.resume_task("t1", expected_token=lease.token, actor="oncall")
    assert requeued.state is TaskState.QUEUED
    assert (requeued.pid, requeued.pid_start_time, requeued.pid_start_identity) == (None,) * 3


async def test_a_process_recorded_without_ticks_has_none(live_store: Store) -> None:
    """Where /proc cannot tell the count (another platform), the wall-clock start is all."""
    await live_store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="t")
    lease = await live_store.acquire_lease("t1", owner="w", ttl=60)
    await live_store.set_process(
        "t1", owner="w", token=lease.token, pid=4121, pid_start_time=1000.25, host="box"
    )
    task = (await live_store.get_record("t1")).task
    assert task.pid_start_time == 1000.25 and task.pid_start_identity is None


@pytest.mark.backends("sqlite")
async def test_a_v10_store_file_keeps_its_processes_and_kills(
    tmp_path: Path, children: Children
) -> None:
    """A task and an open kill written by a zombietop of schema v10: after the migration they
    have no ticks, and the probe still knows the task's live process by its wall-clock start."""
    proc = children.start(["sleep", "30"])
    start = read_start(proc.pid)
    assert start is not None
    path = tmp_path / "v10.db"
    con = sqlite3.connect(path)
    for migration in MIGRATIONS[:10]:
        for statement in _statements(migration):
            con.execute(statement)
    con.execute(
        "INSERT INTO tasks (task_id, run_id, step, step_type, state, host, pid, pid_start_time,"
        " created_at, updated_at) VALUES ('old', 'r', 's', 'default', 'running', ?, ?, ?, 1, 1)",
        (this_host(), proc.pid, start.time + 0.4),
    )
    con.execute(
        "INSERT INTO pending_kills (task_id, pid, pid_start_time, host, requested_by,"
        " term_sent_at, deadline) VALUES ('old', ?, ?, 'box', 'oncall', 10, 40)",
        (proc.pid, start.time + 0.4),
    )
    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    con.execute("PRAGMA user_version = 10")
    con.commit()
    con.close()

    async with await SQLiteStore.open(path) as live_store:
        record = await live_store.get_record("old")
        assert record.task.pid_start_identity is None
        assert record.pending_kill is not None and record.pending_kill.pid_start_identity is None
        sample = (await PsutilProbe().sample([record.task]))["old"]
        assert sample.alive and sample.identity_ok
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 15
    con.close()


@pytest.mark.backends("postgresql")
async def test_a_v8_postgres_store_keeps_its_processes_and_kills(
    postgres: PostgresForTests,
) -> None:
    import asyncpg

    from zombietop.store.postgres import MIGRATIONS as PG_MIGRATIONS
    from zombietop.store.postgres import SCHEMA_VERSION as PG_VERSION

    url = postgres.create_database(empty=True)
    conn = await asyncpg.connect(url)
    for migration in PG_MIGRATIONS[:8]:
        await conn.execute(migration)
    await conn.execute("INSERT INTO zombietop_store VALUES (true, 'zombietop', 8)")
    await conn.execute(
        "INSERT INTO tasks (task_id, run_id, step, step_type, state, host, pid, pid_start_time,"
        " created_at, updated_at) VALUES ('old', 'r', 's', 'default', 'running', 'box', 4121,"
        " 1000.25, 1, 1)"
    )
    await conn.execute(
        "INSERT INTO pending_kills (task_id, pid, pid_start_time, host, requested_by,"
        " term_sent_at, deadline) VALUES ('old', 4121, 1000.25, 'box', 'oncall', 10, 40)"
    )
    await conn.close()

    async with await open_for_test(url) as live_store:
        record = await live_store.get_record("old")
        assert record.task.pid_start_time == 1000.25 and record.task.pid_start_identity is None
        assert record.pending_kill is not None and record.pending_kill.pid_start_identity is None
        await live_store.close_kill("old", outcome="exited", actor="t", message="gone")
        # New rows carry the identity beside the old ones.
        await live_store.create_task(task_id="new", run_id="r", step="s", step_type="d", actor="t")
        lease = await live_store.acquire_lease("new", owner="w", ttl=60)
        await live_store.set_process(
            "new",
            owner="w",
            token=lease.token,
            pid=4122,
            pid_start_time=1001.0,
            pid_start_identity=STARTED,
            host="box",
        )
        assert (await live_store.get_record("new")).task.pid_start_identity == STARTED
    conn = await asyncpg.connect(url)
    version = await conn.fetchval("SELECT schema_version FROM zombietop_store")
    await conn.close()
    assert version == PG_VERSION == len(PG_MIGRATIONS) == 13
