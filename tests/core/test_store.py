"""The SQLite store: file safety, schema, heartbeats, history, the poll window, bad files."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.stores import Reopen, count_rows, open_for_test
from zombietop.clock import FakeClock
from zombietop.errors import (
    LeaseLost,
    ReadOnlyStore,
    StoreBusy,
    StoreError,
    StoreMissing,
    TaskNotFound,
)
from zombietop.heartbeat_line import parse_line
from zombietop.model import EventKind, TaskState
from zombietop.store import HISTORY_LIMIT, Store, open_store
from zombietop.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, SQLiteStore


async def make_running(store: Store, task_id: str = "t1", owner: str = "w1") -> int:
    await store.create_task(
        task_id=task_id, run_id="r", step="s", step_type="default", actor="test"
    )
    lease = await store.acquire_lease(task_id, owner=owner, ttl=300)
    await store.record_heartbeat(
        task_id, parse_line("stage=fetch p=0"), owner=owner, token=lease.token
    )
    return lease.token


@pytest.mark.backends("sqlite")
async def test_new_store_is_private_wal_and_versioned(store: Store, db_path: Path) -> None:
    await make_running(store)
    assert stat.S_IMODE(os.stat(db_path).st_mode) == 0o600
    for suffix in ("-wal", "-shm"):
        side = Path(str(db_path) + suffix)
        assert side.exists()
        assert stat.S_IMODE(os.stat(side).st_mode) == 0o600
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


async def test_missing_store_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(
        StoreMissing, match=r"no store at .*absent.db: start a job with `zombietop run`"
    ):
        await open_store(tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()


async def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("this is not sqlite\n" * 100)
    with pytest.raises(
        StoreError,
        match=r"not a readable zombietop store \(file is not a database\); move it aside",
    ):
        await open_store(path)
    assert path.read_text().startswith("this is not sqlite")


async def test_someone_elses_sqlite_database_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(StoreError, match="a SQLite database but not a zombietop store"):
        await open_store(path)
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT name FROM sqlite_master").fetchall() == [("customers",)]


async def test_a_store_from_a_newer_zombietop(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    async with await open_store(path, create=True):
        pass
    with sqlite3.connect(path) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(
        StoreError, match=rf"schema v{SCHEMA_VERSION + 1}, newer than this zombietop"
    ):
        await open_store(path)


async def test_reopening_keeps_everything(store_location: Path | str, clock: FakeClock) -> None:
    async with await open_for_test(store_location, clock, create=True) as first:
        await make_running(first)
    async with await open_for_test(store_location, clock) as second:
        record = await second.get_record("t1")
    assert record.task.state is TaskState.RUNNING
    assert record.heartbeat is not None and record.heartbeat.stage == "fetch"


async def test_read_only_store_reads_and_refuses_writes(store: Store, reopen: Reopen) -> None:
    await make_running(store)
    async with await reopen(read_only=True) as ro:
        assert [r.task.task_id for r in await ro.poll(None)] == ["t1"]
        with pytest.raises(ReadOnlyStore, match="open read-only"):
            await ro.create_task(task_id="t2", run_id="r", step="s", step_type="d", actor="x")
        with pytest.raises(ReadOnlyStore):
            await ro.record_heartbeat("t1", parse_line("p=5"))


async def test_duplicate_task_and_unknown_task(store: Store) -> None:
    await store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="x")
    with pytest.raises(StoreError, match="task 't1' already exists"):
        await store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="x")
    with pytest.raises(TaskNotFound, match="no task 'nope'"):
        await store.get_task("nope")
    with pytest.raises(TaskNotFound):
        await store.record_heartbeat("nope", parse_line("p=1"))


async def test_first_heartbeat_starts_the_task(store: Store, clock: FakeClock) -> None:
    await store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="x")
    assert (await store.get_task("t1")).state is TaskState.QUEUED
    lease = await store.acquire_lease("t1", owner="w1", ttl=60)
    claimed = await store.get_task("t1")
    assert claimed.state is TaskState.STARTING
    assert claimed.claimed_at == clock.now()
    clock.advance(3)
    await store.record_heartbeat("t1", parse_line("stage=fetch p=1"), owner="w1", token=lease.token)
    running = await store.get_task("t1")
    assert running.state is TaskState.RUNNING
    assert running.started_at == clock.now()


async def test_progress_and_stage_clocks_move_only_on_change(
    store: Store, clock: FakeClock
) -> None:
    token = await make_running(store)
    start = clock.now()

    async def beat(line: str) -> tuple[float, float]:
        clock.advance(10)
        hb = await store.record_heartbeat("t1", parse_line(line), owner="w1", token=token)
        assert hb.written_at == clock.now()
        return hb.progress_changed_at - start, hb.stage_started_at - start

    assert await beat("stage=fetch p=0") == (0, 0)  # same as the first beat: nothing moved
    assert await beat("stage=fetch p=0 eta=5m") == (0, 0)  # an eta is not progress
    assert await beat("stage=fetch p=5") == (30, 0)  # progress moved
    assert await beat("stage=fetch p=5 rows=10") == (40, 0)  # a counter moved
    assert await beat("stage=fetch p=5 rows=10") == (40, 0)
    assert await beat("stage=load p=5 rows=10") == (60, 60)  # a new stage
    assert await beat("stage=load p=5 rows=10 checkpoint=c1") == (70, 60)


async def test_request_start_defaults_to_when_it_was_first_seen(
    store: Store, clock: FakeClock
) -> None:
    token = await make_running(store)
    hb = await store.record_heartbeat(
        "t1", parse_line("stage=fetch p=1 req=s3.get"), owner="w1", token=token
    )
    assert hb.request_name == "s3.get"
    assert hb.request_started_at == clock.now()


async def test_history_is_bounded_and_oldest_first(store: Store, clock: FakeClock) -> None:
    token = await make_running(store)
    for i in range(HISTORY_LIMIT + 30):
        clock.advance(1)
        await store.record_heartbeat(
            "t1", parse_line(f"stage=fetch p={i % 100}"), owner="w1", token=token
        )
    history = await store.heartbeat_history("t1")
    assert len(history) == HISTORY_LIMIT
    assert history[-1].written_at == clock.now()
    assert [p.written_at for p in history] == sorted(p.written_at for p in history)
    assert await count_rows(store, "heartbeat_history") == HISTORY_LIMIT


async def test_fenced_heartbeat_from_a_stale_owner_is_refused(
    store: Store, clock: FakeClock
) -> None:
    token = await make_running(store)
    clock.advance(301)
    await store.reclaim_lease("t1", owner="w2", ttl=300)
    with pytest.raises(LeaseLost, match="w1 \\(token 1\\) no longer owns t1"):
        await store.record_heartbeat("t1", parse_line("p=99"), owner="w1", token=token)
    assert (await store.get_record("t1")).heartbeat.progress == 0  # type: ignore[union-attr]


async def test_heartbeat_error_is_kept_until_a_good_beat(store: Store) -> None:
    token = await make_running(store)
    await store.record_heartbeat_error(
        "t1", "malformed heartbeat line 'p=x': p='x' is not a number"
    )
    task = await store.get_task("t1")
    assert task.heartbeat_error is not None and "p='x'" in task.heartbeat_error
    events = await store.events(task_id="t1", limit=1)
    assert events[0].kind == EventKind.HEARTBEAT_REJECTED
    await store.record_heartbeat("t1", parse_line("p=2"), owner="w1", token=token)
    assert (await store.get_task("t1")).heartbeat_error is None


async def test_finish_releases_the_lease_and_refuses_later_beats(store: Store) -> None:
    token = await make_running(store)
    task = await store.finish_task(
        "t1", owner="w1", token=token, state=TaskState.SUCCEEDED, exit_code=0
    )
    assert (
        task.state is TaskState.SUCCEEDED and task.finished_at is not None and task.exit_code == 0
    )
    lease = await store.get_lease("t1")
    assert lease is not None and lease.owner is None and lease.token == token
    with pytest.raises(LeaseLost, match="succeeded; its heartbeats are no longer recorded"):
        await store.record_heartbeat("t1", parse_line("p=5"))


async def test_a_queued_lease_leaves_the_task_queued_until_claimed_again(store: Store) -> None:
    """`run --wait` holds the lease of a queued task; a later plain claim starts it."""
    await store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="t")
    lease = await store.acquire_lease("t1", owner="waiter", ttl=60, queued=True)
    task = await store.get_task("t1")
    assert task.state is TaskState.QUEUED and task.claimed_at is None
    await store.renew_lease("t1", owner="waiter", token=lease.token, ttl=60)
    await store.release_lease("t1", owner="waiter", token=lease.token)
    again = await store.acquire_lease("t1", owner="runner", ttl=60)
    assert again.token == lease.token + 1
    assert (await store.get_task("t1")).state is TaskState.STARTING


async def test_interrupted_is_not_finished(store: Store) -> None:
    token = await make_running(store)
    task = await store.finish_task(
        "t1", owner="w1", token=token, state=TaskState.INTERRUPTED, reason="SIGTERM"
    )
    assert task.state is TaskState.INTERRUPTED and task.finished_at is None
    assert [r.task.task_id for r in await store.poll(await store.now())] == ["t1"]


async def test_poll_reads_active_and_recently_finished_only(store: Store, clock: FakeClock) -> None:
    for name in ("old", "recent", "active"):
        await make_running(store, name)
    await store.finish_task("old", owner="w1", token=1, state=TaskState.SUCCEEDED, exit_code=0)
    clock.advance(7200)
    token = (await store.get_lease("recent")).token  # type: ignore[union-attr]
    await store.finish_task("recent", owner="w1", token=token, state=TaskState.FAILED, exit_code=1)
    window = await store.poll(clock.now() - 3600)
    assert sorted(r.task.task_id for r in window) == ["active", "recent"]
    everything = await store.poll(None)
    assert sorted(r.task.task_id for r in everything) == ["active", "old", "recent"]


@pytest.mark.backends("sqlite")
async def test_poll_uses_the_finished_at_index(store: Store) -> None:
    from zombietop.store.sqlite import POLL_SQL

    async with store._read() as db:
        plan = await db.execute_fetchall("EXPLAIN QUERY PLAN " + POLL_SQL, {"finished_since": 0})
    details = " ".join(row[3] for row in plan)
    assert details.count("USING INDEX tasks_finished_at") == 2
    assert "SCAN t" not in details.replace("SCAN t USING", "")


async def test_quarantine_round_trip_is_evented(store: Store) -> None:
    await make_running(store)
    task = await store.set_quarantine("t1", quarantined=True, actor="watchdog", reason="stalled 4h")
    assert task.quarantined and task.quarantined_by == "watchdog"
    task = await store.set_quarantine("t1", quarantined=False, actor="alice", reason="resumed")
    assert not task.quarantined
    kinds = [e.kind for e in await store.events(task_id="t1", limit=2)]
    assert kinds == [EventKind.UNQUARANTINED, EventKind.QUARANTINED]


@pytest.mark.parametrize("fate", ["deleted", "replaced"])
async def test_a_store_file_deleted_or_replaced_while_open_is_missing(
    tmp_path: Path, fate: str
) -> None:
    """An open connection would go on reading the old inode: a watchdog watching a ghost."""
    path = tmp_path / "z.db"
    async with await open_store(path, create=True) as store:
        await store.poll(None)
        for part in tmp_path.glob("z.db*"):
            part.unlink()
        if fate == "replaced":
            async with await open_store(path, create=True):
                pass
        what = "deleted or moved" if fate == "deleted" else "replaced by another file"
        with pytest.raises(StoreMissing, match=f"store {path} was {what} while open"):
            await store.poll(None)
        with pytest.raises(StoreMissing):
            await store.create_task(task_id="t", run_id="r", step="s", step_type="d", actor="a")


async def test_closed_store_is_a_store_error(store_location: Path | str) -> None:
    opened = await open_for_test(store_location, create=True)
    await opened.close()
    with pytest.raises(StoreError, match="is closed"):
        await opened.poll(None)


async def test_a_request_keeps_its_start_while_in_flight(store: Store, clock: FakeClock) -> None:
    token = await make_running(store)
    first = clock.now()
    for _ in range(3):
        hb = await store.record_heartbeat(
            "t1", parse_line("stage=fetch p=1 req=api"), owner="w1", token=token
        )
        clock.advance(30)
    assert hb.request_started_at == first
    hb = await store.record_heartbeat(
        "t1", parse_line("stage=fetch p=1 req=other"), owner="w1", token=token
    )
    assert hb.request_started_at == clock.now()
    hb = await store.record_heartbeat("t1", parse_line("stage=fetch p=1"), owner="w1", token=token)
    assert (hb.request_name, hb.request_started_at) == (None, None)
    hb = await store.record_heartbeat(
        "t1",
        parse_line("stage=fetch p=1 req=api req_at=2026-11-29T00:00:00Z"),
        owner="w1",
        token=token,
    )
    assert hb.request_started_at == 1795910400.0


async def test_poll_reuses_records_of_unchanged_rows(store: Store, clock: FakeClock) -> None:
    token = await make_running(store, "quiet")
    await make_running(store, "busy")
    first = {r.task.task_id: r for r in await store.poll(None)}
    clock.advance(5)
    await store.record_heartbeat("busy", parse_line("stage=fetch p=9"), owner="w1", token=token)
    second = {r.task.task_id: r for r in await store.poll(None)}
    assert second["quiet"] is first["quiet"]
    assert second["busy"] is not first["busy"]
    assert second["busy"].heartbeat is not None and second["busy"].heartbeat.progress == 9


async def test_a_locked_store_is_one_clear_error_after_the_busy_timeout(
    db_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    import zombietop.store.sqlite

    monkeypatch.setattr(zombietop.store.sqlite, "BUSY_TIMEOUT_MS", 300)
    async with await open_store(db_path, create=True, clock=clock) as store:
        await store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="x")
        holder = sqlite3.connect(db_path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            started = time.monotonic()
            with pytest.raises(StoreBusy, match=r"stayed locked by another writer.*fuser"):
                await store.record_heartbeat("t1", parse_line("p=1"))
            # One wait of busy_timeout, not one per retry.
            assert time.monotonic() - started < 4 * 0.3
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await store.record_heartbeat("t1", parse_line("p=2"))  # the store works again


OPEN_AND_CLOSE = """
import asyncio, sys
from zombietop.store import open_store

