"""A real Airflow 3 runs real DAGs, and zombietop watches it: the faults only zombietop sees.

One Airflow for the module (``tests/airflow_scheduler.py``: api-server, scheduler and
dag-processor, LocalExecutor, a 12 s ``task_instance_heartbeat_timeout``) on SQLite in WAL
mode, and again on PostgreSQL where ``ZOMBIETOP_AIRFLOW_SCHEDULER_PG`` is set (CI), started once
each; every DAG run is triggered at the start, so the tests wait side by side. Each test
watches through a real monitor (the source, the process probe) polled every half second, and
prints how long zombietop and Airflow each took ("timing: ..."; docs/howto/airflow.md, "What it
looks like, and when").
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.airflow_env import need_venv
from tests.airflow_scheduler import DAGS, HEARTBEAT_TIMEOUT, AirflowScheduler, running_airflow
from tests.core.test_watchdog import ListNotifier
from zombietop.config import load_config
from zombietop.health import Flag, Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import Snapshot, TaskView
from zombietop.model import HeartbeatSource, TaskState
from zombietop.procs import PsutilProbe
from zombietop.sources.airflow import AirflowSource
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CONFIG = """\
[thresholds]
start_grace = "30s"
heartbeat_interval = "2s"
heartbeat_timeout = "10s"
progress_timeout = "20s"
idle_timeout = "20s"
queue_timeout = "15s"
"""
"""zombietop's thresholds for Airflow's tasks in these tests."""

POLL = 0.5
"""Seconds between the monitor's polls."""


@dataclass
class Started:
    """The Airflow of this module, and the run of each DAG triggered at its start."""

    airflow: AirflowScheduler
    runs: dict[str, str] = field(default_factory=dict)

    def url(self) -> str:
        return "airflow+" + self.airflow.conn.replace("+psycopg2", "")


ON_POSTGRES = "ZOMBIETOP_AIRFLOW_SCHEDULER_PG"
"""Set (to 1) to run the module a second time with Airflow on the test session's throwaway
PostgreSQL: another Airflow start and every DAG again, a few minutes, so CI sets it
(``.ci/run``) and the local suite skips it."""


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def airflow(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Started]:
    venv = need_venv("3")
    home = tmp_path_factory.mktemp("airflow-home")
    if request.param == "sqlite":
        conn = f"sqlite:///{home / 'airflow.db'}"
    else:
        if not os.environ.get(ON_POSTGRES):
            pytest.skip(f"Airflow's scheduler on PostgreSQL runs with {ON_POSTGRES}=1 (CI)")
        conn = request.getfixturevalue("airflow_pg_template").fresh().conn
    with running_airflow(venv, home, conn) as running:
        started = Started(running)
        for dag_id in DAGS:
            started.runs[dag_id] = running.trigger(dag_id)
        yield started


class Watch:
    """A monitor over the module's Airflow, polled until a task reads as a test waits for."""

    def __init__(self, monitor: Monitor, source: AirflowSource) -> None:
        self.monitor = monitor
        self.source = source
        self.last: Snapshot | None = None

    async def until(
        self, task_id: str, want: Callable[[TaskView], bool], what: str, timeout: float = 120.0
    ) -> tuple[float, TaskView]:
        """The wall time and the view of the first poll where ``want`` holds for ``task_id``."""
        import asyncio

        deadline = time.monotonic() + timeout
        while True:
            snapshot = await self.monitor.poll()
            assert snapshot.ok, snapshot.error
            self.last = snapshot
            view = snapshot.by_id().get(task_id)
            if view is not None and want(view):
                return time.time(), view
            if time.monotonic() > deadline:
                seen = "absent" if view is None else f"{view.health}: {self.words(view)}"
                raise AssertionError(f"gave up after {timeout:g}s waiting for {what}; {seen}")
            await asyncio.sleep(POLL)

    def words(self, view: TaskView) -> str:
        assert self.last is not None and self.last.taken_at is not None
        return view.verdict.context(self.last.taken_at)


@pytest.fixture
async def watch(airflow: Started, tmp_path: Path) -> AsyncIterator[Watch]:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True)
    source = AirflowSource(airflow.url(), heartbeat_timeout=HEARTBEAT_TIMEOUT)
    await source.open()
    try:
        yield Watch(
            Monitor(store, load_config(config), probe=PsutilProbe(), sources=[source]), source
        )
    finally:
        await source.close()
        await store.close()


