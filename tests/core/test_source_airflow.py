"""Airflow's metadata database as a read-only source, against real Airflow.

Every schema here is made by Airflow's own ``airflow db migrate`` (Airflow 3, and Airflow 2 where
its venv exists) and every task instance is written through Airflow's own table definitions,
as its scheduler and workers leave them. The tests skip, saying how to install Airflow, when its
venv is absent.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import asyncpg
import psutil
import pytest

from tests.airflow_env import AirflowDatabase
from tests.core.realprocs import Children
from zombietop.actions import ActionKind
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import ConfigError, SourceError
from zombietop.health import Health
from zombietop.judge.monitor import Monitor, Snapshot
from zombietop.model import TaskState
from zombietop.procs import PsutilProbe, this_host
from zombietop.sources import Capability, check_source_url
from zombietop.sources.airflow import AirflowSource, airflow_task_id
from zombietop.sources.sqlite_files import read_only_uri
from zombietop.store.sqlite import SQLiteStore

pytestmark = pytest.mark.slow


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scheduler_rows(now: float, sleeper: int, gone: int, other: int) -> list[dict[str, Any]]:
    """Task instances as Airflow's scheduler and workers leave them, at ``now``: ``sleeper`` is
    the hung task's process, ``gone`` a pid that exited, ``other`` someone else's process."""
    host = this_host()
    born = psutil.Process(sleeper).create_time()
    etl = {
        "dag_id": "etl",
        "run_id": "manual__2026-12-01",
        "operator": "PythonOperator",
        "logical_date": 1_796_083_200.0,
    }  # 2026-12-01T00:00:00Z
    rep = {"dag_id": "report", "run_id": "scheduled__2026-12-01", "operator": "BashOperator"}
    return [
        # A local task whose supervisor beats while its code hangs (apache/airflow#13747).
        {**etl, "task_id": "extract", "state": "running", "hostname": host, "pid": sleeper,
         "start_date": born + 0.5, "last_heartbeat_at": now - 5, "queued_dttm": born - 2},
        # On another worker: fresh by Airflow's 300 s, though stale by zombietop's own 2m.
        {**etl, "task_id": "clean", "state": "running", "hostname": "worker-7", "pid": 4120,
         "start_date": now - 600, "last_heartbeat_at": now - 200},
        {**etl, "task_id": "transform", "state": "running", "hostname": "worker-7", "pid": 4121,
         "start_date": now - 3000, "last_heartbeat_at": now - 900, "try_number": 2},
        # RUNNING with a NULL heartbeat: never caught by Airflow; past the start grace.
        {**etl, "task_id": "load", "state": "running", "hostname": "worker-7", "pid": 4122,
         "start_date": now - 600},
        {**etl, "task_id": "index", "state": "running", "hostname": "worker-7", "pid": 4123,
         "start_date": now - 10},
        # Local, but its process exited, and its supervisor last beat 30 s ago, more than one
        # heartbeat interval (10s): no record of a normal end is coming, so dead.
        {**etl, "task_id": "exited", "state": "running", "hostname": host, "pid": gone,
         "start_date": now - 60, "last_heartbeat_at": now - 30},
        # Local, and the pid now belongs to a process born long after the task started.
        {**etl, "task_id": "reused", "state": "running", "hostname": host, "pid": other,
         "start_date": psutil.Process(other).create_time() - 3600, "last_heartbeat_at": now - 5},
        {**rep, "task_id": "render", "state": "queued", "queued_dttm": now - 30},
        {**rep, "task_id": "mail", "state": "scheduled", "scheduled_dttm": now - 30},
        {**rep, "task_id": "fetch", "state": "success", "hostname": "worker-7",
         "start_date": now - 400, "end_date": now - 100},
        {**rep, "task_id": "branch", "state": "skipped", "start_date": now - 400,
         "end_date": now - 100},
        {**etl, "task_id": "split", "map_index": 2, "state": "failed", "hostname": "worker-7",
         "start_date": now - 400, "end_date": now - 200},
    ]  # fmt: skip


EXPECTED = {
    "etl/extract/manual__2026-12-01": Health.HEALTHY,
    "etl/clean/manual__2026-12-01": Health.HEALTHY,
    "etl/transform/manual__2026-12-01": Health.STALLED,
    "etl/load/manual__2026-12-01": Health.STALLED,
    "etl/index/manual__2026-12-01": Health.STARTING,
    "etl/exited/manual__2026-12-01": Health.DEAD,
    "etl/reused/manual__2026-12-01": Health.DEAD,
    "report/render/scheduled__2026-12-01": Health.QUEUED,
    "report/mail/scheduled__2026-12-01": Health.QUEUED,
    "report/fetch/scheduled__2026-12-01": Health.SUCCEEDED,
    "report/branch/scheduled__2026-12-01": Health.SUCCEEDED,
    "etl/split/manual__2026-12-01[2]": Health.FAILED,
}


@pytest.fixture
def sleeper(children: Children) -> int:
    """A real local process that does nothing: a hung task's code."""
    return children.start(["sleep", "600"]).pid


