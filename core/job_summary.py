"""A job's summary: how many of its runs ended, how many succeeded, and how long the successful
ones took (median and p95), which is what a run is judged against.

The store keeps one summary per job, folded in as each run ends (``JobSummary.with_run``), so
reading every job's summary costs the number of jobs, never the number of finished runs. Only
the latest ``HISTORY_WINDOW`` successful durations are kept: a job that got slower last month
is judged by how it runs now.
"""

from __future__ import annotations

import json
import math
import statistics
from bisect import insort
from collections.abc import Mapping
from dataclasses import dataclass, replace

from zombietop.model import Task, TaskState
from zombietop.rows import Row

HISTORY_WINDOW = 100
"""How many of a job's latest successful durations its summary keeps."""
ENDS_WINDOW = 30 * 86400.0
"""How far back a job's summary keeps how its runs began and ended (``JobSummary.ends``)."""
ENDS_KEPT = 2000
"""At most this many of them: a job that runs every minute keeps its latest 2000 runs."""


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How one run of a job began and ended."""

    began: float
    finished_at: float
    succeeded: bool


def run_began(task: Task) -> float:
    """When a run began: its claim, when ``run``, the SDK or a ping took the lease.

    Never its first heartbeat: a job that beats once, at its end, would look as if it took no
    time at all. A task with no claim (an engine's) began when it started, else was created.
    """
    if task.claimed_at is not None:
        return task.claimed_at
    return task.started_at or task.created_at


def run_duration(task: Task) -> float | None:
    """How long a finished run took, from its claim to its end; None unfinished."""
    if task.finished_at is None:
        return None
    return max(0.0, task.finished_at - run_began(task))


def percentile(values: tuple[float, ...], share: float) -> float | None:
    """The ``share`` (0..1) percentile of ``values``, by linear interpolation; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    at = share * (len(ordered) - 1)
    low, high = math.floor(at), math.ceil(at)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSummary:
    """What a job's finished runs add up to."""

    name: str
    runs: int = 0
    """How many runs ended (succeeded, failed or discarded)."""
    succeeded: int = 0
    last_outcome: TaskState | None = None
    """How the latest run to end ended (None: none has)."""
    last_finished_at: float | None = None
    last_success_at: float | None = None
    durations: tuple[float, ...] = ()
    """The durations of the latest successful runs, oldest first (``HISTORY_WINDOW`` at most)."""
    ends: tuple[RunEnd, ...] = ()
    """How the runs of the last ``ENDS_WINDOW`` began and ended, in the order they ended (by
    ``finished_at``; ``ENDS_KEPT`` at most): what the job's start times and failure rate are
    judged by."""
    updated_at: float = 0.0
    """When the store last changed it, for the readers that ask only for what changed."""

    @property
    def success_rate(self) -> float | None:
        return None if self.runs == 0 else self.succeeded / self.runs

    @property
    def median_s(self) -> float | None:
        return None if not self.durations else statistics.median(self.durations)

    @property
    def p95_s(self) -> float | None:
        return percentile(self.durations, 0.95)

    def with_run(self, task: Task, now: float) -> JobSummary:
        """This summary with one more finished run folded in."""
        duration = run_duration(task)
        succeeded = task.state is TaskState.SUCCEEDED
        durations = self.durations
        if succeeded and duration is not None:
            durations = (*durations, duration)[-HISTORY_WINDOW:]
        ends = self.ends
        if task.finished_at is not None:
            end = RunEnd(began=run_began(task), finished_at=task.finished_at, succeeded=succeeded)
            since = task.finished_at - ENDS_WINDOW
            kept = [each for each in ends if each.finished_at >= since]
            # In the order the runs ended, which the readers bisect: a source's runs are folded
            # as a poll reads them, not always in that order.
            insort(kept, end, key=lambda each: each.finished_at)
            ends = tuple(kept[-ENDS_KEPT:])
        return replace(
            self,
            runs=self.runs + 1,
            succeeded=self.succeeded + succeeded,
            last_outcome=task.state,
            last_finished_at=task.finished_at,
            last_success_at=task.finished_at if succeeded else self.last_success_at,
            durations=durations,
            ends=ends,
            updated_at=now,
        )

    def with_run_resumed(self, task: Task, now: float) -> JobSummary:
        """This summary once a failed run is resumed: its end no longer counts, so that it is
        counted once, as it ends again."""
        ends = tuple(end for end in self.ends if end.finished_at != task.finished_at)
        return replace(self, runs=max(0, self.runs - 1), ends=ends, updated_at=now)

    def as_params(self) -> dict[str, object]:
        """The columns of the store's ``jobs`` row."""
        return {
            "job": self.name,
            "runs": self.runs,
            "succeeded": self.succeeded,
            "last_outcome": None if self.last_outcome is None else self.last_outcome.value,
            "last_finished_at": self.last_finished_at,
            "last_success_at": self.last_success_at,
            "durations": json.dumps(list(self.durations)),
            "ends": json.dumps([[e.began, e.finished_at, e.succeeded] for e in self.ends]),
            "updated_at": self.updated_at,
        }

    @classmethod
    def from_row(cls, row: Row) -> JobSummary:
        outcome = row["last_outcome"]
        return cls(
            name=row["job"],
            runs=row["runs"],
            succeeded=row["succeeded"],
            last_outcome=None if outcome is None else TaskState(outcome),
            last_finished_at=row["last_finished_at"],
            last_success_at=row["last_success_at"],
            durations=tuple(json.loads(row["durations"])),
            ends=tuple(
                RunEnd(began=float(b), finished_at=float(f), succeeded=bool(ok))
                for b, f, ok in json.loads(row["ends"])
            ),
            updated_at=row["updated_at"],
        )

    def as_json(self) -> dict[str, object]:
        """The summary as ``status --json`` and ``history --json`` give it."""
        return {
            "name": self.name,
            "runs": self.runs,
            "succeeded": self.succeeded,
            "success_rate": self.success_rate,
            "median_s": self.median_s,
            "p95_s": self.p95_s,
            "last_outcome": None if self.last_outcome is None else str(self.last_outcome),
            "last_success_at": self.last_success_at,
        }


def job_of(jobs: Mapping[str, JobSummary], task: Task) -> JobSummary:
    """The summary of the job ``task`` is a run of; for a task with no job, the task alone."""
    if task.job is not None:
        return jobs.get(task.job) or JobSummary(name=task.job)
    alone = JobSummary(name=task.task_id)
    return alone.with_run(task, task.finished_at or 0.0) if task.state.finished else alone
