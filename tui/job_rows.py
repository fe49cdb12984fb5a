"""The jobs view's rows from one snapshot and the store's latest ended runs: what both the
dashboard's jobs view (``J``) and ``zombietop jobs`` show.

A large store's quiet tasks, counted and not listed (``zombietop.judge.quiet``), are never runs
of a job, so no row here lacks one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from zombietop.config import Schedule
from zombietop.judge.job_table import TREND_RUNS, JobRow, job_rows
from zombietop.judge.monitor import Snapshot
from zombietop.model import Task
from zombietop.watch.failed_runs import job_incident, open_incidents

__all__ = ["TREND_RUNS", "rate_words", "rows_of"]


def rows_of(
    snapshot: Snapshot, latest: Mapping[str, Sequence[Task]], schedules: Sequence[Schedule]
) -> tuple[JobRow, ...]:
    """Every job's row: the store's runs (``latest``), and for a job the store does not hold
    (an engine's), the runs the snapshot shows; each job's open incident from the snapshot."""
    runs: dict[str, list[Task]] = {job: list(tasks) for job, tasks in latest.items()}
    for view in snapshot.tasks:
        job = view.task.job
        if job is not None and job not in latest:
            runs.setdefault(job, []).append(view.task)
    incidents: dict[str, str] = {}
    for name in {view.task.job_name for view in open_incidents(snapshot)}:
        incident = job_incident(snapshot, name)
        if incident is not None:
            incidents[name] = incident.task_id
    now = snapshot.taken_at if snapshot.taken_at is not None else 0.0
    return job_rows(now, snapshot.jobs, runs, schedules, incidents)


def rate_words(row: JobRow) -> str:
    """``92%``; ``-`` when no run ended."""
    rate = row.summary.success_rate
    return "-" if rate is None else f"{rate:.0%}"