@pytest.fixture
def other(children: Children) -> int:
    """A real local process that is not any task's."""
    return children.start(["sleep", "600"]).pid


@pytest.fixture
def gone() -> int:
    done = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    return int(done.stdout)


async def _watch(
    airflow: AirflowDatabase, tmp_path: Path, clock: FakeClock, config_text: str = ""
) -> tuple[Monitor, AirflowSource, SQLiteStore]:
    config_path = tmp_path / "config.toml"
    config_path.write_text(config_text)
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    source = AirflowSource(airflow.url, clock=clock)
    await source.open()
    monitor = Monitor(
        store,
        load_config(config_path),
        probe=PsutilProbe(clock=clock),
        clock=clock,
        sources=[source],
    )
    return monitor, source, store


async def _twice(monitor: Monitor, clock: FakeClock) -> Snapshot:
    """Two polls 2 s apart, so the probe has a CPU and I/O delta to speak of."""
    await monitor.poll()
    clock.advance(2)
    snapshot = await monitor.poll()
    assert snapshot.ok, snapshot.error
    return snapshot


async def test_task_instances_judged_and_the_database_unchanged(
    airflow_sqlite: AirflowDatabase,
    tmp_path: Path,
    fake_clock: FakeClock,
    sleeper: int,
    gone: int,
    other: int,
) -> None:
    airflow_sqlite.write(scheduler_rows(fake_clock.now() - 2, sleeper, gone, other))
    assert airflow_sqlite.path is not None
    before = _sha(airflow_sqlite.path)
    monitor, source, store = await _watch(airflow_sqlite, tmp_path, fake_clock)
    try:
        assert source.schema == airflow_sqlite.major
        snapshot = await _twice(monitor, fake_clock)
    finally:
        await source.close()
        await store.close()
    assert {view.task_id: view.health for view in snapshot.tasks} == EXPECTED
    assert _sha(airflow_sqlite.path) == before

    # Each task instance is a run of its DAG/TASK job; a finished one is counted once, though
    # two polls saw it.
    assert snapshot.by_id()["etl/extract/manual__2026-12-01"].task.job == "etl/extract"
    fetch = snapshot.jobs["report/fetch"]
    assert (fetch.runs, fetch.succeeded, fetch.last_outcome) == (1, 1, TaskState.SUCCEEDED)
    assert fetch.durations == pytest.approx((300.0,))
    assert snapshot.jobs["etl/split"].last_outcome is TaskState.FAILED

    views = snapshot.by_id()
    hung = views["etl/extract/manual__2026-12-01"]
    # The heartbeat is fresh, but the task's own process does nothing.
    assert hung.process is not None and hung.process.alive and hung.process.identity_ok
    assert hung.process.cpu_percent == 0.0
    assert "alive cpu 0%" in hung.verdict.context(snapshot.taken_at or 0.0)
    stale = views["etl/transform/manual__2026-12-01"]
    assert [r.code for r in stale.verdict.reasons] == ["heartbeat_stale"]
    assert stale.limits.heartbeat_timeout == 300.0
    assert stale.limits.source("heartbeat_timeout").startswith("Airflow's")
    assert stale.task.attempt == 2
    assert views["etl/load/manual__2026-12-01"].verdict.reasons[0].code == "no_first_heartbeat"
    assert views["etl/exited/manual__2026-12-01"].verdict.reasons[0].code == "process_gone"
    assert views["etl/reused/manual__2026-12-01"].verdict.reasons[0].code == "pid_reused"

    origin = snapshot.origins["etl/split/manual__2026-12-01[2]"]
    assert origin.kind == "airflow" and origin.capability is Capability.READ_ONLY
    assert origin.ids["map_index"] == 2
    assert origin.ids["operator"] == "PythonOperator"
    assert snapshot.origins["etl/transform/manual__2026-12-01"].ids["try_number"] == 2
    assert_waits_in_its_pool(snapshot)


