"""The jobs view's rows (``zombietop.judge.job_table``): a pure function of a job's runs, its
summary and its schedules, table-tested; and the store's read of every job's latest ended runs,
on both backends."""

from __future__ import annotations

import pytest

from zombietop.clock import FakeClock
from zombietop.config import Schedule
from zombietop.job_summary import JobSummary
from zombietop.judge.job_table import (
    TREND_RUNS,
    JobRow,
    JobSort,
    RecentRun,
    job_rows,
    matches,
    next_run_of,
    recent_runs,
    sorted_rows,
    sparkline,
)
from zombietop.model import Task, TaskState
from zombietop.run.job_runs import claim_run
from zombietop.store import Store

T0 = 1_764_547_200.0  # 2025-12-01T00:00:00Z, a Monday
OK, FAILED = TaskState.SUCCEEDED, TaskState.FAILED


def _run(
    number: int,
    *,
    job: str = "nightly",
    took: float = 60.0,
    state: TaskState = OK,
    claimed: float | None = None,
    started_late: float = 0.0,
) -> Task:
    """Run ``number`` of ``job``: claimed at ``claimed`` (default: an hour per run after T0),
    its first heartbeat ``started_late`` after its claim, and ended ``took`` after its claim."""
    claimed_at = T0 + number * 3600 if claimed is None else claimed
    return Task(
        task_id=f"{job}/{number}",
        run_id=str(number),
        step=job,
        step_type=job,
        state=state,
        created_at=claimed_at,
        claimed_at=claimed_at,
        started_at=claimed_at + started_late,
        finished_at=None if not state.finished else claimed_at + took,
        updated_at=claimed_at + took,
        job=job,
        run_number=number,
    )


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ((), ""),
        (((10, OK),), "█"),
        (((0, OK), (0, OK)), "▁▁"),
        (((10, OK), (70, OK), (30, OK)), "▂█▄"),
        (((70, OK), (500, FAILED), (70, OK)), "█x█"),
        (((70, TaskState.DISCARDED), (70, TaskState.INTERRUPTED)), "xx"),
    ],
    ids=["none", "one", "all-zero", "heights", "failure-is-x-not-a-height", "other-ends"],
)
def test_the_sparkline_reads_without_colour(
    runs: tuple[tuple[float, TaskState], ...], expected: str
) -> None:
    assert sparkline([RecentRun(duration_s=d, outcome=o) for d, o in runs]) == expected


def test_a_duration_counts_from_the_claim_not_the_first_heartbeat() -> None:
    """A job that beats once, at its end, took as long as it ran, not 0 s."""
    late = _run(1, took=600.0, started_late=599.0)
    assert recent_runs([late]) == (RecentRun(duration_s=600.0, outcome=OK),)


def test_the_trend_keeps_the_latest_ended_runs_oldest_first() -> None:
    runs = [_run(n, took=float(n)) for n in range(1, TREND_RUNS + 6)]
    running = _run(99, state=TaskState.RUNNING)
    trend = recent_runs([running, *reversed(runs)])
    assert len(trend) == TREND_RUNS
    assert [run.duration_s for run in trend] == [float(n) for n in range(6, TREND_RUNS + 6)]


NIGHTLY = Schedule(name="nightly", step="nightly", job="nightly", cron="30 2 * * *")
HOURLY_STEP = Schedule(name="hourly", step="hourly", cron="0 * * * *")


@pytest.mark.parametrize(
    ("job", "now", "expected"),
    [
        ("nightly", T0, T0 + 2.5 * 3600),
        ("nightly", T0 + 3 * 3600, T0 + 26.5 * 3600),
        ("hourly", T0 + 60, T0 + 3600),
        ("weekly", T0, None),
    ],
    ids=["today", "tomorrow", "by-step", "no-schedule"],
)
def test_the_next_run_comes_from_the_jobs_schedule(
    job: str, now: float, expected: float | None
) -> None:
    assert next_run_of(job, [NIGHTLY, HOURLY_STEP], now) == expected


