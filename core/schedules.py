"""Schedules: a step expected to start at cron times, judged from when its runs started.

zombietop judges tasks that exist; a cron job that never fired leaves no task behind. A
schedule closes that gap: after each fire time, a run of its step must start within the grace.
Judging is one pure function of (now, schedule, what the store says of the step's runs), so
every rule is a table-driven test with a fake clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from zoneinfo import ZoneInfo

from cronsim import CronSim

from zombietop.config import Schedule
from zombietop.durations import format_age, format_duration
from zombietop.model import StepRuns

EARLY_SLACK = 60.0
"""A run may start up to this long before its fire time (a cron host's clock a little ahead of
the store's) and still count for it; never more than half the gap to the fire before."""


class ScheduleHealth(StrEnum):
    """The verdict on a schedule; declared from most to least urgent."""

    MISSED = "missed"
    """A fire time passed its grace with no run of the step started: page, like a stall."""
    RUNNING_LONG = "running_long"
    """A run is still going at the next fire time (overlap) or past max_runtime: shown."""
    LATE = "late"
    """A fire time passed and no run started yet, but the grace has not run out: shown."""
    OK = "ok"
    """The latest fire time has its run."""

    @property
    def pages(self) -> bool:
        return self is ScheduleHealth.MISSED


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleView:
    """One schedule as of one poll."""

    schedule: Schedule
    health: ScheduleHealth
    last_due: float
    """The latest fire time at or before now."""
    next_due: float
    """The next fire time after now."""
    last_started: float | None
    running_since: float | None
    line: str
    """What a page (or the dashboard) says: ``nightly-export missed: ...``."""

    @property
    def name(self) -> str:
        return self.schedule.name


def _at(seconds: float, zone: ZoneInfo) -> datetime:
    return datetime.fromtimestamp(seconds, zone)


def last_fire(schedule: Schedule, now: float) -> float:
    """The latest fire time at or before ``now`` (cronsim's reverse walk is strictly before)."""
    zone = ZoneInfo(schedule.tz)
    return next(CronSim(schedule.cron, _at(math.floor(now) + 1, zone), reverse=True)).timestamp()


def next_fire(schedule: Schedule, after: float) -> float:
    """The first fire time strictly after ``after``."""
    return next(CronSim(schedule.cron, _at(after, ZoneInfo(schedule.tz)))).timestamp()


def _clock(seconds: float, schedule: Schedule) -> str:
    """A fire time as the schedule's zone reads it: ``02:30 Europe/Berlin``."""
    return f"{_at(seconds, ZoneInfo(schedule.tz)):%Y-%m-%d %H:%M} {schedule.tz}"


def judge(now: float, schedule: Schedule, runs: StepRuns) -> ScheduleView:
    """The schedule's health at ``now`` from its step's runs (pure)."""
    due = last_fire(schedule, now)
    before = last_fire(schedule, due - 1)
    upcoming = next_fire(schedule, now)
    early = min(EARLY_SLACK, (due - before) / 2)
    started = runs.last_started
    answered = started is not None and started >= due - early
    name, step = schedule.name, schedule.step
    since = "never" if started is None else f"{format_age(now - started)} ago"

    running = runs.running_since
    overran = None
    if running is not None:
        if next_fire(schedule, running + early) <= now:
            overran = "still running at the next fire time"
        elif schedule.max_runtime is not None and now - running > schedule.max_runtime:
            overran = f"past max_runtime {format_duration(schedule.max_runtime)}"

    if overran is not None and running is not None:
        health = ScheduleHealth.RUNNING_LONG
        line = (
            f"{name} running_long: a {step} run started {format_age(now - running)} ago is "
            f"{overran} - check it"
        )
    elif answered:
        health = ScheduleHealth.OK
        line = f"{name} ok: {step} last started {since}, next due {_clock(upcoming, schedule)}"
    elif now < due + schedule.grace:
        health = ScheduleHealth.LATE
        line = (
            f"{name} late: no {step} run yet for {_clock(due, schedule)}, "
            f"grace ends in {format_age(due + schedule.grace - now)}"
        )
    else:
        health = ScheduleHealth.MISSED
        line = (
            f"{name} missed: no {step} run started within {format_duration(schedule.grace)} of "
            f"{_clock(due, schedule)} (cron {schedule.cron}), last started {since} - "
            "check the job's scheduler"
        )
    return ScheduleView(
        schedule=schedule,
        health=health,
        last_due=due,
        next_due=upcoming,
        last_started=started,
        running_since=running,
        line=line,
    )


def order(views: list[ScheduleView]) -> tuple[ScheduleView, ...]:
    """Most urgent first, then by name."""
    rank = list(ScheduleHealth)
    return tuple(sorted(views, key=lambda v: (rank.index(v.health), v.name)))