def assert_waits_in_its_pool(snapshot: Snapshot) -> None:
    """A scheduled task instance says the pool it waits in, read from slot_pool."""
    waiting = snapshot.by_id()["report/mail/scheduled__2026-12-01"].task.state_reason or ""
    assert re.fullmatch(
        r"airflow state scheduled, pool default_pool: \d+ of \d+ slots open", waiting
    ), waiting


async def test_the_connection_cannot_write(
    airflow3_sqlite: AirflowDatabase, tmp_path: Path, fake_clock: FakeClock
) -> None:
    source = AirflowSource(airflow3_sqlite.url, clock=fake_clock)
    await source.open()
    assert airflow3_sqlite.path is not None
    # The connection the source reads by, whether Airflow runs (mode=ro) or not (immutable).
    uri, _ = read_only_uri(airflow3_sqlite.path, source.name)
    assert source._sqlite is not None
    conn = source._sqlite._connect(uri)
    try:
        with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only"):
            conn.execute("DELETE FROM task_instance")
    finally:
        conn.close()
        await source.close()


async def test_per_dag_thresholds_come_from_the_dags_step_type(
    airflow3_sqlite: AirflowDatabase,
    tmp_path: Path,
    fake_clock: FakeClock,
    sleeper: int,
    gone: int,
    other: int,
) -> None:
    airflow3_sqlite.write(scheduler_rows(fake_clock.now(), sleeper, gone, other))
    config = (
        '[step_types.etl]\nheartbeat_timeout = "20m"\nlease_ttl = "30m"\nprogress_timeout = "1h"\n'
    )
    monitor, source, store = await _watch(airflow3_sqlite, tmp_path, fake_clock, config)
    try:
        snapshot = await monitor.poll()
    finally:
        await source.close()
        await store.close()
    stale = snapshot.by_id()["etl/transform/manual__2026-12-01"]
    assert stale.health is Health.HEALTHY
    assert stale.limits.heartbeat_timeout == 1200.0
    # DAGs without a section of their own keep Airflow's 300 s.
    assert snapshot.by_id()["report/render/scheduled__2026-12-01"].limits.heartbeat_timeout == 300


async def test_postgresql_read_in_read_only_transactions(
    airflow_postgres: AirflowDatabase,
    tmp_path: Path,
    fake_clock: FakeClock,
    sleeper: int,
    gone: int,
    other: int,
) -> None:
    airflow_postgres.write(scheduler_rows(fake_clock.now() - 2, sleeper, gone, other))
    monitor, source, store = await _watch(airflow_postgres, tmp_path, fake_clock)
    try:
        assert source.schema == "3"
        snapshot = await _twice(monitor, fake_clock)
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
            await source._pg.execute("DELETE FROM task_instance")
    finally:
        await source.close()
        await store.close()
    # The server's clock is real time; the fake clock started at it, two seconds off at most.
    judged = {view.task_id: view.health for view in snapshot.tasks}
    assert judged == EXPECTED
    assert_waits_in_its_pool(snapshot)


