"""One page per root cause for Airflow's tasks: the DAG's shape comes from Airflow itself.

A real DAG file (``a >> [b, c]``, ``b >> d``) is parsed and written into ``serialized_dag`` by
Airflow's own ``airflow dags reserialize`` (Airflow 3 plain on SQLite and compressed on
PostgreSQL, Airflow 2 compressed, as ``[core] compress_serialized_dags`` makes it), and its task instances through Airflow's own tables. When
``a`` stalls, the watchdog pages ``a`` once, naming the three task instances it blocks.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.airflow_env import AirflowDatabase
from tests.core.test_watchdog import ListNotifier, config
from zombietop.clock import FakeClock
from zombietop.judge.monitor import Monitor
from zombietop.sources.airflow import AirflowSource
from zombietop.sources.airflow_waits import Shape, decoded, parse, upstream_of, upstream_waits
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

pytestmark = pytest.mark.slow

DAG_FILE = """
from datetime import datetime
try:
    from airflow.sdk import DAG
except ImportError:
    from airflow import DAG
try:
    from airflow.providers.standard.operators.empty import EmptyOperator
except ImportError:
    from airflow.operators.empty import EmptyOperator

with DAG("pipeline", start_date=datetime(2026, 12, 1), schedule=None):
    a, b, c, d = (EmptyOperator(task_id=name) for name in "abcd")
    a >> [b, c]
    b >> d
"""
RUN = "manual__2026-12-01"
A, B, C, D = (f"pipeline/{name}/{RUN}" for name in "abcd")


def pipeline_rows(now: float) -> list[dict[str, Any]]:
    """``a`` running on another worker, its last heartbeat 15 minutes old (past Airflow's
    300 s); ``b``, ``c`` and ``d`` made with the run two hours ago, waiting on it."""
    run = {"dag_id": "pipeline", "run_id": RUN, "operator": "EmptyOperator"}
    waiting = {**run, "state": None, "updated_at": now - 7200}
    return [
        {**run, "task_id": "a", "state": "running", "hostname": "worker-7", "pid": 4120,
         "start_date": now - 3600, "last_heartbeat_at": now - 900},
        *({**waiting, "task_id": name} for name in "bcd"),
    ]  # fmt: skip


def failed_rows(now: float) -> list[dict[str, Any]]:
    """``a`` failed a minute ago, and Airflow marked ``b``, ``c`` and ``d`` upstream_failed
    (stamping that moment as their start and end, as its ``set_state`` does)."""
    run = {"dag_id": "pipeline", "run_id": RUN, "operator": "EmptyOperator"}
    gave_up = {**run, "state": "upstream_failed", "start_date": now - 59, "end_date": now - 59}
    return [
        {**run, "task_id": "a", "state": "failed", "hostname": "worker-7", "pid": 4120,
         "start_date": now - 65, "end_date": now - 60},
        *({**gave_up, "task_id": name} for name in "bcd"),
    ]  # fmt: skip


def waiting_rows(now: float) -> list[dict[str, Any]]:
    """Two hours in: ``a`` waits to retry, ``b``, ``c`` and ``d`` wait on it in no state;
    another run's ``a`` has been scheduled for two hours (its row touched a second ago)."""
    run = {"dag_id": "pipeline", "run_id": RUN, "operator": "EmptyOperator"}
    return [
        {**run, "task_id": "a", "state": "up_for_retry", "hostname": "worker-7", "pid": 4120,
         "try_number": 1, "start_date": now - 7200, "end_date": now - 7190,
         "queued_dttm": now - 7201, "updated_at": now - 7190},
        *({**run, "task_id": name, "state": None, "updated_at": now - 7200} for name in "bcd"),
        {**run, "run_id": RUN2, "task_id": "a", "state": "scheduled",
         "scheduled_dttm": now - 7100, "updated_at": now - 1},
    ]  # fmt: skip


RUN2 = "manual__2026-12-02"


def serialize_pipeline(
    airflow: AirflowDatabase,
    tmp_path: Path,
    now: float,
    compress: bool,
    rows: Callable[[float], list[dict[str, Any]]] = pipeline_rows,
) -> None:
    """The pipeline DAG serialized by Airflow, then its run written."""
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "pipeline.py").write_text(DAG_FILE)
    airflow.serialize(dags, compress=compress)
    airflow.write(rows(now))


@pytest.fixture
def pipeline(airflow_sqlite: AirflowDatabase, tmp_path: Path, fake_clock: FakeClock) -> Path:
    """The pipeline on SQLite (Airflow 2's compressed); the database's path."""
    serialize_pipeline(airflow_sqlite, tmp_path, fake_clock.now(), airflow_sqlite.major == "2")
    assert airflow_sqlite.path is not None
    return airflow_sqlite.path


