"""The jobs view: one row per job, as a pure function of its runs, its summary and its schedules.

A row says how many of the job's runs ended and how many succeeded, the median and p95 of its
successful runs, its latest ``TREND_RUNS`` durations as a sparkline, how its latest run ended
and when, when its schedule fires next, and its open incident. Durations count from each run's
claim (``job_summary.run_duration``), never from its first heartbeat. ``zombietop jobs`` and
the dashboard's jobs view (``J``) both show these rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from zombietop.config import Schedule
from zombietop.heartbeat_line import format_timestamp
from zombietop.job_summary import JobSummary, run_duration
from zombietop.judge.schedules import next_fire
from zombietop.model import Task, TaskState

TREND_RUNS = 20
"""How many of a job's latest ended runs its sparkline shows."""
BARS = "▁▂▃▄▅▆▇█"
"""A successful run's glyph, by its duration against the longest success shown (0 to it)."""
ENDED_BADLY = "x"
"""A run that did not succeed (failed, discarded, interrupted): an outcome, not a height, so
that the trend reads without colour."""
JOB_COLUMNS = ("job", "runs", "success", "median", "p95", "trend", "last", "next")
"""The jobs view's columns, in order; a saved view may show fewer (``[views.NAME] columns``)."""


class JobSort(StrEnum):
    """The orders of the jobs view."""

    URGENCY = "urgency"
    """Jobs with an open incident first, then those whose latest run did not succeed, then by
    name."""
    NAME = "name"
    SUCCESS = "success rate"
    """The lowest success rate first."""
    P95 = "p95"
    """The slowest (p95 of the successful runs) first."""
    LAST_RUN = "last run"
    """The job whose latest run ended most recently first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecentRun:
    """One ended run, as the trend shows it."""

    duration_s: float
    """From its claim to its end."""
    outcome: TaskState


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRow:
    """One job as the jobs view and ``zombietop jobs`` show it."""

    summary: JobSummary
    """Its runs that ended, successes, median and p95 of the successful ones."""
    recent: tuple[RecentRun, ...] = ()
    """Its latest ended runs, oldest first (``TREND_RUNS`` at most)."""
    next_run_at: float | None = None
    """When its schedule fires next (None: no schedule of this job is configured)."""
    incident: str | None = None
    """The task id of its open incident, which ``a`` acks (None: none is open)."""

    @property
    def name(self) -> str:
        return self.summary.name

    @property
    def trend(self) -> str:
        return sparkline(self.recent)

    def as_json(self) -> dict[str, object]:
        """The row as ``zombietop jobs --json`` prints it; the keys are stable."""
        summary = self.summary
        return {
            "name": summary.name,
            "runs": summary.runs,
            "succeeded": summary.succeeded,
            "success_rate": summary.success_rate,
            "median_s": summary.median_s,
            "p95_s": summary.p95_s,
            "recent": [
                {"duration_s": run.duration_s, "outcome": str(run.outcome)} for run in self.recent
            ],
            "trend": self.trend,
            "last_outcome": None if summary.last_outcome is None else str(summary.last_outcome),
            "last_finished_at": _timestamp(summary.last_finished_at),
            "next_run_at": _timestamp(self.next_run_at),
            "open_incident": self.incident,
        }


def _timestamp(when: float | None) -> str | None:
    return None if when is None else format_timestamp(when)


def sparkline(runs: Sequence[RecentRun]) -> str:
    """One glyph per run, oldest first: for a success, a bar as tall as its share of the
    longest success shown; ``x`` for any other end."""
    # Against the successes alone: a failure that hung for hours would flatten every bar.
    longest = max(
        (run.duration_s for run in runs if run.outcome is TaskState.SUCCEEDED), default=0.0
    )
    glyphs = []
    for run in runs:
        if run.outcome is not TaskState.SUCCEEDED:
            glyphs.append(ENDED_BADLY)
        elif longest <= 0:
            glyphs.append(BARS[0])
        else:
            glyphs.append(BARS[round(run.duration_s / longest * (len(BARS) - 1))])
    return "".join(glyphs)


def recent_runs(runs: Iterable[Task]) -> tuple[RecentRun, ...]:
    """The latest ``TREND_RUNS`` of ``runs`` that ended, oldest first."""
    ended = [run for run in runs if run.state.finished and run.finished_at is not None]
    ended.sort(key=lambda run: (run.finished_at or 0.0, run.run_number or 0))
    trend = []
    for run in ended[-TREND_RUNS:]:
        duration = run_duration(run)
        assert duration is not None  # an ended run has an end
        trend.append(RecentRun(duration_s=duration, outcome=run.state))
    return tuple(trend)


def next_run_of(job: str, schedules: Iterable[Schedule], now: float) -> float | None:
    """When the first schedule of ``job`` (``job = JOB``, or ``step = JOB``: a job's step is its
    name) fires next after ``now``; None when it has none."""
    fires = [
        next_fire(schedule, now)
        for schedule in schedules
        if (schedule.job if schedule.job is not None else schedule.step) == job
    ]
    return min(fires, default=None)


def job_rows(
    now: float,
    summaries: Mapping[str, JobSummary],
    runs: Mapping[str, Sequence[Task]],
    schedules: Sequence[Schedule] = (),
    incidents: Mapping[str, str] | None = None,
) -> tuple[JobRow, ...]:
    """Every job's row, by name: each job with a summary or a run in ``runs`` (its latest
    runs, any order), and each scheduled job, even one that never ran.

    A job without a summary (a source's, which keeps none) is summed up from ``runs``.
    ``incidents`` names each job's open incident by its task id.
    """
    incidents = incidents or {}
    names = set(summaries) | set(runs)
    names |= {schedule.job or schedule.step for schedule in schedules}
    rows = []
    for name in sorted(names):
        its_runs = runs.get(name, ())
        summary = summaries.get(name) or _summed(name, its_runs, now)
        rows.append(
            JobRow(
                summary=summary,
                recent=recent_runs(its_runs),
                next_run_at=next_run_of(name, schedules, now),
                incident=incidents.get(name),
            )
        )
    return tuple(rows)


def _summed(name: str, runs: Sequence[Task], now: float) -> JobSummary:
    summary = JobSummary(name=name)
    for run in sorted(runs, key=lambda run: run.finished_at or 0.0):
        if run.state.finished and run.finished_at is not None:
            summary = summary.with_run(run, now)
    return summary


def sorted_rows(rows: Iterable[JobRow], sort: JobSort) -> tuple[JobRow, ...]:
    """``rows`` in the order ``sort`` says; ties by name, so rows never swap places."""
    match sort:
        case JobSort.URGENCY:
            return tuple(sorted(rows, key=_urgency))
        case JobSort.NAME:
            return tuple(sorted(rows, key=lambda row: row.name))
        case JobSort.SUCCESS:
            return tuple(sorted(rows, key=lambda row: (_rate(row), row.name)))
        case JobSort.P95:
            return tuple(sorted(rows, key=lambda row: (-(row.summary.p95_s or -1.0), row.name)))
        case JobSort.LAST_RUN:
            return tuple(
                sorted(rows, key=lambda row: (-(row.summary.last_finished_at or 0.0), row.name))
            )


def _rate(row: JobRow) -> float:
    rate = row.summary.success_rate
    return 2.0 if rate is None else rate  # a job with no ended run last


def _urgency(row: JobRow) -> tuple[int, str]:
    if row.incident is not None:
        return (0, row.name)
    last = row.summary.last_outcome
    return (1 if last is not None and last is not TaskState.SUCCEEDED else 2, row.name)


def matches(row: JobRow, text: str) -> bool:
    """True when ``text`` is in the job's name or its latest outcome (any case)."""
    needle = text.casefold()
    last = row.summary.last_outcome
    return needle in row.name.casefold() or (last is not None and needle in str(last))