def timing(what: str, seconds: float) -> None:
    print(f"timing: {what}: {seconds:.1f}s")


def zombietop(airflow: Started, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command line against the module's Airflow, as an on-call engineer runs it."""
    store, config = tmp_path / "cli.db", tmp_path / "config.toml"
    if not config.exists():
        config.write_text(CONFIG)
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(store), "--config", str(config)]
    if not store.exists():
        subprocess.run([*base, "init"], check=True, capture_output=True)
    return subprocess.run(
        [*base, *args[:1], "--source", airflow.url(), *args[1:]],
        capture_output=True,
        text=True,
        timeout=60,
    )


def running(ti: dict[str, Any]) -> bool:
    return ti["state"] == "running" and ti["pid"] is not None


async def test_the_printed_clear_request_starts_try_2(
    airflow: Started, watch: Watch, tmp_path: Path
) -> None:
    dag, run = "zt_clear", airflow.runs["zt_clear"]
    first = airflow.airflow.wait_state(dag, run, "sleep", running, "running")
    task = f"{dag}/sleep/{run}"
    await watch.until(task, lambda v: v.task.state.executing, "zombietop to see it run")

    refused = zombietop(airflow, tmp_path, "resume", task, "--yes")
    assert refused.returncode == 1, refused.stderr
    # A manual run has no logical date: the REST form, the only one that can name the run.
    assert "airflow tasks clear zt_clear" not in refused.stdout
    said = re.search(r"(POST) (/api/v2/\S+) (\{.*?\}), or in the UI", refused.stdout)
    assert said is not None, refused.stdout
    method, path, body = said.group(1), said.group(2), json.loads(said.group(3))

    cleared = airflow.airflow.request(method, path, body)
    assert [ti["task_id"] for ti in cleared["task_instances"]] == ["sleep"]
    second = airflow.airflow.wait_state(
        dag, run, "sleep", lambda ti: running(ti) and ti["try_number"] == 2, "running its try 2"
    )
    assert first["try_number"] == 1 and second["pid"] != first["pid"]
    _, view = await watch.until(task, lambda v: v.task.attempt == 2, "zombietop to see try 2")
    assert view.task.state.executing


async def test_an_orphan_after_a_sigkill_of_the_supervisor(
    airflow: Started, watch: Watch, tmp_path: Path
) -> None:
    """Kill only the supervisor: Airflow marks the task failed once its heartbeat is past the
    timeout, while the task process runs on. zombietop calls it orphaned, and kills it."""
    dag, run = "zt_orphan", airflow.runs["zt_orphan"]
    ti = airflow.airflow.wait_state(dag, run, "sleep", running, "running")
    task, pid = f"{dag}/sleep/{run}", int(ti["pid"])
    await watch.until(task, lambda v: v.process is not None, "zombietop to probe it")
    supervisor = psutil.Process(pid).ppid()
    os.kill(supervisor, signal.SIGKILL)
    killed = time.time()

    at, view = await watch.until(task, lambda v: v.health is Health.ORPHANED, "orphaned", 180)
    failed = view.task.finished_at
    assert view.task.state is TaskState.FAILED and failed is not None
    timing("orphan: Airflow marked it failed after the SIGKILL", failed - killed)
    timing("orphan: zombietop said orphaned after Airflow's end_date", at - failed)
    words = watch.words(view)
    assert f"orphaned: pid {pid} alive " in words, words
    assert "after Airflow marked it failed" in words and words.endswith(" - kill it"), words
    assert psutil.pid_exists(pid)

    ended = zombietop(airflow, tmp_path, "kill", task, "--yes")
    assert ended.returncode == 0, ended.stdout + ended.stderr
    _, view = await watch.until(task, lambda v: v.health is Health.FAILED, "failed, not orphaned")
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_an_idle_task_under_a_beating_supervisor_is_stalled(
    airflow: Started, watch: Watch
) -> None:
    """time.sleep(3600) in a PythonOperator: the supervisor beats, the task process idles."""
    dag, run = "zt_idle", airflow.runs["zt_idle"]
    airflow.airflow.wait_state(dag, run, "sleep", running, "running")
    task = f"{dag}/sleep/{run}"
    began, _ = await watch.until(task, lambda v: v.process is not None, "zombietop to probe it")
    at, view = await watch.until(task, lambda v: v.health is Health.STALLED, "stalled", 120)
    timing("idle: stalled after the first sample (idle_timeout 20s)", at - began)
    assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.SUPERVISOR
    assert view.verdict.reasons[0].code == "process_idle"
    assert (
        view.verdict.reasons[0]
        .words(time.time())
        .startswith("supervisor beats; task process idle ")
    )
    words = watch.words(view)
    assert "p=?" not in words and "(no CPU, no I/O)" in words, words
    # The task after it, made with the run and in no state yet, waits on it: the upstream read
    # from the DAG version the scheduler made the run with.
    assert watch.last is not None
    then = watch.last.by_id()[f"{dag}/then/{run}"]
    assert then.task.upstream == (task,)
    assert then.waiting_on == ((task, Health.STALLED),)


