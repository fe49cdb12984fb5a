"""Airflow's schedulers and triggerers (and Airflow 2's LocalTaskJobs) in the workers list,
against real Airflow schemas (3 and 2, from ``airflow db migrate``).

The jobs and task instances are written with Airflow's own table definitions
(``tests/airflow_rows.py``); the monitor's snapshot lists each running job with its host, its
last beat and the task instances the schema links to it, and ``worker_list`` puts a scheduler
gone with tasks still on it first. The database file is unchanged after the polls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.airflow_env import AirflowDatabase
from tests.core.test_source_airflow import _sha, _watch
from zombietop.clock import FakeClock
from zombietop.judge.snapshot import Snapshot
from zombietop.judge.workers import worker_list
from zombietop.sources.airflow_workers import GONE_KEPT

pytestmark = pytest.mark.slow


def jobs_and_tasks(now: float) -> list[dict[str, Any]]:
    """A live scheduler, one killed two minutes ago with two task instances still on it, a
    live triggerer running one deferred task's trigger, and two jobs never listed: a scheduler
    that ended, and one killed long ago that holds nothing."""
    run = {"dag_id": "etl", "run_id": "manual__2026-12-01", "operator": "PythonOperator"}
    return [
        {"id": 101, "job_type": "SchedulerJob", "hostname": "sched-a", "latest_heartbeat": now - 3},
        {"id": 102, "job_type": "SchedulerJob", "hostname": "sched-b",
         "latest_heartbeat": now - 120},
        {"id": 103, "job_type": "TriggererJob", "hostname": "trig-1", "latest_heartbeat": now - 5},
        {"id": 104, "job_type": "SchedulerJob", "hostname": "old", "state": "success",
         "latest_heartbeat": now - 10},
        {"id": 105, "job_type": "SchedulerJob", "hostname": "older",
         "latest_heartbeat": now - GONE_KEPT - 60},
        {**run, "task_id": "extract", "state": "running", "hostname": "worker-7", "pid": 4120,
         "start_date": now - 300, "last_heartbeat_at": now - 4, "queued_by_job_id": 102},
        {**run, "task_id": "load", "state": "queued", "queued_dttm": now - 150,
         "queued_by_job_id": 102},
        {**run, "task_id": "wait", "state": "deferred", "start_date": now - 60,
         "triggerer_id": 103},
        {**run, "task_id": "clean", "state": "running", "hostname": "worker-8", "pid": 4121,
         "start_date": now - 100, "last_heartbeat_at": now - 2, "queued_by_job_id": 101},
    ]  # fmt: skip


async def test_schedulers_and_triggerers_listed_a_stale_one_gone_first(
    airflow_sqlite: AirflowDatabase, tmp_path: Path, fake_clock: FakeClock
) -> None:
    # Whole seconds, so the beats' ages read whole (Airflow's times keep microseconds).
    now = float(int(fake_clock.now()))
    airflow_sqlite.write(jobs_and_tasks(now))
    assert airflow_sqlite.path is not None
    before = _sha(airflow_sqlite.path)
    monitor, source, store = await _watch(airflow_sqlite, tmp_path, fake_clock)
    try:
        snapshot = await monitor.poll()
    finally:
        await source.close()
        await store.close()
    assert snapshot.ok, snapshot.error
    assert _sha(airflow_sqlite.path) == before
    assert_listed(snapshot, source.name, now, airflow_sqlite.major)


async def test_postgresql_lists_them_too(
    airflow_postgres: AirflowDatabase, tmp_path: Path, fake_clock: FakeClock
) -> None:
    """On PostgreSQL, in the poll's read-only transactions, on the server's clock."""
    now = float(int(fake_clock.now()))
    airflow_postgres.write(jobs_and_tasks(now))
    monitor, source, store = await _watch(airflow_postgres, tmp_path, fake_clock)
    try:
        snapshot = await monitor.poll()
    finally:
        await source.close()
        await store.close()
    assert snapshot.ok, snapshot.error
    # The server's clock runs on while Airflow writes (seconds), the fake clock does not.
    assert_listed(snapshot, source.name, now, "3", exact=False)


def assert_listed(
    snapshot: Snapshot, source: str, now: float, major: str, *, exact: bool = True
) -> None:
    """The stale scheduler first, gone with its two tasks; the live ones after it."""
    listed = worker_list(snapshot, snapshot.taken_at or now)
    airflow = [w for w in listed if w.kind == "airflow"]
    # Airflow 2 runs each task instance under a LocalTaskJob of its own, beating for it.
    runners = [w for w in airflow if w.name.startswith("task-runner@")]
    schedulers = [w for w in airflow if not w.name.startswith("task-runner@")]
    by_name = {w.name: w for w in schedulers}
    assert [w.name for w in schedulers] == [
        "scheduler@sched-b",
        "scheduler@sched-a",
        "triggerer@trig-1",
    ]

    stale = listed[0]
    assert stale is by_name["scheduler@sched-b"]
    assert (stale.gone, stale.holds, stale.host, stale.pid) == (True, 2, "sched-b", None)
    assert stale.last_beat == pytest.approx(now - 120, abs=0.01 if exact else 30)
    assert exact or stale.why.startswith("no heartbeat for 2m")
    assert not exact or stale.why == (
        "no heartbeat for 2m00s, over Airflow's 30s (scheduler_health_check_threshold), job 102"
    )

    live = by_name["scheduler@sched-a"]
    assert (live.gone, live.holds, live.host, live.pid, live.why) == (
        False, 1, "sched-a", None, ""
    )  # fmt: skip
    assert live.last_beat == pytest.approx(now - 3, abs=0.01 if exact else 30)
    assert live.source == source
    triggerer = by_name["triggerer@trig-1"]
    assert (triggerer.gone, triggerer.holds) == (False, 1)

    if major == "2":
        assert sorted((w.host, w.holds, w.gone) for w in runners) == [
            ("worker-7", 1, False),
            ("worker-8", 1, False),
        ]
    else:
        assert runners == []


async def test_an_unreadable_job_table_keeps_the_tasks(
    airflow3_sqlite: AirflowDatabase, tmp_path: Path, fake_clock: FakeClock
) -> None:
    """The jobs only add to the tasks: a read of them that fails leaves a note, not an error."""
    airflow3_sqlite.write(jobs_and_tasks(fake_clock.now()))
    monitor, source, store = await _watch(airflow3_sqlite, tmp_path, fake_clock)
    source._sql = {**source._sql, "airflow_jobs_v3": "SELECT * FROM no_such_job_table"}
    try:
        snapshot = await monitor.poll()
    finally:
        await source.close()
        await store.close()
    assert snapshot.ok, snapshot.error
    assert len(snapshot.tasks) == 4
    assert [w for w in worker_list(snapshot, fake_clock.now()) if w.kind == "airflow"] == []
    assert source.notes and source.notes[0].startswith("its workers are not listed: ")
    assert "no_such_job_table" in source.notes[0]
