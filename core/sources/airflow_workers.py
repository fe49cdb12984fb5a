"""Airflow's own processes in the workers list (``W``): its schedulers, triggerers and DAG
processors, and in Airflow 2 the LocalTaskJob that runs each task instance.

Airflow keeps each one's heartbeat in its ``job`` table (``sql/airflow_*.sql``,
``airflow_jobs_v3`` and ``airflow_jobs_v2``). A job in state ``running`` whose last heartbeat is
older than Airflow's own health threshold for its type (``THRESHOLDS``, Airflow's defaults) is
gone: Airflow itself calls it dead then (``Job.is_alive``). Each holds the task instances the
schema links to it: a scheduler the queued and running ones it queued (``queued_by_job_id``,
which Airflow adopts from a scheduler that died), a triggerer the deferred ones whose trigger
it runs, a LocalTaskJob its running task instance (``job_id``). Airflow records no pid for a
job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from zombietop.durations import format_age
from zombietop.rows import Row
from zombietop.sources.base import EngineWorker
from zombietop.sources.engine_text import bounded_id

THRESHOLDS: dict[str, tuple[str, float, str]] = {
    "SchedulerJob": ("scheduler", 30.0, "scheduler_health_check_threshold"),
    "TriggererJob": ("triggerer", 30.0, "triggerer_health_check_threshold"),
    "DagProcessorJob": ("dag-processor", 30.0, "[dag_processor] health_check_threshold"),
    "LocalTaskJob": ("task-runner", 10.5, "2.1 x job_heartbeat_sec"),
}
"""By Airflow's job type: the word the list names it by, the seconds without a heartbeat after
which Airflow calls it dead (its defaults), and the setting they come from (short: a gone
job's line in the list names it)."""

GONE_KEPT = 3600.0
"""Seconds a gone job that holds no task instance stays in the list after its last heartbeat
(Airflow leaves a killed job's row ``running`` for ever)."""


def job_worker(
    row: Row, *, source: str, now: float, epoch: Callable[[Any], float | None]
) -> EngineWorker:
    """One running job of Airflow's as one line of the workers list; ``epoch`` reads its
    heartbeat as epoch seconds, ``now`` is on the same clock."""
    word, threshold, setting = THRESHOLDS.get(row["job_type"], ("job", 30.0, "a default"))
    host = bounded_id(row["hostname"]) if row["hostname"] else None
    beat = epoch(row["latest_heartbeat"])
    silent = None if beat is None else max(now - beat, 0.0)
    gone = silent is None or silent > threshold
    why = ""
    if gone:
        since = "never" if silent is None else f"for {format_age(silent)}"
        why = (
            f"no heartbeat {since}, over Airflow's {format_age(threshold)} ({setting}), "
            f"job {row['id']}"
        )
    return EngineWorker(
        name=f"{word}@{host or '?'}",
        kind="airflow",
        source=source,
        host=host,
        pid=None,
        last_beat=beat,
        holds=int(row["holds"] or 0),
        gone=gone,
        why=why,
    )


def job_workers(
    rows: Iterable[Row], *, source: str, now: float, epoch: Callable[[Any], float | None]
) -> tuple[EngineWorker, ...]:
    """Every running job of ``rows`` as the workers list shows it."""
    return tuple(job_worker(row, source=source, now=now, epoch=epoch) for row in rows)
