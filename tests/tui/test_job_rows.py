"""The dashboard's rows for jobs: one row per job by default, `g` for one row per run, and a run
named by its job and number (`nightly-export #3`)."""

from __future__ import annotations

from dataclasses import replace

from textual.pilot import Pilot

from tests.tui.helpers import make_app, settle
from zombietop.model import TaskRecord, TaskState
from zombietop.monitor import Snapshot, build_snapshot
from zombietop.tui.cells import row_name
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


def _snapshot() -> Snapshot:
    return build_snapshot(NOW, _records(), sample_config(), {})


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
