"""Schedules judged with a fake clock: cron expressions, time zones (DST changes included),
graces, overlaps; and the config that names the file, section and value of a bad one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from zombietop.config import Schedule, load_config
from zombietop.errors import ConfigError
from zombietop.health import ScheduleHealth
from zombietop.judge.schedules import judge, last_fire, next_fire
from zombietop.model import StepRuns


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def local(text: str, tz: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz)).timestamp()


def schedule(
    cron: str = "30 2 * * *", tz: str = "UTC", grace: float = 600.0, **kw: float
) -> Schedule:
    return Schedule(name="nightly", step="export", cron=cron, tz=tz, grace=grace, **kw)


@pytest.mark.parametrize(
    ("cron", "tz", "now", "last", "following"),
    [
        ("30 2 * * *", "UTC", "2026-06-01T02:30:00", "2026-06-01T02:30:00", "2026-06-02T02:30:00"),
        ("30 2 * * *", "UTC", "2026-06-01T02:29:59", "2026-05-31T02:30:00", "2026-06-01T02:30:00"),
        (
            "*/15 * * * *",
            "UTC",
            "2026-06-01T10:07:00",
            "2026-06-01T10:00:00",
            "2026-06-01T10:15:00",
        ),
        ("0 9 * * 1-5", "UTC", "2026-06-06T10:00:00", "2026-06-05T09:00:00", "2026-06-08T09:00:00"),
        # 02:30 Berlin on the night clocks spring forward (02:00 -> 03:00) fires at 03:00 CEST.
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2026-03-29T01:05:00",
            "2026-03-29T01:00:00",
            "2026-03-30T00:30:00",
        ),
        # The day before, 02:30 CET is 01:30 UTC; the day after, 02:30 CEST is 00:30 UTC.
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2026-03-28T12:00:00",
            "2026-03-28T01:30:00",
            "2026-03-29T01:00:00",
        ),
        # 01:30 New York happens twice when clocks fall back: it fires once, at the first.
        (
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T06:45:00",
            "2026-11-01T05:30:00",
            "2026-11-02T06:30:00",
        ),
    ],
)
def test_fire_times(cron: str, tz: str, now: str, last: str, following: str) -> None:
    s = schedule(cron, tz)
    assert last_fire(s, utc(now)) == utc(last)
    assert next_fire(s, utc(now)) == utc(following)


NEVER = StepRuns()
SEEN = "2026-01-01T00:00:00"
"""When the schedules of the table were first seen, unless a case says otherwise."""


@pytest.mark.parametrize(
    ("sched", "now", "runs", "health", "seen"),
    [
        pytest.param(
            schedule(),
            "2026-06-01T02:35:00",
            NEVER,
            ScheduleHealth.LATE,
            "2026-06-01T00:00:00",
            id="inside-grace",
        ),
        pytest.param(
            schedule(),
            "2026-06-01T02:40:00",
            NEVER,
            ScheduleHealth.MISSED,
            "2026-06-01T00:00:00",
            id="grace-over",
        ),
        pytest.param(
            schedule(grace=3600),
            "2026-06-01T02:40:00",
            NEVER,
            ScheduleHealth.LATE,
            "2026-06-01T00:00:00",
            id="long-grace",
        ),
        pytest.param(
            schedule(),
            "2026-06-01T02:41:00",
            StepRuns(last_started=utc("2026-06-01T02:31:00")),
            ScheduleHealth.OK,
            SEEN,
            id="ran-on-time",
        ),
        pytest.param(
            schedule(),
            "2026-06-01T02:41:00",
            StepRuns(last_started=utc("2026-06-01T02:29:30")),
            ScheduleHealth.OK,
            SEEN,
            id="a-little-early",
        ),
        pytest.param(
            schedule(),
            "2026-06-01T02:41:00",
            StepRuns(last_started=utc("2026-05-31T02:31:00")),
            ScheduleHealth.MISSED,
            SEEN,
            id="only-yesterdays-run",
        ),
        pytest.param(
            schedule(),
            "2026-06-01T12:00:00",
            StepRuns(last_started=utc("2026-06-01T02:55:00")),
            ScheduleHealth.OK,
            SEEN,
            id="ran-late-then-ok",
        ),
        pytest.param(
            schedule("*/5 * * * *", grace=60),
            "2026-06-01T10:05:30",
            StepRuns(last_started=utc("2026-06-01T10:01:00")),
            ScheduleHealth.LATE,
            SEEN,
            id="every-5m-previous-run-does-not-count",
        ),
        pytest.param(
            schedule("*/5 * * * *", grace=60),
            "2026-06-01T10:06:00",
            StepRuns(last_started=utc("2026-06-01T10:01:00")),
            ScheduleHealth.MISSED,
            SEEN,
            id="every-5m-missed",
        ),
        pytest.param(
            schedule("30 2 * * *", "Europe/Berlin"),
            "2026-03-29T01:05:00",
            StepRuns(last_started=utc("2026-03-28T01:31:00")),
            ScheduleHealth.LATE,
            SEEN,
            id="dst-spring-forward-waits-for-03:00",
        ),
        pytest.param(
            schedule("30 2 * * *", "Europe/Berlin"),
            "2026-03-29T01:11:00",
            StepRuns(last_started=utc("2026-03-28T01:31:00")),
            ScheduleHealth.MISSED,
            SEEN,
            id="dst-spring-forward-missed",
        ),
        pytest.param(
            schedule("30 1 * * *", "America/New_York"),
            "2026-11-01T06:45:00",
            StepRuns(last_started=utc("2026-11-01T05:31:00")),
            ScheduleHealth.OK,
            SEEN,
            id="dst-fall-back-fires-once",
        ),
        pytest.param(
            schedule("0 * * * *"),
            "2026-06-01T11:00:30",
            StepRuns(
                last_started=utc("2026-06-01T10:00:05"), running_since=utc("2026-06-01T10:00:05")
            ),
            ScheduleHealth.RUNNING_LONG,
            SEEN,
            id="overlap",
        ),
        pytest.param(
            schedule("0 * * * *"),
            "2026-06-01T10:59:00",
            StepRuns(
                last_started=utc("2026-06-01T10:00:05"), running_since=utc("2026-06-01T10:00:05")
            ),
            ScheduleHealth.OK,
            SEEN,
            id="running-within-its-hour",
        ),
        pytest.param(
            schedule("0 * * * *", max_runtime=1800),
            "2026-06-01T10:31:00",
            StepRuns(
                last_started=utc("2026-06-01T10:00:05"), running_since=utc("2026-06-01T10:00:05")
            ),
            ScheduleHealth.RUNNING_LONG,
            SEEN,
            id="past-max-runtime",
        ),
    ],
)
def test_judge(
    sched: Schedule, now: str, runs: StepRuns, health: ScheduleHealth, seen: str
) -> None:
    view = judge(utc(now), sched, runs, first_seen=utc(seen))
    assert view.health is health, view.line
    assert view.line.startswith(f"nightly {health}")


def test_missed_line_names_the_fire_time_in_its_zone() -> None:
    view = judge(
        utc("2026-03-29T01:11:00"),
        schedule("30 2 * * *", "Europe/Berlin"),
        NEVER,
        first_seen=utc(SEEN),
    )
    assert view.line == (
        "nightly missed: no export run started within 10m of 2026-03-29 03:00 Europe/Berlin "
        "(cron 30 2 * * *), last started never - check the job's scheduler"
    )
    assert view.next_due == utc("2026-03-30T00:30:00")


# A grace at least as long as the time between two fire times (issue N2 #6): each fire time is
# judged, so the oldest one without a run is missed once its own grace is over.
@pytest.mark.parametrize(
    ("sched", "now", "last_started", "health"),
    [
        pytest.param(
            schedule("*/5 * * * *", grace=600),
            "2026-06-01T10:14:59",
            "2026-06-01T10:00:02",
            ScheduleHealth.LATE,
            id="every-5m-grace-10m-inside-the-grace-of-10:05",
        ),
        pytest.param(
            schedule("*/5 * * * *", grace=600),
            "2026-06-01T10:15:00",
            "2026-06-01T10:00:02",
            ScheduleHealth.MISSED,
            id="every-5m-grace-10m-the-grace-of-10:05-is-over",
        ),
        pytest.param(
            schedule("*/5 * * * *", grace=600),
            "2026-06-01T13:00:00",
            "2026-06-01T10:00:02",
            ScheduleHealth.MISSED,
            id="every-5m-grace-10m-hours-later",
        ),
        pytest.param(
            schedule("*/5 * * * *", grace=600),
            "2026-06-01T10:09:00",
            "2026-06-01T10:05:03",
            ScheduleHealth.OK,
            id="every-5m-grace-10m-each-run-answers-its-fire-time",
        ),
        pytest.param(
            schedule("*/5 * * * *", grace=600),
            "2026-06-01T10:12:00",
            "2026-06-01T10:05:03",
            ScheduleHealth.LATE,
            id="every-5m-grace-10m-10:10-still-has-time",
        ),
        pytest.param(
            schedule("0 9,17 * * *", grace=10 * 3600),
            "2026-06-02T03:00:00",
            "2026-06-01T09:00:10",
            ScheduleHealth.MISSED,
            id="grace-longer-than-the-evening-gap",
        ),
    ],
)
def test_a_grace_longer_than_the_period_still_ends(
    sched: Schedule, now: str, last_started: str, health: ScheduleHealth
) -> None:
    view = judge(utc(now), sched, StepRuns(last_started=utc(last_started)), first_seen=utc(SEEN))
    assert view.health is health, view.line


def test_a_long_grace_names_the_fire_time_whose_grace_ran_out() -> None:
    view = judge(
        utc("2026-06-01T10:20:30"),
        schedule("*/5 * * * *", grace=600),
        StepRuns(last_started=utc("2026-06-01T10:00:02")),
        first_seen=utc(SEEN),
    )
    assert view.line.startswith(
        "nightly missed: no export run started within 10m of 2026-06-01 10:10 UTC"
    )


# The night the clocks spring forward (issue N2 #18): 02:00 to 02:59 never happens, so a fire
# time in it is due when the clocks jump past it. Real zones, real transition dates: Berlin
# jumps 02:00 CET -> 03:00 CEST at 01:00 UTC on 2026-03-29 and 2027-03-28; New York jumps
# 02:00 EST -> 03:00 EDT at 07:00 UTC on 2026-03-08.
@pytest.mark.parametrize(
    ("cron", "tz", "now", "last", "following"),
    [
        pytest.param(
            "*/30 2 * * *",
            "Europe/Berlin",
            "2026-03-29T01:20:00",
            "2026-03-29T01:00:00",
            "2026-03-30T00:00:00",
            id="berlin-2026-after-the-jump",
        ),
        pytest.param(
            "*/30 2 * * *",
            "Europe/Berlin",
            "2026-03-29T00:50:00",
            "2026-03-28T01:30:00",
            "2026-03-29T01:00:00",
            id="berlin-2026-before-the-jump",
        ),
        pytest.param(
            "*/30 2 * * *",
            "Europe/Berlin",
            "2027-03-28T01:20:00",
            "2027-03-28T01:00:00",
            "2027-03-29T00:00:00",
            id="berlin-2027-after-the-jump",
        ),
        pytest.param(
            "*/30 2 * * *",
            "America/New_York",
            "2026-03-08T07:05:00",
            "2026-03-08T07:00:00",
            "2026-03-09T06:00:00",
            id="new-york-2026",
        ),
        pytest.param(
            "* 2 * * *",
            "Europe/Berlin",
            "2026-03-29T01:00:30",
            "2026-03-29T01:00:00",
            "2026-03-30T00:00:00",
            id="every-minute-of-the-skipped-hour-is-one-fire-time",
        ),
        pytest.param(
            "*/30 * * * *",
            "Europe/Berlin",
            "2026-03-29T00:45:00",
            "2026-03-29T00:30:00",
            "2026-03-29T01:00:00",
            id="every-30m-loses-02:00-and-02:30-and-keeps-03:00-once",
        ),
        pytest.param(
            "*/30 * * * *",
            "Europe/Berlin",
            "2026-03-29T01:15:00",
            "2026-03-29T01:00:00",
            "2026-03-29T01:30:00",
            id="every-30m-after-the-jump",
        ),
    ],
)
def test_fire_times_on_the_spring_forward_night(
    cron: str, tz: str, now: str, last: str, following: str
) -> None:
    s = schedule(cron, tz)
    assert last_fire(s, utc(now)) == utc(last)
    assert next_fire(s, utc(now)) == utc(following)


@pytest.mark.parametrize(
    ("now", "last_started", "health"),
    [
        pytest.param("2026-03-29T01:05:00", "2026-03-28T01:30:04", ScheduleHealth.LATE, id="late"),
        pytest.param(
            "2026-03-29T01:20:00", "2026-03-28T01:30:04", ScheduleHealth.MISSED, id="missed"
        ),
        pytest.param("2026-03-29T01:20:00", "2026-03-29T01:00:09", ScheduleHealth.OK, id="ran"),
        pytest.param(
            "2027-03-28T01:20:00", "2027-03-27T01:30:04", ScheduleHealth.MISSED, id="missed-2027"
        ),
    ],
)
def test_a_run_missed_on_the_spring_forward_night_is_flagged(
    now: str, last_started: str, health: ScheduleHealth
) -> None:
    view = judge(
        utc(now),
        schedule("*/30 2 * * *", "Europe/Berlin"),
        StepRuns(last_started=utc(last_started)),
        first_seen=utc(SEEN),
    )
    assert view.health is health, view.line
    if health is ScheduleHealth.MISSED:
        assert f"within 10m of {now[:10]} 03:00 Europe/Berlin" in view.line


# First seen (issue N2 #17): fire times before the schedule was known are not judged.
@pytest.mark.parametrize(
    ("sched", "now", "seen", "health"),
    [
        pytest.param(
            schedule("0 0 29 2 *"),
            "2026-06-01T12:00:00",
            "2026-06-01T11:00:00",
            ScheduleHealth.OK,
            id="leap-day-added-today-is-not-missed-for-2024",
        ),
        pytest.param(
            schedule("0 0 29 2 *"),
            "2028-02-29T00:11:00",
            "2026-06-01T11:00:00",
            ScheduleHealth.MISSED,
            id="leap-day-missed-in-2028",
        ),
        pytest.param(
            schedule("30 2 * * *"),
            "2026-06-01T02:35:00",
            "2026-06-01T02:31:00",
            ScheduleHealth.OK,
            id="added-just-after-a-fire-time",
        ),
        pytest.param(
            schedule("30 2 * * *"),
            "2026-06-01T02:41:00",
            "2026-06-01T02:30:00",
            ScheduleHealth.MISSED,
            id="added-at-the-fire-time-itself",
        ),
        pytest.param(
            schedule("30 2 * * *"),
            "2026-06-02T02:41:00",
            "2026-06-01T02:31:00",
            ScheduleHealth.MISSED,
            id="the-next-fire-time-counts",
        ),
    ],
)
def test_fire_times_before_the_schedule_was_first_seen_are_not_judged(
    sched: Schedule, now: str, seen: str, health: ScheduleHealth
) -> None:
    view = judge(utc(now), sched, NEVER, first_seen=utc(seen))
    assert view.health is health, view.line
    assert view.first_seen == utc(seen)


def test_a_new_leap_day_schedule_says_when_it_is_next_due() -> None:
    view = judge(
        utc("2026-06-01T12:00:00"),
        schedule("0 0 29 2 *"),
        NEVER,
        first_seen=utc("2026-06-01T11:00:00"),
    )
    assert view.line == "nightly ok: export last started never, next due 2028-02-29 00:00 UTC"


def _load(tmp_path: Path, text: str) -> Schedule:
    path = tmp_path / "config.toml"
    path.write_text(text)
    (only,) = load_config(path).schedules
    return only


def test_a_schedule_loads_with_its_defaults(tmp_path: Path) -> None:
    s = _load(tmp_path, '[schedules.nightly]\nstep = "export"\ncron = "30 2 * * *"\n')
    assert (s.name, s.step, s.cron, s.tz, s.grace, s.max_runtime) == (
        "nightly",
        "export",
        "30 2 * * *",
        "UTC",
        300.0,
        None,
    )
    s = _load(
        tmp_path,
        '[schedules.n]\nstep = "e"\ncron = "0 9 * * 1-5"\ntz = "Europe/Berlin"\n'
        'grace = "10m"\nmax_runtime = "3h"\n',
    )
    assert (s.tz, s.grace, s.max_runtime) == ("Europe/Berlin", 600.0, 10800.0)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            'step = "e"\ncron = "61 2 * * *"',
            r"\[schedules.n\]: cron = '61 2 \* \* \*' is not a cron expression \(Bad minute\)",
            id="bad-minute",
        ),
        pytest.param(
            'step = "e"\ncron = "* * * *"',
            r"cron = '\* \* \* \*' has 4 fields; give five",
            id="four-fields",
        ),
        pytest.param(
            'step = "e"\ncron = "0 * * * * *"', "has 6 fields; give five", id="six-fields"
        ),
        pytest.param(
            'step = "e"\ncron = "0 2 * * *"\ntz = "Mars/Olympus"',
            r"\[schedules.n\]: tz = 'Mars/Olympus' is not an IANA time zone",
            id="bad-zone",
        ),
        pytest.param('cron = "0 2 * * *"', r"\[schedules.n\]: step is missing", id="no-step"),
        pytest.param('step = "e"', r"\[schedules.n\]: cron is missing", id="no-cron"),
        pytest.param(
            'step = "e"\ncron = "0 2 * * *"\ngrace = "0s"',
            r"\[schedules.n\]: grace must be longer than zero",
            id="zero-grace",
        ),
        pytest.param(
            'step = "e"\ncron = "0 2 * * *"\ngrase = "1m"',
            r"\[schedules.n\]: unknown key 'grase'; did you mean 'grace'",
            id="typo",
        ),
    ],
)
def test_bad_schedules_name_file_section_and_value(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[schedules.n]\n{body}\n")
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path)
    assert str(caught.value).startswith(str(path))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[watch]\nrenotify = "-1s"\n', "is not a duration"),
        ('[oncall]\nack_for = "8d"\n', 'ack_for = "8d" must be at most max_silence = "7d"'),
        ('[oncall]\nmax_silence = "0s"\n', "max_silence must be longer than zero"),
    ],
)
def test_oncall_keys_are_validated(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_renotify_zero_turns_it_off(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[watch]\nrenotify = "0s"\n')
    assert load_config(path).watch.renotify == 0.0
