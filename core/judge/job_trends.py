"""A job judged against its own history: start times that drift, and failures that surge.

Both rules read the job's summary (``JobSummary.ends``: how its runs of the last 30 days began
and ended) and speak of the job, not of one run, so only the job's current runs carry their
flags: a run still going, and the run that ended last. ``runs_late_usually``: the intervals
between the starts of its latest ``history_min_runs`` runs spread more than ``drift_after``
times as much as the intervals before them among its latest ``HISTORY_WINDOW`` runs (and at
least ``drift_min`` more); the spread of intervals is their mean distance from their median.
``failing_more``: the share of its runs that failed in the last day is ``failing_after`` times
the share in the last 30 days, once the job has ``failing_min_runs`` runs in them. Pure, as
``classify`` that calls it.
"""

from __future__ import annotations

import statistics
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from zombietop.config import Limits
from zombietop.durations import format_age
from zombietop.health import Flag
from zombietop.job_summary import ENDS_WINDOW, HISTORY_WINDOW, JobSummary, RunEnd, run_began
from zombietop.judge.verdict import DRIFT_REASON, FAILING_REASON, Reason
from zombietop.model import Task

INF = float("inf")
DAY = 86400.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Trend:
    """A flag a job's trend raised, with the reason a page and the row carry."""

    flag: Flag
    reason: Reason


def spread(values: Sequence[float]) -> float:
    """How far the values lie from their median, on average (0 for fewer than two)."""
    if len(values) < 2:
        return 0.0
    middle = statistics.median(values)
    return sum(abs(value - middle) for value in values) / len(values)


def carries_trends(task: Task, summary: JobSummary) -> bool:
    """True for a run that speaks for its job: one still going, or the one that ended last."""
    if task.job is None:
        return False
    if task.state.executing:
        return True
    return task.finished_at is not None and task.finished_at == summary.last_finished_at


def drift(task: Task, summary: JobSummary, limits: Limits) -> Trend | None:
    """``runs_late_usually`` when the job's latest start intervals spread wider than before.

    Only the latest ``HISTORY_WINDOW`` runs count, as for the durations: a job that ran
    differently last month is judged by how it runs now.
    """
    latest = summary.ends[-HISTORY_WINDOW:]
    starts = sorted({end.began for end in latest} | {run_began(task)})
    intervals = [later - earlier for earlier, later in pairwise(starts)]
    recent_n = limits.history_min_runs
    if len(intervals) < 2 * recent_n:
        return None
    recent, before = spread(intervals[-recent_n:]), spread(intervals[:-recent_n])
    if recent <= limits.drift_after * before or recent - before < limits.drift_min:
        return None
    usual = statistics.median(intervals[:-recent_n])
    words = (
        f"starts drift: the last {recent_n} runs started {format_age(recent)} off their usual "
        f"interval on average, before {format_age(before)} (every {format_age(usual)})"
    )
    return Trend(flag=Flag.RUNS_LATE_USUALLY, reason=Reason(code=DRIFT_REASON, before=words))


def _since(ends: Sequence[RunEnd], moment: float) -> Sequence[RunEnd]:
    """The ends after ``moment``: ``ends`` are kept in the order the runs ended."""
    first = bisect_right(ends, moment, key=lambda end: end.finished_at)
    return ends[first:]


def failing(now: float, summary: JobSummary, limits: Limits) -> tuple[Trend | None, float]:
    """``failing_more`` when the day's failure rate is ``failing_after`` times the month's;
    and the moment that answer next changes as runs leave the windows."""
    month = _since(summary.ends, now - ENDS_WINDOW)
    day = _since(month, now - DAY)
    changes = min(
        month[0].finished_at + ENDS_WINDOW if month else INF,
        day[0].finished_at + DAY if day else INF,
    )
    failed_day = sum(1 for end in day if not end.succeeded)
    if len(month) < limits.failing_min_runs or failed_day == 0:
        return None, changes
    failed_month = sum(1 for end in month if not end.succeeded)
    rate_day, rate_month = failed_day / len(day), failed_month / len(month)
    if rate_day < limits.failing_after * rate_month:
        return None, changes
    words = (
        f"failing more: {failed_day} of {len(day)} runs failed in the last day, "
        f"{failed_month} of {len(month)} in 30 days ({rate_day / rate_month:.1f}x as often)"
    )
    return Trend(flag=Flag.FAILING_MORE, reason=Reason(code=FAILING_REASON, before=words)), changes


def judge_trends(
    now: float, task: Task, summary: JobSummary | None, limits: Limits
) -> tuple[tuple[Trend, ...], float]:
    """The trends of ``task``'s job that ``task`` carries at ``now``, and the moment that
    judgement next changes (infinity: not before the job's summary changes)."""
    if summary is None or not carries_trends(task, summary):
        return (), INF
    trends: list[Trend] = []
    drifted = drift(task, summary, limits)
    if drifted is not None:
        trends.append(drifted)
    failed, changes = failing(now, summary, limits)
    if failed is not None:
        trends.append(failed)
    return tuple(trends), changes