async def test_a_task_stuck_in_a_pool_without_slots_is_queued_too_long(
    airflow: Started, watch: Watch
) -> None:
    """A pool of 0 slots: the task stays scheduled. zombietop flags it past queue_timeout
    (15 s here), with the pool and its open slots."""
    dag, run = "zt_pool", airflow.runs["zt_pool"]
    airflow.airflow.wait_state(dag, run, "wait", lambda ti: ti["state"] == "scheduled", "scheduled")
    task = f"{dag}/wait/{run}"
    at, view = await watch.until(
        task, lambda v: Flag.QUEUED_TOO_LONG in v.verdict.flags, "queued_too_long", 120
    )
    # The flag comes at the first poll past queue_timeout; the module ran other tests first,
    # so the task has waited longer than that by the time this test looks.
    timing(
        "pool: queued_too_long at its first poll, the task scheduled for", at - view.task.created_at
    )
    assert view.health is Health.QUEUED
    words = watch.words(view)
    assert f"{task} queued, queued_too_long: queued " in words, words
    assert "(queue timeout 15s): airflow state scheduled, pool zt_empty: 0 of 0 slots open" in words


@dataclass
class Dog:
    """A watchdog over the module's Airflow, looked through by hand (``look``)."""

    watchdog: Watchdog
    notifier: ListNotifier

    async def look(self) -> list[tuple[str, str | None, str]]:
        """One look; the pages it sent (kind, task, line)."""
        before = len(self.notifier.pages)
        await self.watchdog.tick()
        return [(p.kind, p.task_id, p.shown) for p in self.notifier.pages[before:]]


@pytest.fixture
async def dog(airflow: Started, tmp_path: Path) -> AsyncIterator[Dog]:
    """A watchdog at the documented [watch] defaults, zombietop's thresholds as above."""
    config = tmp_path / "dog.toml"
    config.write_text(CONFIG)
    cfg = load_config(config)
    store = await SQLiteStore.open(tmp_path / "dog.db", create=True)
    source = AirflowSource(airflow.url(), heartbeat_timeout=HEARTBEAT_TIMEOUT)
    await source.open()
    notifier = ListNotifier()
    monitor = Monitor(store, cfg, probe=PsutilProbe(), sources=[source])
    try:
        yield Dog(
            Watchdog(monitor, cfg, executor=None, notifiers=[notifier], log=lambda _: None),
            notifier,
        )
    finally:
        await source.close()
        await store.close()


def upstream_failed(ti: dict[str, Any]) -> bool:
    return bool(ti["state"] == "upstream_failed")