async def _pages(
    airflow: AirflowDatabase, tmp_path: Path, clock: FakeClock, *, group: bool = True
) -> list[tuple[str, str | None, str]]:
    """What a watchdog on the Airflow database pages in two ticks."""
    store = await SQLiteStore.open(tmp_path / f"zombietop-{group}.db", create=True, clock=clock)
    source = AirflowSource(airflow.url, clock=clock)
    await source.open()
    cfg = config()
    cfg = replace(cfg, watch=replace(cfg.watch, group_by_upstream=group))
    notifier = ListNotifier()
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, sources=[source]),
        cfg,
        executor=None,
        notifiers=[notifier],
        clock=clock,
        log=lambda _: None,
    )
    try:
        await dog.tick()
        clock.advance(30)
        await dog.tick()
    finally:
        await source.close()
        await store.close()
    return [(page.kind, page.task_id, page.shown) for page in notifier.pages]


async def test_a_stalled_upstream_pages_once_for_the_task_instances_it_blocks(
    airflow_sqlite: AirflowDatabase, pipeline: Path, tmp_path: Path, fake_clock: FakeClock
) -> None:
    pages = await _pages(airflow_sqlite, tmp_path, fake_clock)
    assert [(kind, task) for kind, task, _ in pages] == [("incident", A)]
    shown = pages[0][2]
    assert shown.startswith(f"{A} stalled: ")
    assert f"; blocks 3: {B}, {C}, {D}" in shown

    # Task instances in no state wait on their upstream, not in a queue: no queue timeout.
    alone = await _pages(airflow_sqlite, tmp_path, fake_clock, group=False)
    assert [(kind, task) for kind, task, _ in alone] == [("incident", A)]
    assert "blocks" not in alone[0][2]


async def test_a_failure_pages_once_for_the_upstream_failed_task_instances(
    airflow_sqlite: AirflowDatabase, tmp_path: Path, fake_clock: FakeClock
) -> None:
    """``a`` fails, Airflow marks the rest upstream_failed: one page, for ``a``, naming them."""
    serialize_pipeline(airflow_sqlite, tmp_path, fake_clock.now(), False, failed_rows)
    pages = await _pages(airflow_sqlite, tmp_path, fake_clock)
    assert [(kind, task) for kind, task, _ in pages] == [("incident", A)]
    assert pages[0][2].startswith(f"{A} failed: after 5s; blocks 3: {B}, {C}, {D} - "), pages

    # Without grouping each one pages its own failure, and says it never ran.
    alone = await _pages(airflow_sqlite, tmp_path, fake_clock, group=False)
    assert sorted((kind, task) for kind, task, _ in alone) == [
        ("incident", t) for t in (A, B, C, D)
    ]
    assert next(shown for _, task, shown in alone if task == B).startswith(
        f"{B} failed: airflow state upstream_failed"
    )


async def test_the_held_failures_stay_held_once_the_upstream_is_all_clear(
    airflow_sqlite: AirflowDatabase, tmp_path: Path, fake_clock: FakeClock
) -> None:
    """A later run of ``a`` succeeds before the later ``b``, ``c`` and ``d`` do: ``a``'s
    failure is over (all-clear), and the failures it spoke for are not paged after it."""
    now = fake_clock.now()
    serialize_pipeline(airflow_sqlite, tmp_path, now, False, failed_rows)
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=fake_clock)
    source = AirflowSource(airflow_sqlite.url, clock=fake_clock)
    await source.open()
    cfg = config()
    notifier = ListNotifier()
    dog = Watchdog(
        Monitor(store, cfg, clock=fake_clock, sources=[source]),
        cfg,
        executor=None,
        notifiers=[notifier],
        clock=fake_clock,
        log=lambda _: None,
    )
    try:
        await dog.tick()
        assert [(p.kind, p.task_id) for p in notifier.pages] == [("incident", A)]
        later = {"dag_id": "pipeline", "run_id": RUN2, "operator": "EmptyOperator"}
        airflow_sqlite.write([
            {**later, "task_id": "a", "state": "success", "start_date": now + 10,
             "end_date": now + 20},
            *({**later, "task_id": t, "state": None, "updated_at": now + 20} for t in "bcd"),
        ])  # fmt: skip
        fake_clock.advance(30)
        await dog.tick()
    finally:
        await source.close()
        await store.close()
    assert [(p.kind, p.task_id) for p in notifier.pages] == [("incident", A), ("all_clear", A)]


async def test_only_a_task_instance_waiting_for_a_slot_is_queued_too_long(
    airflow_sqlite: AirflowDatabase, tmp_path: Path, fake_clock: FakeClock
) -> None:
    """Waiting to retry, or on an upstream that does: not stuck. Scheduled for two hours:
    stuck, counted from Airflow's scheduled time however recently its row changed."""
    serialize_pipeline(airflow_sqlite, tmp_path, fake_clock.now(), False, waiting_rows)
    pages = await _pages(airflow_sqlite, tmp_path, fake_clock, group=False)
    if airflow_sqlite.major == "2":
        # Airflow 2 records no scheduled time: the wait counts from the row's last change.
        assert pages == []
        return
    scheduled = f"pipeline/a/{RUN2}"
    assert [(kind, task) for kind, task, _ in pages] == [("queued_too_long", scheduled)]
    assert pages[0][2].startswith(f"{scheduled} queued, queued_too_long: queued 1h58m"), pages