def test_rows_join_summaries_runs_schedules_and_incidents() -> None:
    summary = JobSummary(name="nightly").with_run(_run(1, took=30), T0)
    summary = summary.with_run(_run(2, took=90, state=FAILED), T0)
    source_runs = [_run(1, job="dag/load", took=5), _run(2, job="dag/load", took=15)]
    rows = job_rows(
        T0,
        {"nightly": summary},
        {"nightly": [_run(2, took=90, state=FAILED), _run(1, took=30)], "dag/load": source_runs},
        [HOURLY_STEP],
        {"nightly": "nightly/2"},
    )
    assert [row.name for row in rows] == ["dag/load", "hourly", "nightly"]
    load, hourly, nightly = rows
    # A source's job keeps no summary: it is summed up from its runs.
    assert (load.summary.runs, load.summary.succeeded, load.summary.median_s) == (2, 2, 10.0)
    assert load.trend == "▃█" and load.incident is None and load.next_run_at is None
    # A scheduled job that never ran still has its row, with its next run.
    assert (hourly.summary.runs, hourly.trend, hourly.next_run_at) == (0, "", T0 + 3600)
    assert (nightly.summary.runs, nightly.trend, nightly.incident) == (2, "█x", "nightly/2")
    assert nightly.as_json() == {
        "name": "nightly",
        "runs": 2,
        "succeeded": 1,
        "success_rate": 0.5,
        "median_s": 30.0,
        "p95_s": 30.0,
        "recent": [
            {"duration_s": 30.0, "outcome": "succeeded"},
            {"duration_s": 90.0, "outcome": "failed"},
        ],
        "trend": "█x",
        "last_outcome": "failed",
        "last_finished_at": "2025-12-01T02:01:30Z",
        "next_run_at": None,
        "open_incident": "nightly/2",
    }


def _row(name: str, *ends: tuple[float, TaskState], incident: str | None = None) -> JobRow:
    summary = JobSummary(name=name)
    for number, (took, state) in enumerate(ends, start=1):
        summary = summary.with_run(_run(number, job=name, took=took, state=state), T0)
    return JobRow(summary=summary, incident=incident)


ROWS = (
    _row("a-fine", (10, OK), (10, OK)),
    _row("b-failed", (10, OK), (500, FAILED)),
    _row("c-stuck", (900, OK), incident="c-stuck/2"),
    _row("d-new"),
)


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        (JobSort.URGENCY, ["c-stuck", "b-failed", "a-fine", "d-new"]),
        (JobSort.NAME, ["a-fine", "b-failed", "c-stuck", "d-new"]),
        (JobSort.SUCCESS, ["b-failed", "a-fine", "c-stuck", "d-new"]),
        (JobSort.P95, ["c-stuck", "a-fine", "b-failed", "d-new"]),
        (JobSort.LAST_RUN, ["b-failed", "a-fine", "c-stuck", "d-new"]),
    ],
)
def test_each_sort(sort: JobSort, expected: list[str]) -> None:
    assert [row.name for row in sorted_rows(reversed(ROWS), sort)] == expected


def test_the_filter_matches_the_name_and_the_last_outcome() -> None:
    assert [row.name for row in ROWS if matches(row, "FAIL")] == ["b-failed"]
    assert [row.name for row in ROWS if matches(row, "stuck")] == ["c-stuck"]


async def test_the_store_reads_each_jobs_latest_ended_runs(store: Store, clock: FakeClock) -> None:
    """Both backends run the same block: ranked per job, newest first, running runs left out."""
    for job, runs in (("a", 4), ("b", 2)):
        for number in range(runs):
            claim = await claim_run(store, job=job, owner="t", ttl=60.0)
            clock.advance(10 + number)
            await store.finish_task(
                claim.task.task_id,
                owner="t",
                token=claim.token,
                state=FAILED if number == 1 else OK,
            )
    await claim_run(store, job="a", owner="t", ttl=60.0)  # a fifth run, still going
    latest = await store.latest_ended_runs(3)
    assert {job: [run.run_number for run in runs] for job, runs in latest.items()} == {
        "a": [4, 3, 2],
        "b": [2, 1],
    }
    rows = job_rows(await store.now(), {s.name: s for s in await store.job_summaries()}, latest)
    assert [(row.name, row.summary.runs, row.trend) for row in rows] == [
        ("a", 4, "x▇█"),
        ("b", 2, "█x"),
    ]


async def test_the_store_reads_again_only_the_jobs_changed_since(
    store: Store, clock: FakeClock
) -> None:
    for job in ("a", "b", "a"):
        claim = await claim_run(store, job=job, owner="t", ttl=60.0)
        clock.advance(10)
        await store.finish_task(claim.task.task_id, owner="t", token=claim.token, state=OK)
    read_to = max(summary.updated_at for summary in await store.job_summaries())
    clock.advance(5)
    claim = await claim_run(store, job="b", owner="t", ttl=60.0)
    clock.advance(7)
    await store.finish_task(claim.task.task_id, owner="t", token=claim.token, state=FAILED)
    changed = await store.latest_ended_runs(20, changed_after=read_to + 0.001)
    assert {job: [(r.run_number, r.state) for r in runs] for job, runs in changed.items()} == {
        "b": [(2, FAILED), (1, OK)]
    }
    assert await store.latest_ended_runs(0) == {}