async def test_a_failure_pages_once_naming_what_it_blocks(
    airflow: Started, watch: Watch, dog: Dog, tmp_path: Path
) -> None:
    """fe_fail: extract raises (no retries), Airflow marks load_a and load_b upstream_failed.
    One page, for extract; the loads' rows say what holds them."""
    dag, run = "fe_fail", airflow.runs["fe_fail"]
    failed = airflow.airflow.wait_state(
        dag, run, "extract", lambda ti: ti["state"] == "failed", "failed"
    )
    for load in ("load_a", "load_b"):
        airflow.airflow.wait_state(dag, run, load, upstream_failed, "upstream_failed")
    extract, loads = f"{dag}/extract/{run}", [f"{dag}/{t}/{run}" for t in ("load_a", "load_b")]
    _, view = await watch.until(loads[0], lambda v: bool(v.waiting_on), "load_a held by extract")
    assert view.health is Health.FAILED and view.waiting_on == ((extract, Health.FAILED),)
    assert ": airflow state upstream_failed" in watch.words(view), watch.words(view)

    status = zombietop(airflow, tmp_path, "status", "--json")
    tasks = {t["task_id"]: t for t in json.loads(status.stdout)["tasks"]}
    assert (
        tasks[extract]["health"] == "failed"
        and tasks[extract]["source"]["airflow"]["state"] == "failed"
    )
    for load in loads:
        assert tasks[load]["health"] == "failed"
        assert tasks[load]["source"]["airflow"]["state"] == "upstream_failed"
        assert tasks[load]["waiting_on"] == [{"task_id": extract, "health": "failed"}]

    pages = await dog.look()
    looked = time.time()
    mine = [(kind, task, line) for kind, task, line in pages if task and task.startswith(f"{dag}/")]
    assert [(kind, task) for kind, task, _ in mine] == [("incident", extract)], pages
    assert f"; blocks 2: {loads[0]}, {loads[1]}" in mine[0][2], mine
    ended = datetime.fromisoformat(failed["end_date"]).timestamp()
    timing(
        "fe_fail: one page at the watchdog's first look, Airflow's end_date before it",
        looked - ended,
    )
    again = await dog.look()
    assert not [p for p in again if p[1] and p[1].startswith(f"{dag}/")], again


async def test_a_task_waiting_to_retry_is_not_queued_too_long(
    airflow: Started, watch: Watch, dog: Dog, tmp_path: Path
) -> None:
    """fe_fail_retry: extract fails and waits an hour to retry; load_a and load_b wait on it
    in no state. Past queue_timeout (15 s here) none of the three is queued_too_long."""
    dag, run = "fe_fail_retry", airflow.runs["fe_fail_retry"]
    ti = airflow.airflow.wait_state(
        dag, run, "extract", lambda ti: ti["state"] == "up_for_retry", "up_for_retry"
    )
    extract = f"{dag}/extract/{run}"
    ids = [extract, *(f"{dag}/{t}/{run}" for t in ("load_a", "load_b"))]
    # Past queue_timeout since the run began (15 s): the flag would be there by now.
    began = datetime.fromisoformat(ti["start_date"]).timestamp()
    time.sleep(max(0.0, began + 16 - time.time()))
    _, view = await watch.until(extract, lambda v: v.health is Health.QUEUED, "extract queued")
    assert watch.last is not None
    for task in ids:
        seen = watch.last.by_id()[task]
        assert seen.health is Health.QUEUED and not seen.verdict.flags, watch.words(seen)
    assert view.task.state_reason == "airflow state up_for_retry"
    assert watch.last.by_id()[ids[1]].waiting_on == ((extract, Health.QUEUED),)

    status = zombietop(airflow, tmp_path, "status", "--json")
    tasks = {t["task_id"]: t for t in json.loads(status.stdout)["tasks"]}
    assert [(tasks[t]["health"], tasks[t]["flags"]) for t in ids] == [("queued", [])] * 3

    pages = await dog.look()
    assert not [p for p in pages if p[1] and p[1].startswith(f"{dag}/")], pages


async def test_a_fast_failure_between_two_looks_is_paged_at_the_next(
    airflow: Started, dog: Dog
) -> None:
    """A run made and failed between two looks of the watchdog (30 s apart by default) is
    paged at the next look, not at the next full read (10 minutes later)."""
    await dog.look()
    dag = "fe_fail"
    run = airflow.airflow.trigger(dag)
    failed = airflow.airflow.wait_state(
        dag, run, "extract", lambda ti: ti["state"] == "failed", "failed"
    )
    for load in ("load_a", "load_b"):
        airflow.airflow.wait_state(dag, run, load, upstream_failed, "upstream_failed")
    pages = await dog.look()
    looked = time.time()
    extract = f"{dag}/extract/{run}"
    assert [(k, t) for k, t, _ in pages if t and run in t] == [("incident", extract)], pages
    ended = datetime.fromisoformat(failed["end_date"]).timestamp()
    timing("fast failure: paged at the next look, Airflow's end_date before it", looked - ended)