async def test_on_postgresql_the_compressed_shape_is_read_in_read_only_transactions(
    airflow_postgres: AirflowDatabase, tmp_path: Path, fake_clock: FakeClock
) -> None:
    serialize_pipeline(airflow_postgres, tmp_path, fake_clock.now(), True)
    pages = await _pages(airflow_postgres, tmp_path, fake_clock)
    assert [(kind, task) for kind, task, _ in pages] == [("incident", A)]
    assert f"; blocks 3: {B}, {C}, {D}" in pages[0][2]


async def test_a_broken_serialized_dag_leaves_no_upstream_and_says_why(
    airflow_sqlite: AirflowDatabase, pipeline: Path, tmp_path: Path, fake_clock: FakeClock
) -> None:
    source = AirflowSource(airflow_sqlite.url, clock=fake_clock)
    await source.open()
    try:
        first = {r.record.task.task_id: r.record.task for r in await source.poll(None, "here")}
        assert first[B].upstream == (A,) and first[D].upstream == (B,)
        assert first[A].upstream == ()  # running: past its upstream
        # The same hash is the same DAG: kept as parsed, not read again.
        _break(pipeline, new_hash=False)
        kept = {r.record.task.task_id: r.record.task for r in await source.poll(None, "here")}
        assert kept[D].upstream == (B,)
        _break(pipeline, new_hash=True)
        broken = {r.record.task.task_id: r.record.task for r in await source.poll(None, "here")}
    finally:
        await source.close()
    assert broken[A].state_reason is None
    for task in (B, C, D):
        assert broken[task].upstream == ()
        reason = broken[task].state_reason or ""
        assert reason.startswith("airflow state none, upstream unknown: serialized DAG pipeline ")
        assert "unreadable (not JSON" in reason


def _break(path: Path, *, new_hash: bool) -> None:
    """Write what is no JSON into the pipeline's serialized DAG, as a bad migration could."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE serialized_dag SET data = 'nope', data_compressed = CASE WHEN "
            "data_compressed IS NULL THEN NULL ELSE x'00' END"
            + (", dag_hash = 'broken'" if new_hash else "")
        )
    conn.close()


SERIALIZED = {
    "__version": 3,
    "dag": {
        "dag_id": "fan",
        "tasks": [
            {"__type": "operator", "__var": {"task_id": "split", "downstream_task_ids": ["map"]}},
            {"__type": "operator", "__var": {"task_id": "map", "downstream_task_ids": ["join"]}},
            {"__type": "operator", "__var": {"task_id": "join"}},
        ],
    },
}


def _row(task: str, state: str | None, map_index: int = -1) -> dict[str, Any]:
    return {"dag_id": "fan", "task_id": task, "run_id": "r", "map_index": map_index,
            "state": state, "dag_version": "v1"}  # fmt: skip


def test_the_upstream_of_mapped_and_unmapped_task_instances() -> None:
    shape = parse("fan", json.dumps(SERIALIZED), None)
    assert shape.upstream == {"split": frozenset(), "map": {"split"}, "join": {"map"}}
    compressed = zlib.compress(json.dumps(SERIALIZED).encode())
    assert parse("fan", "null", compressed) == shape
    rows = [
        _row("split", "running"),
        *(_row("map", "running", i) for i in range(2)),
        _row("join", None),
        _row("map", "scheduled", 2),
    ]
    found = upstream_waits(rows, {"v1": shape})
    # join waits on every map index; map[2] on split; the running ones on nothing.
    assert found.upstream == {
        ("fan", "join", "r", -1): tuple(("fan", "map", "r", i) for i in (0, 1, 2)),
        ("fan", "map", "r", 2): (("fan", "split", "r", -1),),
    }
    unknown = upstream_waits(rows, {}, unread="upstream unknown: cannot read")
    assert unknown.upstream == {}
    assert unknown.notes[("fan", "join", "r", -1)] == "upstream unknown: cannot read"
    # In one mapped task group, map index 1 waits on its own index of the task before it.
    group = [_row("map", "running", 0), _row("map", "running", 1), _row("join", "queued", 1)]
    assert upstream_waits(group, {"v1": shape}).upstream == {
        ("fan", "join", "r", 1): (("fan", "map", "r", 1),)
    }


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ('{"dag": {}}', "no dag.tasks list"),
        ('{"dag": {"tasks": [{"__var": {}}]}}', "a task without a task_id"),
        ('{"dag": {"tasks": [{"task_id": "a", "downstream_task_ids": "b"}]}}', "not a list"),
        ("{", "not JSON"),
    ],
)
def test_serialized_dags_that_do_not_read_as_airflow_writes_them(data: str, problem: str) -> None:
    shape = parse("d\x1b[2J", data, None)
    assert shape.upstream == {} and shape.problem is not None
    assert problem in shape.problem and "\x1b" not in shape.problem
    assert decoded(None, None) is None
    with pytest.raises(ValueError, match=r"no dag\.tasks list"):
        upstream_of(None)
    assert Shape().problem is None
