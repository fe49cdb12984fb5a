"""Store side of the actions: schema v2, token bumps that fence the old owner, durable kills."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.stores import open_for_test
from zombietop.clock import FakeClock
from zombietop.errors import ActionRefused, LeaseLost
from zombietop.heartbeat_line import BeatLine
from zombietop.model import EventKind, ProcessSample, TaskState
from zombietop.store import Store
from zombietop.store.sqlite import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLiteStore,
    _statements,
)


async def _leased(live_store: Store, task_id: str = "t1") -> int:
    await live_store.create_task(
        task_id=task_id, run_id="r", step="s", step_type="default", actor="test"
    )
    lease = await live_store.acquire_lease(task_id, owner="old", ttl=60)
    await live_store.record_heartbeat(
        task_id,
        BeatLine(stage="load", progress=40, checkpoint="ck-40"),
        owner="old",
        token=lease.token,
    )
    return lease.token


@pytest.mark.backends("sqlite")
async def test_a_v1_store_file_is_migrated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    con = sqlite3.connect(path)
    for statement in _statements(MIGRATIONS[0]):
        con.execute(statement)
    con.execute(
        "INSERT INTO tasks (task_id, run_id, step, step_type, state, created_at, updated_at) "
        "VALUES ('old', 'r', 's', 'default', 'queued', 1, 1)"
    )
    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()

    async with await SQLiteStore.open(path) as live_store:
        record = await live_store.get_record("old")
        assert record.pending_kill is None
        assert await live_store.open_kills(None) == []
    con = sqlite3.connect(path)
    version = con.execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION == len(MIGRATIONS)
    tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    con.close()
    assert {"pending_kills", "agents", "process_samples", "host_requests", "acks", "silences"} <= (
        tables
    )


async def test_resume_fences_the_old_owner_and_requeues(live_store: Store) -> None:
    token = await _leased(live_store)
    await live_store.set_quarantine("t1", quarantined=True, actor="watchdog", reason="stalled")

    task, lease = await live_store.resume_task(
        "t1", expected_token=token, actor="oncall", reason="retry"
    )

    assert lease.token == token + 1 and lease.owner is None
    assert task.state is TaskState.QUEUED and task.attempt == 2
    assert task.checkpoint == "ck-40" and not task.quarantined
    with pytest.raises(LeaseLost):
        await live_store.renew_lease("t1", owner="old", token=token, ttl=60)
    assert not await live_store.still_owner("t1", owner="old", token=token)
    with pytest.raises(LeaseLost):
        await live_store.record_heartbeat("t1", BeatLine(stage="late"), owner="old", token=token)
    with pytest.raises(LeaseLost):
        await live_store.finish_task("t1", owner="old", token=token, state=TaskState.SUCCEEDED)
    # The next attempt takes the lease from nobody; its beats continue the history.
    new = await live_store.acquire_lease("t1", owner="new", ttl=60)
    assert new.token == token + 2
    await live_store.record_heartbeat(
        "t1", BeatLine(stage="load", progress=41), owner="new", token=new.token
    )
    assert [p.progress for p in await live_store.heartbeat_history("t1")] == [40, 41]
    kinds = [e.kind for e in await live_store.events(task_id="t1")]
    assert EventKind.STATE_CHANGED in kinds and EventKind.LEASE_RECLAIMED in kinds


async def test_resume_and_discard_refuse_a_moved_token(live_store: Store) -> None:
    token = await _leased(live_store)
    with pytest.raises(ActionRefused, match=f"token {token - 1} is now {token}"):
        await live_store.resume_task("t1", expected_token=token - 1, actor="oncall")
    with pytest.raises(ActionRefused, match="task changed since you looked"):
        await live_store.discard_task("t1", expected_token=None, actor="oncall")
    assert (await live_store.get_task("t1")).state is TaskState.RUNNING


async def test_discard_marks_finished_and_fences(live_store: Store) -> None:
    token = await _leased(live_store)
    task, lease = await live_store.discard_task(
        "t1", expected_token=token, actor="oncall", reason="bad input"
    )
    assert task.state is TaskState.DISCARDED and task.finished_at is not None
    assert task.checkpoint == "ck-40" and task.state_reason == "bad input"
    assert lease.token == token + 1
    with pytest.raises(LeaseLost):
        await live_store.renew_lease("t1", owner="old", token=token, ttl=60)
    with pytest.raises(ActionRefused, match="discarded; there is nothing to resume"):
        await live_store.resume_task("t1", expected_token=lease.token, actor="oncall")


async def test_pending_kill_is_durable_unique_and_closed_once(store_location: Path | str) -> None:
    fake_clock = FakeClock(start=1000.0)
    async with await open_for_test(store_location, fake_clock, create=True) as live_store:
        await _leased(live_store)
        kill = await live_store.open_kill(
            "t1",
            pid=4121,
            pid_start_time=900.0,
            pgid=4121,
            host="box",
            requested_by="oncall",
            grace=30,
        )
        assert (kill.term_sent_at, kill.deadline, kill.pending) == (1000.0, 1030.0, True)
        with pytest.raises(ActionRefused, match="already has a kill in progress"):
            await live_store.open_kill(
                "t1",
                pid=4121,
                pid_start_time=900.0,
                pgid=None,
                host="box",
                requested_by="x",
                grace=1,
            )
    # Another process opening the same file sees it, in the poll and in its host's list.
    async with await open_for_test(store_location, fake_clock) as other:
        [record] = await other.poll(None)
        assert record.pending_kill == kill
        assert await other.open_kills("box") == [kill]
        assert await other.open_kills("elsewhere") == []
        fake_clock.advance(5)
        closed = await other.close_kill(
            "t1", outcome="exited", actor="zt", message="exited after TERM"
        )
        assert closed is not None and closed.outcome == "exited" and closed.finished_at == 1005.0
        assert (
            await other.close_kill("t1", outcome="escalated", actor="zt2", message="late") is None
        )
        record = await other.get_record("t1")
        assert record.pending_kill is not None and record.pending_kill.outcome == "exited"
        events = [e for e in await other.events(task_id="t1") if e.kind == EventKind.ACTION]
        assert [e.data["outcome"] for e in events] == ["exited"]


@pytest.mark.backends("sqlite")
async def test_a_v9_store_file_keeps_its_kills_samples_and_requests(tmp_path: Path) -> None:
    """v10 copies the three tables to drop their reference to tasks: every row stays, a store
    task's rows say no source, and the kill's revision triggers still stamp its task."""
    path = tmp_path / "v9.db"
    con = sqlite3.connect(path)
    for migration in MIGRATIONS[:9]:
        for statement in _statements(migration):
            con.execute(statement)
    con.executescript(
        """
        INSERT INTO tasks (task_id, run_id, step, step_type, state, created_at, updated_at)
        VALUES ('old', 'r', 's', 'default', 'running', 1, 1);
        INSERT INTO pending_kills (task_id, pid, host, requested_by, term_sent_at, deadline)
        VALUES ('old', 4121, 'host-b', 'oncall', 10, 40);
        INSERT INTO process_samples (task_id, host, pid, alive, identity_ok, children,
                                     sampled_at, written_at)
        VALUES ('old', 'host-b', 4121, 1, 1, 0, 10, 10);
        INSERT INTO host_requests (task_id, host, kind, actor, requested_at, requester_uid,
                                   requester)
        VALUES ('old', 'host-b', 'kill', 'oncall', 10, 1000, 'ann');
        """
    )
    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    con.execute("PRAGMA user_version = 9")
    con.commit()
    con.close()

    async with await SQLiteStore.open(path) as live_store:
        [kill] = await live_store.open_kills("host-b")
        assert (kill.pid, kill.deadline, kill.source) == (4121, 40, None)
        samples = await live_store.process_samples()
        assert samples["old"].sample.pid == 4121 and samples["old"].host == "host-b"
        [asked] = await live_store.open_host_requests("host-b")
        assert (asked.kind, asked.requester, asked.source) == ("kill", "ann", None)
        await live_store.close_kill("old", outcome="exited", actor="agent", message="gone")
        closed = (await live_store.get_record("old")).pending_kill
        assert closed is not None and closed.outcome == "exited"
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    triggers = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert "pending_kills_update_stamps_task" in triggers
    con.close()


async def test_a_source_tasks_kill_sample_and_request_need_no_task_row(
    live_store: Store,
) -> None:
    """An Airflow task instance is not in the tasks table: its kill record, its agent's samples
    and the requests for its host's agent are kept all the same, each naming its source."""
    task_id, source = "etl/extract/manual__1", "airflow+sqlite:///airflow.db"
    kill = await live_store.open_kill(
        task_id,
        pid=4121,
        pid_start_time=5.0,
        pgid=None,
        host="worker-7",
        requested_by="oncall",
        grace=30,
        source=source,
    )
    assert kill.source == source and kill.pending
    with pytest.raises(ActionRefused, match="already has a kill in progress"):
        await live_store.open_kill(
            task_id,
            pid=4121,
            pid_start_time=5.0,
            pgid=None,
            host="worker-7",
            requested_by="oncall",
            grace=30,
            source=source,
        )
    assert [k.task_id for k in await live_store.open_kills("worker-7")] == [task_id]
    closed = await live_store.close_kill(
        task_id, outcome="exited", actor="agent", message="kill exited"
    )
    assert closed is not None and closed.source == source
    assert await live_store.get_open_kill(task_id) is None
    # The latest kill of each source task, for its record in the next poll.
    assert (await live_store.source_kills(None))[task_id].outcome == "exited"
    assert closed.finished_at is not None
    assert await live_store.source_kills(closed.finished_at + 1) == {}

    sample = ProcessSample(pid=4121, alive=True, identity_ok=True, children=0, sampled_at=1.0)
    await live_store.record_process_samples("worker-7", {task_id: sample}, source=source)
    assert (await live_store.process_samples())[task_id].sample.pid == 4121
    # Not written again by the next round (the task instance finished): dropped.
    await live_store.record_process_samples("worker-7", {}, source=source)
    assert task_id not in await live_store.process_samples()

    asked = await live_store.request_host_action(
        task_id=task_id,
        host="worker-7",
        kind="kill",
        expected_token=1,
        actor="oncall",
        source=source,
    )
    [open_request] = await live_store.open_host_requests("worker-7")
    assert open_request.request_id == asked.request_id and open_request.source == source
