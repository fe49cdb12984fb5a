"""An Airflow 3 metadata database made by hand: the tables and columns zombietop reads, and
nothing else. For tests about files, users and failures, which need no Airflow venv (those
about what Airflow itself writes use ``tests/airflow_env.py``)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

SCHEMA = """
CREATE TABLE alembic_version (version_num TEXT);
INSERT INTO alembic_version VALUES ('29ce7909c52b');
CREATE TABLE dag_run (
    id INTEGER PRIMARY KEY, dag_id TEXT, run_id TEXT, logical_date TEXT, state TEXT
);
CREATE TABLE task_instance (
    dag_id TEXT, task_id TEXT, run_id TEXT, map_index INTEGER DEFAULT -1,
    try_number INTEGER, state TEXT, hostname TEXT, pid INTEGER, operator TEXT,
    custom_operator_name TEXT, start_date TEXT, end_date TEXT, queued_dttm TEXT, scheduled_dttm TEXT,
    updated_at TEXT, last_heartbeat_at TEXT, dag_version_id TEXT,
    UNIQUE (dag_id, task_id, run_id, map_index)
);
CREATE TABLE serialized_dag (
    dag_version_id TEXT UNIQUE, dag_id TEXT, dag_hash TEXT, data TEXT, data_compressed BLOB
);
CREATE INDEX ti_state ON task_instance (state);
CREATE INDEX ti_state_lkp ON task_instance (dag_id, task_id, run_id, state);
CREATE INDEX ti_dag_run ON task_instance (dag_id, run_id);
CREATE UNIQUE INDEX dag_run_key ON dag_run (dag_id, run_id);
"""
"""Airflow 3's tables as zombietop reads them, with the indexes Airflow has that it reads by."""


def utc_text(when: float) -> str:
    """An epoch time as SQLAlchemy writes Airflow's UtcDateTime columns on SQLite."""
    return datetime.fromtimestamp(when, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def add_task(path: Path, task_id: str) -> None:
    """A write as whoever runs this: Airflow queueing one task instance of DAG ``etl``."""
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO task_instance (dag_id, task_id, run_id, state, try_number) "
        "VALUES ('etl', ?, 'r', 'queued', 1)",
        (task_id,),
    )
    conn.commit()
    conn.close()


def add_running(path: Path, task_id: str, *, started: float, beat: float) -> None:
    """A running task instance of DAG ``etl`` on a worker elsewhere, its last beat at ``beat``."""
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO task_instance (dag_id, task_id, run_id, state, try_number, hostname, pid, "
        "start_date, updated_at, last_heartbeat_at) "
        "VALUES ('etl', ?, 'r', 'running', 1, 'worker-7', 4121, ?, ?, ?)",
        (task_id, utc_text(started), utc_text(beat), utc_text(beat)),
    )
    conn.commit()
    conn.close()


def add_finished(path: Path, count: int) -> None:
    """``count`` old successful task instances of DAG ``big``: a file of some size."""
    conn = sqlite3.connect(path)
    conn.executemany(
        "INSERT INTO task_instance (dag_id, task_id, run_id, state) VALUES ('big', ?, 'r', "
        "'success')",
        [(f"t{i:06d}",) for i in range(count)],
    )
    conn.commit()
    conn.close()


def make_database(path: Path, journal: str) -> None:
    """The tables in ``journal`` mode (``wal`` as Airflow sets it, or ``delete``), and one
    queued task instance, ``etl/extract/r``."""
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.executescript(SCHEMA)
    conn.close()
    add_task(path, "extract")
