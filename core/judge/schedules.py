"""Schedules: a step expected to start at cron times, judged from when its runs started.

zombietop judges tasks that exist; a cron job that never fired leaves no task behind. A
schedule closes that gap: after each fire time, a run of its step must start within the grace.
Judging is one pure function of (now, schedule, what the store says of the step's runs, when
the schedule was first seen), so every rule is a table-driven test with a fake clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from cronsim import CronSim

from zombietop.config import Schedule
from zombietop.durations import format_age, format_duration
from zombietop.health import ScheduleHealth
from zombietop.model import StepRuns

EARLY_SLACK = 60.0
"""A run may start up to this long before its fire time (a cron host's clock a little ahead of
the store's) and still count for it; never more than half the gap to the fire before."""


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
    first_seen: float
    """Since when the schedule is known: fire times before it are not judged."""
    line: str
    """What a page (or the dashboard) says: ``nightly-export missed: ...``."""

    @property
    def name(self) -> str:
        return self.schedule.name


def _at(seconds: float, zone: ZoneInfo) -> datetime:
    return datetime.fromtimestamp(seconds, zone)


def _skipped(wall: datetime, zone: ZoneInfo) -> bool:
    """True when the clocks of ``zone`` never show ``wall`` (the hour skipped in spring)."""
    aware = wall.replace(tzinfo=zone)
    return aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall


def _skipped_to(wall: datetime, zone: ZoneInfo) -> float:
    """The moment a skipped wall time is due: when the clocks jump past it (03:00 CEST for
    02:30 on the night Berlin springs forward)."""
    while _skipped(wall, zone):
        wall += timedelta(minutes=1)
    return wall.replace(tzinfo=zone).timestamp()


# cronsim walks the real moments of a zone, so a fire time in the hour the clocks skip is not
# there: `*/30 2 * * *` has no fire time on the night Berlin springs forward, and a run missed
# that night was never judged. cronsim itself moves such a time to the jump for a fixed time
# ("30 2 * * *", as Debian's cron does); the walk over wall times below does it for every
# expression. Only the nearest wall fire time can be skipped yet come before cronsim's answer.


def last_fire(schedule: Schedule, now: float) -> float:
    """The latest fire time at or before ``now`` (cronsim's reverse walk is strictly before)."""
    zone = ZoneInfo(schedule.tz)
    start = _at(math.floor(now) + 1, zone)
    walked = next(CronSim(schedule.cron, start, reverse=True)).timestamp()
    wall = next(CronSim(schedule.cron, start.replace(tzinfo=None), reverse=True))
    if _skipped(wall, zone):
        jumped = _skipped_to(wall, zone)
        if walked < jumped <= now:
            return jumped
    return walked


def next_fire(schedule: Schedule, after: float) -> float:
    """The first fire time strictly after ``after``."""
    zone = ZoneInfo(schedule.tz)
    start = _at(after, zone)
    walked = next(CronSim(schedule.cron, start)).timestamp()
    wall = next(CronSim(schedule.cron, start.replace(tzinfo=None)))
    if _skipped(wall, zone):
        jumped = _skipped_to(wall, zone)
        if after < jumped < walked:
            return jumped
    return walked


def first_fire(schedule: Schedule, since: float) -> float:
    """The first fire time at or after ``since`` (fire times fall on whole seconds)."""
    return next_fire(schedule, math.ceil(since) - 1)


def _early(schedule: Schedule, fire: float) -> float:
    """How long before ``fire`` a run may start and still count for it."""
    return min(EARLY_SLACK, (fire - last_fire(schedule, fire - 1)) / 2)


def first_unanswered(schedule: Schedule, started: float | None, first_seen: float) -> float:
    """The oldest fire time, from ``first_seen`` on, that no run has answered.

    A run answers every fire time before it started (or a little after: ``EARLY_SLACK``), so
    the fire times without a run are all those from this one on.
    """
    since = first_fire(schedule, first_seen)
    if started is None:
        return since
    fire = next_fire(schedule, started)
    if started >= fire - _early(schedule, fire):
        fire = next_fire(schedule, fire)
    return max(fire, since)


def _clock(seconds: float, schedule: Schedule) -> str:
    """A fire time as the schedule's zone reads it: ``02:30 Europe/Berlin``."""
    return f"{_at(seconds, ZoneInfo(schedule.tz)):%Y-%m-%d %H:%M} {schedule.tz}"


def judge(now: float, schedule: Schedule, runs: StepRuns, *, first_seen: float) -> ScheduleView:
    """The schedule's health at ``now`` from its step's runs (pure).

    Each fire time from ``first_seen`` on is judged: the oldest one without a run is late
    while its grace lasts and missed once it is over. So a grace longer than the time between
    two fire times still ends, and a schedule just added to the config is not missed for the
    fire times before it existed.
    """
    due = last_fire(schedule, now)
    upcoming = next_fire(schedule, now)
    early = _early(schedule, due)
    started = runs.last_started
    pending = first_unanswered(schedule, started, first_seen)
    expired = last_fire(schedule, now - schedule.grace)
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
    elif pending > now:
        health = ScheduleHealth.OK
        line = f"{name} ok: {step} last started {since}, next due {_clock(upcoming, schedule)}"
    elif pending > expired:
        health = ScheduleHealth.LATE
        line = (
            f"{name} late: no {step} run yet for {_clock(pending, schedule)}, "
            f"grace ends in {format_age(pending + schedule.grace - now)}"
        )
    else:
        # Every fire time from ``pending`` to ``expired`` has no run: name the latest.
        health = ScheduleHealth.MISSED
        line = (
            f"{name} missed: no {step} run started within {format_duration(schedule.grace)} of "
            f"{_clock(expired, schedule)} (cron {schedule.cron}), last started {since} - "
            "check the job's scheduler"
        )
    return ScheduleView(
        schedule=schedule,
        health=health,
        last_due=due,
        next_due=upcoming,
        last_started=started,
        running_since=running,
        first_seen=first_seen,
        line=line,
    )


def order(views: list[ScheduleView]) -> tuple[ScheduleView, ...]:
    """Most urgent first, then by name."""
    rank = list(ScheduleHealth)
    return tuple(sorted(views, key=lambda v: (rank.index(v.health), v.name)))
