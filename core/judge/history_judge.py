"""A run judged against its job's history: slower than usual, or finished too fast.

Only successful runs count, and only once the job has ``history_min_runs`` of them besides the
run being judged. A running run whose elapsed time passes ``slow_after`` times their median,
and is at least ``slow_min`` past it, is ``slower_than_usual``; a run that succeeded in under
``too_fast_below`` times the median ``finished_too_fast`` (a backup that copied nothing). Pure:
``classify`` calls it with the job's summary, so every rule is a table-driven test.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from zombietop.config import Limits
from zombietop.durations import format_age
from zombietop.health import Flag
from zombietop.job_summary import JobSummary, percentile, run_began, run_duration
from zombietop.model import Task, TaskState

INF = float("inf")
SLOW_REASON = "slower_than_usual"
FAST_REASON = "finished_too_fast"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usual:
    """What a job's successful runs took, besides the run being judged."""

    median_s: float
    p95_s: float
    runs: int


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryVerdict:
    """A flag the history raised, and the words a page and the row carry."""

    flag: Flag
    code: str
    before: str
    """The words before the run's age (all the words, for a finished run)."""
    since: float | None
    """For a running run, its start: its elapsed time is ``now - since``."""
    after: str
    usual: Usual


def usual(summary: JobSummary, task: Task, limits: Limits) -> Usual | None:
    """The median and p95 of the job's successful runs other than ``task``; None while the
    job has fewer than ``history_min_runs`` of them."""
    durations = list(summary.durations)
    own = run_duration(task) if task.state is TaskState.SUCCEEDED else None
    if own is not None and own in durations:
        durations.remove(own)  # its own end is already folded into the summary
    if len(durations) < limits.history_min_runs or not durations:
        return None
    window = tuple(durations)
    p95 = percentile(window, 0.95)
    assert p95 is not None
    return Usual(median_s=statistics.median(window), p95_s=p95, runs=len(window))


def slow_from(task: Task, normal: Usual, limits: Limits) -> float:
    """The moment a running run becomes slower than usual."""
    median = normal.median_s
    return run_began(task) + max(limits.slow_after * median, median + limits.slow_min)


def judge_history(
    now: float, task: Task, summary: JobSummary | None, limits: Limits
) -> tuple[HistoryVerdict | None, float]:
    """The flag the job's history raises on ``task`` at ``now`` (None: none), and the moment
    the answer next changes (infinity: not before the task changes)."""
    if summary is None:
        return None, INF
    normal = usual(summary, task, limits)
    if normal is None:
        return None, INF
    words = f"usually {format_age(normal.median_s)} (p95 {format_age(normal.p95_s)})"
    if task.state.executing:
        slow = slow_from(task, normal, limits)
        if now < slow:
            return None, slow
        verdict = HistoryVerdict(
            flag=Flag.SLOWER_THAN_USUAL,
            code=SLOW_REASON,
            before="running ",
            since=run_began(task),
            after=f", {words}",
            usual=normal,
        )
        return verdict, INF
    took = run_duration(task)
    if (
        task.state is TaskState.SUCCEEDED
        and took is not None
        and took < limits.too_fast_below * normal.median_s
    ):
        verdict = HistoryVerdict(
            flag=Flag.FINISHED_TOO_FAST,
            code=FAST_REASON,
            before=f"succeeded in {format_age(took)}, usually {format_age(normal.median_s)}",
            since=None,
            after="",
            usual=normal,
        )
        return verdict, INF
    return None, INF


def times_usual(now: float, task: Task, verdict: HistoryVerdict) -> str:
    """``2.3x usual``: how long the run has taken against the job's median."""
    took = run_duration(task) if task.state.finished else now - run_began(task)
    median = verdict.usual.median_s
    if took is None or median <= 0:
        return "?x usual"
    return f"{took / median:.1f}x usual"
