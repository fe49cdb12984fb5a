"""The dashboard's rows for jobs: one row per job by default, `g` for one row per run, and a run
named by its job and number (`nightly-export #3`)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.pilot import Pilot

from tests.tui.helpers import make_app, settle
from zombietop.health import Flag
from zombietop.job_summary import JobSummary
from zombietop.judge.monitor import Snapshot, build_snapshot
from zombietop.model import TaskRecord, TaskState
from zombietop.tui.cells import RowNote, RowNotes, row_name, running_per_job, task_column
from zombietop.tui.screens.detail import history_eta
from zombietop.tui.screens.oncall import AckScreen
from zombietop.tui.task_order import SortMode, ordered
from zombietop.tui.testing import NOW, SampleSource, sample_config, synthetic_records

# (job, run number, state): two finished runs and a running one of nightly-export, two of
# backup (the latest failed), and a task of no job.
RUNS = (
    ("nightly-export", 1, TaskState.SUCCEEDED),
    ("nightly-export", 2, TaskState.SUCCEEDED),
    ("nightly-export", 3, TaskState.RUNNING),
    ("backup", 1, TaskState.SUCCEEDED),
    ("backup", 2, TaskState.FAILED),
    (None, None, TaskState.RUNNING),
)


def _records() -> list[TaskRecord]:
    records = []
    for record, (job, number, state) in zip(synthetic_records(len(RUNS)), RUNS, strict=True):
        task = record.task
        if job is not None:
            task = replace(task, task_id=f"{job}/2026120{number}T023000Z", job=job)
            task = replace(task, run_number=number)
        if state.finished:
            task = replace(task, state=state, finished_at=NOW - 3600 * (4 - (number or 0)))
            record = replace(record, lease=None, heartbeat=None)
        record = replace(record, task=task)
        if record.heartbeat is not None:
            record = replace(record, heartbeat=replace(record.heartbeat, task_id=task.task_id))
        records.append(record)
    return records


NIGHTLY = JobSummary(
    name="nightly-export",
    runs=12,
    succeeded=11,
    last_outcome=TaskState.SUCCEEDED,
    last_success_at=NOW - 3600,
    durations=(2400.0, 2460.0, 2280.0, 2520.0, 3120.0, 2400.0, 2340.0, 2580.0, 2400.0, 1800.0),
)


def _snapshot() -> Snapshot:
    snapshot = build_snapshot(NOW, _records(), sample_config(), {})
    return replace(snapshot, jobs={"nightly-export": NIGHTLY})


def test_one_row_per_job_keeps_its_most_urgent_run_else_its_latest() -> None:
    snapshot = _snapshot()
    per_job = ordered(snapshot, SortMode.URGENCY, "", per_run=False)
    assert sorted(row_name(view) for view in per_job) == [
        "backup #2",
        "job-00005",
        "nightly-export #3",
    ]
    per_run = ordered(snapshot, SortMode.URGENCY, "", per_run=True)
    assert per_run is snapshot.tasks and len(per_run) == len(RUNS)


def test_a_job_with_two_runs_running_says_plus_one_running() -> None:
    """Runs of one job that overlap: its row says how many others run beside it."""
    records = _records()
    running = next(r for r in records if r.task.job == "nightly-export" and r.task.run_number == 3)
    fourth = replace(running.task, task_id="nightly-export/20261204T023000Z", run_number=4)
    snapshot = build_snapshot(NOW, [*records, replace(running, task=fourth)], sample_config(), {})
    notes = RowNotes(running=running_per_job(snapshot.tasks))
    views = snapshot.by_id()
    for run in ("nightly-export/20261203T023000Z", "nightly-export/20261204T023000Z"):
        assert notes.of(views[run]) == RowNote(also_running=1)
    assert all(notes.of(v) is None for v in snapshot.tasks if v.task.job != "nightly-export")
    (view,) = [
        v
        for v in ordered(snapshot, SortMode.URGENCY, "", per_run=False)
        if v.task.job == "nightly-export"
    ]
    cell = task_column(40).render(view, NOW, notes.of(view))
    assert "+1 running" in cell.plain, cell.plain
    alone = build_snapshot(NOW, records, sample_config(), {})
    assert running_per_job(alone.tasks) == {}


@pytest.mark.parametrize("sort", list(SortMode))
def test_a_jobs_row_is_its_most_urgent_run_whatever_the_order(sort: SortMode) -> None:
    """Two runs of nightly-export run, the later one silent for hours: its row is the silent
    run in every order, not whichever run the order puts first."""
    records = _records()
    running = next(r for r in records if r.task.job == "nightly-export" and r.task.run_number == 3)
    fourth = replace(running.task, task_id="nightly-export/20261204T023000Z", run_number=4)
    assert running.heartbeat is not None
    silent = replace(
        running.heartbeat,
        task_id=fourth.task_id,
        progress=99.0,
        written_at=NOW - 4 * 3600,
        progress_changed_at=NOW - 4 * 3600,
    )
    snapshot = build_snapshot(
        NOW, [*records, replace(running, task=fourth, heartbeat=silent)], sample_config(), {}
    )
    assert snapshot.tasks[0].task_id == fourth.task_id  # the most urgent of every task
    (row,) = [
        v for v in ordered(snapshot, sort, "", per_run=False) if v.task.job == "nightly-export"
    ]
    assert row.task_id == fourth.task_id


def test_a_run_slower_than_usual_says_by_how_much() -> None:
    """nightly-export usually takes 40m (its median); a run at 1h40m reads 2.5x usual."""
    records = _records()
    running = next(r for r in records if r.task.job == "nightly-export" and r.task.run_number == 3)
    slow = replace(
        running, task=replace(running.task, claimed_at=NOW - 6000, started_at=NOW - 6000)
    )
    records = [slow if r is running else r for r in records]
    jobs = {"nightly-export": NIGHTLY}
    snapshot = build_snapshot(NOW, records, sample_config(), {}, jobs=jobs)
    view = snapshot.by_id()[running.task.task_id]
    assert Flag.SLOWER_THAN_USUAL in view.verdict.flags
    cell = task_column(40).render(view, NOW, None)
    assert "!2.5x usual" in cell.plain, cell.plain


def test_job_rows_80x24(snap_compare):
    """One row per job: 'nightly-export #3' (its running run, healthy), 'backup #2' (its latest
    run, failed) and 'job-00005' (a task of no job); no other runs."""
    app = make_app(SampleSource([_snapshot()]))
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)


def test_run_rows_after_g_80x24(snap_compare):
    """After g, one row per run: nightly-export #1, #2 and #3, backup #1 and #2, and job-00005;
    a toast says 'one row per run'."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)

    app = make_app(SampleSource([_snapshot()]))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_job_detail_110x40(snap_compare):
    """Enter on nightly-export #3: a 'job' row 'nightly-export, run #3: 12 runs, 92% succeeded,
    median 40m00s, p95 47m56s' with a bar per run of its last 10 successful durations (the
    tallest the 52m run, the lowest the 30m one) and 'the last 10 successful runs', and the
    stage row 'work at 2%, ~25m10s by history' (no ETA reported: the median less the time it
    has run)."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)

    app = make_app(SampleSource([_snapshot()]))
    assert snap_compare(app, terminal_size=(110, 40), run_before=run_before)


async def test_a_on_a_jobs_row_acks_the_jobs_open_incident() -> None:
    """backup #2 failed and #3 runs: the job's row shows #3, and `a` there acks #2, as
    `zombietop ack backup` does; after `g`, `a` acks the run under the cursor."""
    failed, running = _records()[4], _records()[5]
    task = replace(running.task, task_id="backup/20261203T023000Z", job="backup", run_number=3)
    third = replace(
        running,
        task=task,
        heartbeat=running.heartbeat and replace(running.heartbeat, task_id=task.task_id),
        lease=running.lease and replace(running.lease, task_id=task.task_id),
    )
    snapshot = build_snapshot(NOW, [*_records(), third], sample_config(), {})
    rows = [v.task_id for v in ordered(snapshot, SortMode.URGENCY, "", per_run=False)]
    assert task.task_id in rows and failed.task.task_id not in rows
    app = make_app(SampleSource([snapshot]))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press(*["down"] * rows.index(task.task_id), "a")
        await settle(pilot)
        assert isinstance(app.screen, AckScreen)
        assert app.screen.view.task_id == failed.task.task_id
        await pilot.press("escape", "g")
        await settle(pilot)
        per_run = [v.task_id for v in ordered(snapshot, SortMode.URGENCY, "", per_run=True)]
        await pilot.press("home", *["down"] * per_run.index(task.task_id), "a")
        await settle(pilot)
        assert isinstance(app.screen, AckScreen)
        assert app.screen.view.task_id == task.task_id


def test_the_eta_by_history_counts_from_the_claim() -> None:
    """A run claimed 10m ago that beat first a minute ago has run 10m of its job's 40m."""
    snapshot = _snapshot()
    view = next(
        v for v in snapshot.tasks if v.task.job == "nightly-export" and v.task.run_number == 3
    )
    view = replace(view, task=replace(view.task, claimed_at=NOW - 600, started_at=NOW - 60))
    assert history_eta(view, NOW, NIGHTLY) == ", ~30m00s by history"
