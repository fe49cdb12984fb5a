"""The jobs a monitor knows, kept up to date poll by poll without reading their runs again.

The first read takes every job's summary (one row per job); each later read asks the store only
for the summaries changed since the one before. The runs of a read-only source (an Airflow
DAG/TASK) are folded in as they are first seen finished, since a source keeps no summary.
A task with no job is its own job of one run (``job_summary.job_of``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zombietop.job_summary import JobSummary
from zombietop.model import Task
from zombietop.store import Store


class JobBook:
    """Every job's summary as of the latest ``refresh``."""

    def __init__(self) -> None:
        self._jobs: dict[str, JobSummary] = {}
        self._read_to: float | None = None
        """The newest ``updated_at`` read so far (None: nothing read yet)."""
        self._counted: set[str] = set()
        """The source runs already folded in, by task id."""

    @property
    def jobs(self) -> Mapping[str, JobSummary]:
        return self._jobs

    async def refresh(self, store: Store) -> None:
        """Read the summaries changed since the last refresh (all of them the first time)."""
        for summary in await store.job_summaries(self._read_to):
            self._jobs[summary.name] = summary
            if self._read_to is None or summary.updated_at > self._read_to:
                self._read_to = summary.updated_at

    def fold_source_runs(self, tasks: Iterable[Task], now: float) -> None:
        """Count the finished runs of a source's jobs not counted yet."""
        for task in sorted(tasks, key=lambda each: each.finished_at or 0.0):
            if task.job is None or not task.state.finished or task.task_id in self._counted:
                continue
            self._counted.add(task.task_id)
            before = self._jobs.get(task.job) or JobSummary(name=task.job)
            self._jobs[task.job] = before.with_run(task, now)