def test_refusals_name_the_airflow_command() -> None:
    source = AirflowSource("airflow+sqlite:///airflow.db")
    from zombietop.sources import Origin

    origin = Origin(
        source=source.name,
        kind="airflow",
        capability=Capability.READ_ONLY,
        ids={
            "dag_id": "etl",
            "task_id": "transform",
            "run_id": "manual__1",
            "map_index": 3,
            "logical_date": "2026-12-01T00:00:00+00:00",
        },
    )
    resume = source.refusal(ActionKind.RESUME, origin)
    assert resume is not None
    assert (
        "airflow tasks clear etl -t '^transform$' -s 2026-12-01T00:00:00+00:00 "
        "-e 2026-12-01T00:00:00+00:00 -y"
    ) in resume
    # Not a dry run, and a task still running (or succeeded) is cleared too; only this index.
    assert (
        'POST /api/v2/dags/etl/clearTaskInstances {"dag_run_id": "manual__1", '
        '"task_ids": [["transform", 3]], "dry_run": false, "only_failed": false}'
    ) in resume
    no_date = replace(origin, ids={**origin.ids, "logical_date": None, "map_index": -1})
    manual = source.refusal(ActionKind.RESUME, no_date)
    assert manual is not None and "airflow tasks clear etl" not in manual
    assert manual.endswith(
        'POST /api/v2/dags/etl/clearTaskInstances {"dag_run_id": "manual__1", '
        '"task_ids": ["transform"], "dry_run": false, "only_failed": false}, or in the UI: Clear'
    )
    assert "zombietop never writes to it" in resume
    discard = source.refusal(ActionKind.DISCARD, origin)
    assert discard is not None
    assert "PATCH /api/v2/dags/etl/dagRuns/manual__1/taskInstances/transform/3" in discard
    assert '"new_state": "failed"' in discard
    assert source.refusal(ActionKind.KILL, origin) is None


def test_task_ids() -> None:
    assert airflow_task_id("etl", "load", "manual__1", -1) == "etl/load/manual__1"
    assert airflow_task_id("etl", "load", "manual__1", 0) == "etl/load/manual__1[0]"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mysql://db/airflow", "unknown kind"),
        ("airflow+sqlite://", "no database file"),
        ("airflow+mssql://db", "unknown kind"),
    ],
)
def test_bad_source_urls(url: str, problem: str) -> None:
    with pytest.raises(SourceError, match=problem):
        check_source_url(url)


def test_sources_in_config(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[[sources]]\nurl = "airflow+sqlite:////var/lib/airflow/airflow.db"\n'
        'heartbeat_timeout = "10m"\n'
    )
    (found,) = load_config(path).sources
    assert found.url == "airflow+sqlite:////var/lib/airflow/airflow.db"
    assert found.heartbeat_timeout == 600.0
    path.write_text('[[sources]]\nurl = "airflow+sqlite:////a.db"\ntimeout = "1m"\n')
    with pytest.raises(ConfigError, match=r"sources #1.*unknown key 'timeout'"):
        load_config(path)
    path.write_text('[[sources]]\nurl = "mysql://x"\n')
    with pytest.raises(ConfigError, match=r"\[sources #1\]: source 'mysql://x': unknown kind"):
        load_config(path)


async def test_a_missing_file_says_so(tmp_path: Path) -> None:
    source = AirflowSource(f"airflow+sqlite:///{tmp_path / 'nope.db'}")
    with pytest.raises(SourceError, match="no such Airflow database file"):
        await source.open()
    assert not (tmp_path / "nope.db").exists()
