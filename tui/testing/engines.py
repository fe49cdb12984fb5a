"""Three engines side by side: Airflow's task instances, a Celery broker's tasks and zombietop's
own tasks, in one snapshot at ``NOW``.

The Airflow and Celery records are made by the sources' own mapping functions
(``task_instance_record``, ``celery_reports.records``) from fake rows and fake worker answers,
and judged with the limits each source gives its step types, as the monitor does; only the
reading of the engines is skipped. The snapshot test and ``scripts/export_screenshots.py`` both
draw it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from zombietop.judge.monitor import Snapshot, build_snapshot
from zombietop.judge.source_limits import JudgingConfig
from zombietop.model import TaskRecord
from zombietop.sources import Source
from zombietop.sources.airflow import AirflowSource, task_instance_record
from zombietop.sources.base import Origin, SourceRecord
from zombietop.sources.celery import CelerySource
from zombietop.sources.celery_reports import ACTIVE, RESERVED, Reads, Sighting, Unacked, records
from zombietop.tui.testing.builders import HOST, NOW, M, sample_config
from zombietop.tui.testing.fleet import sample_records, sample_samples

AIRFLOW_URL = "airflow+postgresql://zombietop@airflow-db/airflow"
CELERY_URL = "celery+redis://broker:6379/0"
OWN = ("thumbs-7781", "ingest-5119", "train-0008", "backup-0731")
"""The sample fleet's tasks shown beside the engines': stalled, two healthy, failed."""

_RUN = "scheduled__2026-11-29T04:00:00+00:00"


def _airflow_rows() -> list[dict[str, Any]]:
    base = {
        "dag_id": "nightly_etl",
        "run_id": _RUN,
        "map_index": -1,
        "try_number": 1,
        "operator": "PythonOperator",
        "custom_operator_name": None,
        "pid": None,
        "hostname": "",
        "start_date": None,
        "end_date": None,
        "heartbeat_at": None,
        "queued_dttm": None,
        "scheduled_dttm": None,
        "updated_at": None,
        "logical_date": NOW - 6 * 3600,
    }
    return [
        {**base, "task_id": "transform", "state": "running", "hostname": "worker-7", "pid": 4121,
         "start_date": NOW - 3000, "heartbeat_at": NOW - 912, "try_number": 2},
        {**base, "task_id": "score", "state": "running", "hostname": "worker-3", "pid": 5230,
         "start_date": NOW - 400, "heartbeat_at": NOW - 4},
        {**base, "task_id": "publish", "state": "queued", "queued_dttm": NOW - 30},
    ]  # fmt: skip


def _as_postgresql(row: dict[str, Any]) -> dict[str, Any]:
    """The row as PostgreSQL returns it: its times as datetimes."""
    return {
        k: datetime.fromtimestamp(v, tz=UTC) if isinstance(v, float) else v for k, v in row.items()
    }


def _celery_reads() -> Reads:
    """One worker that answers (a task running, one reserved behind it), and a message a worker
    took 40 minutes ago that no worker reports: delivered, never acknowledged."""
    worker = "celery@worker-9"
    running = Sighting(
        task_id="5f2c9a41-8d3e-4b7a-9c11-2e6f0a7b3d58",
        name="billing.charge_cards",
        queue="billing",
        worker=worker,
        listed=ACTIVE,
        worker_pid=9311,
        time_start=NOW - 4 * M,
    )
    waiting = Sighting(
        task_id="a07e3c52-1b9f-4e2d-8a64-7c5d9e0f1a23",
        name="billing.send_receipts",
        queue="billing",
        worker=worker,
        listed=RESERVED,
    )
    lost = Unacked(
        task_id="c3d8e1f0-6a2b-4c9d-b7e5-0f1a2b3c4d5e", name="reports.render_pdf",
        queue="reports", delivered_at=NOW - 40 * M,
    )  # fmt: skip
    return Reads(read_at=NOW, answered={worker: (running, waiting)}, unacked=(lost,))


def engines_snapshot() -> Snapshot:
    """zombietop's own tasks, Airflow's and Celery's, judged together at ``NOW``."""
    airflow = AirflowSource(AIRFLOW_URL)
    celery = CelerySource(CELERY_URL)
    local = frozenset({HOST})
    read: list[tuple[Source, SourceRecord]] = [
        (airflow, task_instance_record(row, source=airflow.name, host=HOST, local=local, now=NOW))
        for row in map(_as_postgresql, _airflow_rows())
    ]
    reads = _celery_reads()
    read += [
        (celery, one)
        for one in records(
            reads,
            {},
            visibility_timeout=celery.visibility_timeout,
            heartbeat_timeout=celery.heartbeat_timeout,
            source=celery.name,
            host=HOST,
            local=local,
        )
    ]
    own: list[TaskRecord] = [r for r in sample_records() if r.task.task_id in OWN]
    owners = {one.record.task.task_id: source for source, one in read}
    origins: dict[str, Origin] = {one.record.task.task_id: one.origin for _, one in read}
    theirs = [one.record for _, one in read]
    config = JudgingConfig()(sample_config(), [r.task for r in theirs], owners)
    samples = {k: v for k, v in sample_samples().items() if k in OWN}
    snapshot = build_snapshot(NOW, [*own, *theirs], config, samples)
    return replace(snapshot, origins=origins)
