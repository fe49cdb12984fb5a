"""Each poll reads Airflow through its indexes, and a full read only now and then (issue 29,
item 9.4): the same task instances as a full read every poll, without a scan of the table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.airflow_by_hand import add_running, add_task, make_database, utc_text
from tests.airflow_env import AirflowDatabase
from zombietop.clock import FakeClock
from zombietop.sources.airflow import AirflowSource
from zombietop.sources.airflow_reads import FULL_READ_EVERY
from zombietop.store.queries import load


def _update(path: Path, sql: str, *args: object) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


async def _ids(source: AirflowSource, since: float) -> dict[str, str]:
    found = await source.poll(since, "here")
    return {one.record.task.task_id: one.record.task.state.value for one in found}


async def test_the_newly_finished_are_read_by_key_and_the_old_forgotten(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    path = tmp_path / "airflow.db"
    make_database(path, "delete")  # etl/extract/r, queued
    now = fake_clock.now()
    add_running(path, "load", started=now - 60, beat=now)
    add_task(path, "done")
    _update(path, "UPDATE task_instance SET state = 'success', end_date = ? WHERE task_id = 'done'",
            utc_text(now - 10))  # fmt: skip
    source = AirflowSource(f"airflow+sqlite:///{path}", clock=fake_clock)
    await source.open()
    try:
        window = 100.0
        assert await _ids(source, now - window) == {
            "etl/extract/r": "queued", "etl/load/r": "running", "etl/done/r": "succeeded",
        }  # fmt: skip
        # load fails; a new one queues; done is cleared and runs again; none is a full read.
        _update(path, "UPDATE task_instance SET state = 'failed', end_date = ? "
                "WHERE task_id = 'load'", utc_text(now + 1))  # fmt: skip
        add_task(path, "fresh")
        fake_clock.advance(2)
        assert await _ids(source, now + 2 - window) == {
            "etl/extract/r": "queued", "etl/load/r": "failed", "etl/done/r": "succeeded",
            "etl/fresh/r": "queued",
        }  # fmt: skip
        # done ended before the window: forgotten; load is remembered, not read again.
        fake_clock.advance(window)
        _update(path, "DELETE FROM task_instance WHERE task_id = 'load'")
        assert await _ids(source, now + 0.5) == {
            "etl/extract/r": "queued", "etl/load/r": "failed", "etl/fresh/r": "queued",
        }  # fmt: skip
        # The next full read sees what the indexed ones cannot (a deleted row, here).
        fake_clock.advance(FULL_READ_EVERY)
        assert await _ids(source, now + 0.5) == {"etl/extract/r": "queued", "etl/fresh/r": "queued"}
    finally:
        await source.close()


@pytest.mark.slow
def test_the_indexed_read_scans_no_table(airflow_sqlite: AirflowDatabase) -> None:
    """On the schema Airflow itself migrated (3 and 2): the plan SQLite makes is searches by
    ti_state, by key and by DAG run, never a scan of task_instance or dag_run."""
    assert airflow_sqlite.path is not None
    query = load("airflow_sqlite", package="zombietop.sources")[
        f"airflow_task_instances_indexed_v{airflow_sqlite.major}"
    ]
    conn = sqlite3.connect(airflow_sqlite.path)
    try:
        plan = [
            row[3]
            for row in conn.execute(
                f"EXPLAIN QUERY PLAN {query}", ('[["d", "t", "r", -1]]', 41, utc_text(0))
            )
        ]
    finally:
        conn.close()
    said = "\n".join(plan)
    assert "SEARCH ti USING INDEX ti_state (state=?)" in said, said
    assert not [step for step in plan if step.startswith(("SCAN ti", "SCAN r"))], said


async def test_a_run_made_and_failed_between_two_polls_is_read_at_the_next(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    """A task that fails within a second of its DAG run's start was never unfinished at a
    read: the next indexed read finds it through its new run, not the full read 10 minutes
    later (a watchdog paged such failures 7-10 minutes late)."""
    path = tmp_path / "airflow.db"
    make_database(path, "delete")  # etl/extract/r, queued
    _update(
        path, "INSERT INTO dag_run (id, dag_id, run_id, state) VALUES (1, 'etl', 'r', 'running')"
    )
    source = AirflowSource(f"airflow+sqlite:///{path}", clock=fake_clock)
    await source.open()
    now = fake_clock.now()
    try:
        assert await _ids(source, now - 100) == {"etl/extract/r": "queued"}
        # Between two polls: a new run of DAG fast, its task made, run and failed, the run too.
        _update(path, "INSERT INTO dag_run (id, dag_id, run_id, state) "
                "VALUES (2, 'fast', 'm', 'failed')")  # fmt: skip
        _update(path, "INSERT INTO task_instance (dag_id, task_id, run_id, state, try_number, "
                "end_date) VALUES ('fast', 'boom', 'm', 'failed', 1, ?)", utc_text(now + 1))  # fmt: skip
        fake_clock.advance(30)
        assert await _ids(source, now + 30 - 100) == {
            "etl/extract/r": "queued", "fast/boom/m": "failed",
        }  # fmt: skip
        # A task of an older run that is not running, made and finished between two polls,
        # waits for the full read: no index finds it.
        _update(path, "INSERT INTO task_instance (dag_id, task_id, run_id, state, try_number, "
                "end_date) VALUES ('fast', 'late', 'm', 'failed', 1, ?)", utc_text(now + 31))  # fmt: skip
        fake_clock.advance(30)
        assert "fast/late/m" not in await _ids(source, now + 60 - 100)
    finally:
        await source.close()