async def main() -> None:
    async with await open_store(sys.argv[1], create=True):
        pass

asyncio.run(main())
"""


def test_processes_creating_one_store_at_once_all_open_it(tmp_path: Path) -> None:
    """Workers started together on a host with no store yet all create or open the same file."""
    import subprocess
    import sys

    path = tmp_path / "new.db"
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AND_CLOSE, str(path)],
            cwd=root,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    failures = [
        err for proc in procs if (err := proc.communicate(timeout=60)[1]) and proc.returncode
    ]
    assert failures == []
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_a_corrupt_store_says_corrupt_not_no_such_task(tmp_path: Path) -> None:
    """The reported fault: with the tasks' index damaged, ``kill X`` said "no task X"."""
    import sqlite3

    path = tmp_path / "z.db"
    async with await SQLiteStore.open(path, create=True) as store:
        await store.create_task(
            task_id="export-2031", run_id="r", step="s", step_type="d", actor="t"
        )
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (root,) = raw.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_tasks_1'"
        ).fetchone()
        (size,) = raw.execute("PRAGMA page_size").fetchone()
    # The index's root becomes a valid but empty leaf: the row is in the table, not the index.
    with path.open("r+b") as handle:
        handle.seek((root - 1) * size)
        handle.write(
            bytes([0x0A, 0, 0, 0, 0]) + (size % 65536).to_bytes(2, "big") + bytes(size - 7)
        )
    async with await SQLiteStore.open(path) as store:
        with pytest.raises(
            StoreError, match=r"is corrupt \(.*\), so it cannot say whether task"
        ) as err:
            await store.get_task("export-2031")
        assert not isinstance(err.value, TaskNotFound)
        with pytest.raises(StoreError, match="is corrupt"):
            await store.get_record("export-2031")
        with pytest.raises(TaskNotFound):  # a sound store still says "no task"
            async with await SQLiteStore.open(tmp_path / "other.db", create=True) as other:
                await other.get_task("export-2031")
