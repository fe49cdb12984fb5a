"""A job judged against its own history: runs_late_usually when its start times drift (the
latest start intervals spread over drift_after x as much as the ones before), failing_more
when its runs fail failing_after x as often in the last day as in 30 days (with
failing_min_runs runs). The rules as tables, then the real watchdog over a store whose last run
is a real `zombietop run --job` (the older runs written through the store at their time):
each trend pages once."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, zombietop
from tests.core.test_watchdog import watchdog
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.health import Flag
from zombietop.job_summary import JobSummary, RunEnd
from zombietop.judge.job_trends import drift, failing, judge_trends, spread
from zombietop.model import Task, TaskState
from zombietop.run.job_runs import claim_run
from zombietop.store.sqlite import SQLiteStore

HOUR, DAY = 3600.0, 86400.0
NOW = 100 * DAY


def _task(state: TaskState, began: float, finished: float | None = None) -> Task:
    return Task(
        task_id=f"nightly/{began:.0f}",
        run_id=f"{began:.0f}",
        step="nightly",
        step_type="nightly",
        state=state,
        created_at=began,
        claimed_at=began,
        started_at=began,
        finished_at=finished,
        updated_at=began,
        job="nightly",
    )


def _summary(ends: list[RunEnd]) -> JobSummary:
    last = max((end.finished_at for end in ends), default=None)
    return JobSummary(name="nightly", runs=len(ends), ends=tuple(ends), last_finished_at=last)


def _hourly(starts: list[float], failed: set[int] = frozenset()) -> list[RunEnd]:  # type: ignore[assignment]
    return [
        RunEnd(began=at, finished_at=at + 60, succeeded=i not in failed)
        for i, at in enumerate(starts)
    ]


@pytest.mark.parametrize(
    ("starts", "next_start", "drifts"),
    [
        # Ten runs an hour apart, the eleventh on time: no drift.
        ([i * HOUR for i in range(10)], 10 * HOUR, False),
        # The last five intervals 40m, 80m, 50m, 90m, 60m after five of 60m: drift.
        (
            [i * HOUR for i in range(6)] + [5 * HOUR + m * 60 for m in (40, 120, 170, 260)],
            5 * HOUR + 320 * 60,
            True,
        ),
        # Jitter of a few seconds around the hour is under drift_min (1m): no drift.
        ([i * HOUR + (i % 2) * 5 for i in range(10)], 10 * HOUR + 30, False),
        # Too few intervals to tell: five recent need five before them.
        ([i * HOUR for i in range(5)] + [5 * HOUR + 4000], 6 * HOUR + 9000, False),
        # Start times that always spread as much: no drift.
        ([i * HOUR + (i % 2) * 1200 for i in range(10)], 10 * HOUR, False),
    ],
)
def test_runs_late_usually_rule(starts: list[float], next_start: float, drifts: bool) -> None:
    limits = load_config(None).defaults
    running = _task(TaskState.RUNNING, next_start)
    judged = drift(running, _summary(_hourly(starts)), limits)
    assert (judged is not None) is drifts
    if judged is not None:
        assert judged.flag is Flag.RUNS_LATE_USUALLY
        assert judged.reason.before.startswith("starts drift: the last 5 runs started ")


def test_spread_is_the_mean_distance_from_the_median() -> None:
    assert spread([60, 60, 60]) == 0
    assert spread([40, 60, 80]) == pytest.approx(40 / 3)
    assert spread([5]) == 0


@pytest.mark.parametrize(
    ("month_runs", "month_failed", "day_runs", "day_failed", "flags"),
    [
        (30, 0, 4, 3, True),  # 75% today against 3 of 34 (9%) in the month
        (30, 0, 4, 0, False),  # nothing failed today
        (10, 0, 4, 3, False),  # 14 runs in 30 days: fewer than failing_min_runs (20)
        (30, 15, 4, 2, False),  # 50% today against 17 of 34 (50%): the job's usual rate
        (16, 0, 4, 1, True),  # 25% today against 1 of 20 (5%): 5x, with exactly 20 runs
        (40, 4, 10, 3, False),  # 30% today against 7 of 50 (14%): 2.1x, under 3x
    ],
)
def test_failing_more_rule(
    month_runs: int, month_failed: int, day_runs: int, day_failed: int, flags: bool
) -> None:
    limits = load_config(None).defaults
    older = [
        RunEnd(
            began=NOW - 20 * DAY + i * HOUR,
            finished_at=NOW - 20 * DAY + i * HOUR + 60,
            succeeded=i >= month_failed,
        )
        for i in range(month_runs)
    ]
    today = [
        RunEnd(
            began=NOW - 10 * HOUR + i * HOUR,
            finished_at=NOW - 10 * HOUR + i * HOUR + 60,
            succeeded=i >= day_failed,
        )
        for i in range(day_runs)
    ]
    summary = _summary(older + today)
    judged, changes = failing(NOW, summary, limits)
    rate_day = day_failed / day_runs
    rate_month = (month_failed + day_failed) / (month_runs + day_runs)
    expected = month_runs + day_runs >= 20 and day_failed > 0 and rate_day >= 3 * rate_month
    assert expected is flags
    assert (judged is not None) is expected
    # The answer next changes when the oldest of today's runs leaves the day.
    assert changes == NOW - 10 * HOUR + 60 + DAY


def test_only_a_running_run_and_the_last_to_end_carry_the_trends() -> None:
    limits = replace(load_config(None).defaults, failing_min_runs=2)
    ends = (
        [RunEnd(began=NOW - 3 * HOUR, finished_at=NOW - 2 * HOUR, succeeded=True)]
        + [
            RunEnd(began=NOW - DAY * 10 - i, finished_at=NOW - DAY * 10 - i + 1, succeeded=True)
            for i in range(10)
        ]
        + [RunEnd(began=NOW - HOUR, finished_at=NOW - 30, succeeded=False)]
    )
    summary = _summary(ends)
    last = _task(TaskState.FAILED, NOW - HOUR, NOW - 30)
    older = _task(TaskState.SUCCEEDED, NOW - 3 * HOUR, NOW - 2 * HOUR)
    running = _task(TaskState.RUNNING, NOW - 10)
    flags = {
        name: Flag.FAILING_MORE
        in [trend.flag for trend in judge_trends(NOW, task, summary, limits)[0]]
        for name, task in (("last", last), ("older", older), ("running", running))
    }
    assert flags == {"last": True, "older": False, "running": True}


# Real runs, with the past written through the store ----------------------------------------


async def _past_runs(db: Path, ends: list[tuple[float, bool]]) -> None:
    """Runs of ``nightly`` that began at each moment and took a minute, as the store would
    have recorded them then (a real run's store clock is anchored to this boot: it cannot run
    in the past)."""
    clock = FakeClock(ends[0][0])
    store = await SQLiteStore.open(db, clock=clock, create=True)
    try:
        for began, ok in ends:
            clock.set(began)
            claim = await claim_run(store, job="nightly", owner="past", ttl=3600.0)
            clock.advance(60)
            state = TaskState.SUCCEEDED if ok else TaskState.FAILED
            await store.finish_task(
                claim.task.task_id,
                owner="past",
                token=claim.token,
                state=state,
                exit_code=0 if ok else 3,
            )
    finally:
        await store.close()


QUICK_IS_FINE = "too_fast_below = 0\n"
"""The past runs took a minute, the real ones less than a second: not the rule under test."""
NO_DRIFT = "history_min_runs = 100\n"
"""Runs weeks apart, then hours apart, drift: not the rule under test either."""


def _real_run(db: Path, config: Path, script: str, expect: int = 0) -> None:
    """One real run of ``nightly`` under ``zombietop run``, now."""
    done = subprocess.run(
        zombietop(db, config, "run", "--job", "nightly", "--", "sh", "-c", script),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == expect, done.stderr


async def _watch_twice(db: Path, config: Path) -> list[tuple[str, str]]:
    """Two looks of the real watchdog, as of now: the pages they sent."""
    store = await SQLiteStore.open(db)
    try:
        clock = FakeClock(await store.now())
    finally:
        await store.close()
    store = await SQLiteStore.open(db, clock=clock)
    try:
        dog, notifier, _ = watchdog(store, clock, load_config(config))
        await dog.tick()
        clock.advance(30)
        await dog.tick()
    finally:
        await store.close()
    return [(str(page.kind), page.line) for page in notifier.pages]


async def test_a_job_whose_start_times_drift_is_paged_once(db: Path, tmp_path: Path) -> None:
    config = tmp_path / "trends.toml"
    config.write_text(FAST_CONFIG + "\n[history]\nhistory_min_runs = 3\n" + QUICK_IS_FINE)
    now = time.time()
    # Three intervals of an hour, then 70m, 50m, and the real run now, 300m later.
    await _past_runs(
        db, [(now + minutes * 60, True) for minutes in (-600, -540, -480, -420, -350, -300)]
    )
    _real_run(db, config, "true")
    pages = await _watch_twice(db, config)
    assert [kind for kind, _ in pages] == ["runs_late_usually"], pages
    line = pages[0][1]
    assert line.startswith("nightly/") and "succeeded, runs_late_usually" in line
    assert re.search(
        r"starts drift: the last 3 runs started 1h2\dm off their usual interval on average, "
        r"before 0s \(every 1h00m\)",
        line,
    ), line


async def test_a_job_that_fails_more_than_usual_is_paged_once(db: Path, tmp_path: Path) -> None:
    config = tmp_path / "trends.toml"
    config.write_text(
        FAST_CONFIG + "\n[step_types.nightly]\npage_on_failure = false\n" + QUICK_IS_FINE + NO_DRIFT
    )
    now = time.time()
    # 20 good runs three weeks ago, two failures in the last hours; then a real failure and a
    # real good run: 3 of 4 failed in the day, 3 of 24 in 30 days.
    good = [(now - 21 * DAY + hours * HOUR, True) for hours in range(20)]
    await _past_runs(db, [*good, (now - 3 * HOUR, False), (now - 2 * HOUR, False)])
    _real_run(db, config, "exit 3", expect=3)
    _real_run(db, config, "true")
    pages = await _watch_twice(db, config)
    assert [kind for kind, _ in pages] == ["failing_more"], pages
    line = pages[0][1]
    assert "failing more: 3 of 4 runs failed in the last day, 3 of 24 in 30 days (6.0x" in line


async def test_a_failure_that_tips_the_rate_says_so_in_its_own_page(
    db: Path, tmp_path: Path
) -> None:
    """With page_on_failure (the default), the failure's incident page carries the trend, and
    no page of its own goes out."""
    config = tmp_path / "trends.toml"
    config.write_text(FAST_CONFIG + "\n[history]\n" + NO_DRIFT)
    now = time.time()
    good = [(now - 21 * DAY + hours * HOUR, True) for hours in range(20)]
    await _past_runs(db, [*good, (now - 3 * HOUR, False), (now - 2 * HOUR, False)])
    _real_run(db, config, "exit 3", expect=3)
    pages = await _watch_twice(db, config)
    assert [kind for kind, _ in pages] == ["incident"], pages
    assert "failed: exit 3 after " in pages[0][1]
    assert "; failing more: 3 of 3 runs failed in the last day, 3 of 23 in 30 days" in pages[0][1]


def test_a_summary_keeps_its_ends_in_end_order_for_30_days() -> None:
    """Runs folded out of order (a source's, as a poll reads them) are kept by their end, and
    a run that ended 30 days before the newest leaves the list."""
    summary = JobSummary(name="nightly")
    for began, took in ((NOW - 40 * DAY, 60), (NOW - 2 * HOUR, 60), (NOW - 5 * HOUR, 60)):
        summary = summary.with_run(_task(TaskState.SUCCEEDED, began, began + took), NOW)
    assert [end.began for end in summary.ends] == [NOW - 5 * HOUR, NOW - 2 * HOUR]
