"""Jobs: each job's summary, kept as its runs end, a job's runs for ``zombietop history``,
and every job's latest ended runs for ``zombietop jobs``.

``Jobs._count_run`` folds a run's end into its job's summary inside the transaction that records the
end (``tasks``: finish and discard), so a summary never misses a run nor counts one twice (a failed
run that is resumed is taken out, ``_uncount_run``, and counted again as it ends again), and
reading the summaries costs the number of jobs that changed, never a scan of finished runs.

Its SQL is in ``sql/common/jobs.sql``.
"""

from __future__ import annotations

import abc

from zombietop.job_summary import JobSummary
from zombietop.model import (
    Task,
    TaskRecord,
    TaskState,
)
from zombietop.rows import Row
from zombietop.store.poll_cache import task_record
from zombietop.store.sql_base import Conn, SQLBase


class JobsInterface(abc.ABC):
    """Part of ``Store``, implemented by ``Jobs`` below: job summaries and a job's runs (``tasks``
    stands on it, to count each run's end)."""

    @abc.abstractmethod
    async def job_summaries(self, changed_after: float | None = None) -> list[JobSummary]:
        """Every job's summary, or (with ``changed_after``) those changed at or after it."""

    @abc.abstractmethod
    async def job_runs(self, job: str, limit: int) -> list[Task]:
        """The latest ``limit`` runs of ``job``, newest first."""

    @abc.abstractmethod
    async def latest_ended_runs(
        self, per_job: int, changed_after: float | None = None
    ) -> dict[str, list[Task]]:
        """By job, the latest ``per_job`` runs of every job that have ended, newest first; with
        ``changed_after``, only of the jobs whose summary changed at or after it."""

    @abc.abstractmethod
    async def failed_latest_runs(self, before: float) -> list[TaskRecord]:
        """The runs that failed before ``before`` and are still the latest of their job to
        end, newest first: one per job at most, read by way of the jobs table."""


class Jobs(SQLBase[Conn], JobsInterface):
    """Job summaries and a job's runs (``tasks`` stands on it, to count each run's end)."""

    async def _count_run(self, db: Conn, task: Task, now: float) -> None:
        """Fold the end of ``task``, a run of a job, into the job's summary (no job: nothing)."""
        if task.job is None or not task.state.finished:
            return
        row = await self._row(db, "select_job_summary", {"job": task.job})
        before = JobSummary(name=task.job) if row is None else JobSummary.from_row(row)
        await self._run(db, "upsert_job_summary", before.with_run(task, now).as_params())

    async def _uncount_run(self, db: Conn, task: Task, now: float) -> None:
        """Take the end of ``task``, a failed run being resumed, out of its job's summary."""
        if task.job is None or not task.state.finished:
            return
        row = await self._row(db, "select_job_summary", {"job": task.job})
        if row is not None:
            summary = JobSummary.from_row(row).with_run_resumed(task, now)
            await self._run(db, "upsert_job_summary", summary.as_params())

    async def job_summaries(self, changed_after: float | None = None) -> list[JobSummary]:
        async with self._read() as db:
            if changed_after is None:
                rows = await self._rows(db, "select_job_summaries", {})
            else:
                rows = await self._rows(db, "select_job_summaries_since", {"after": changed_after})
        return [JobSummary.from_row(row) for row in rows]

    async def job_runs(self, job: str, limit: int) -> list[Task]:
        async with self._read() as db:
            rows = await self._rows(db, "select_job_runs", {"job": job, "limit": limit})
        return [Task.from_row(row) for row in rows]

    async def latest_ended_runs(
        self, per_job: int, changed_after: float | None = None
    ) -> dict[str, list[Task]]:
        if per_job < 1:
            return {}
        after = 0.0 if changed_after is None else changed_after
        params = {"skip": per_job - 1, "after": after}
        async with self._read() as db:
            rows = await self._rows(db, "select_latest_ended_runs", params)
        runs: dict[str, list[Task]] = {}
        for row in rows:
            runs.setdefault(row["job"], []).append(_ended_run(row))
        for ended in runs.values():
            ended.sort(key=lambda task: task.run_number or 0, reverse=True)
        return runs

    async def failed_latest_runs(self, before: float) -> list[TaskRecord]:
        async with self._read() as db:
            rows = await self._rows(db, "select_failed_latest_runs", {"before": before})
        return [task_record(row) for row in rows]


def _ended_run(row: Row) -> Task:
    """An ended run with what its outcome and duration need (the block reads no more)."""
    return Task(
        task_id=row["task_id"],
        run_id=row["run_id"],
        step=row["step"],
        step_type=row["step_type"],
        state=TaskState(row["state"]),
        created_at=row["created_at"],
        claimed_at=row["claimed_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        updated_at=row["updated_at"],
        job=row["job"],
        run_number=row["run_number"],
    )
