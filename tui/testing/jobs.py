"""Sample jobs for the jobs view: a few jobs with their latest ended runs, and the sample fleet
with their summaries and one job's failed run still open.

The runs are made with core's real types; the summaries are folded from them as the store
folds them (``JobSummary.with_run``), so the screens show what a store with these runs shows.
"""

from __future__ import annotations

from dataclasses import replace

from zombietop.config import Schedule, View
from zombietop.job_summary import JobSummary
from zombietop.judge.monitor import Snapshot, build_snapshot
from zombietop.model import Lease, Task, TaskRecord, TaskState
from zombietop.tui.testing.builders import NOW, H, M, sample_config
from zombietop.tui.testing.fleet import sample_records, sample_samples
from zombietop.tui.testing.oncall import sample_oncall, sample_schedules

OK, FAILED = TaskState.SUCCEEDED, TaskState.FAILED

JOB_PLANS: dict[str, tuple[float, list[tuple[float, TaskState]]]] = {
    # job: (hours between runs, [(minutes the run took, how it ended), oldest first])
    "nightly-export": (
        24.0,
        [(40, OK), (42, OK), (38, OK), (45, OK), (41, OK), (90, FAILED), (44, OK), (52, OK)],
    ),
    "hourly-sync": (
        1.0,
        [(float(m), OK) for m in (3, 4, 3, 3, 5, 4, 3, 4, 3, 4, 3, 6, 4, 3, 3, 4, 3, 5, 4, 3)]
        + [(4.0, OK), (3.0, OK)],
    ),
    "report-daily": (24.0, [(12, OK), (11, OK), (13, OK), (2, FAILED), (1, FAILED)]),
    "billing-close": (168.0, [(95, OK), (110, OK), (102, OK)]),
}
"""Each sample job's runs: the last one of report-daily failed and is still open."""

SCHEDULES = (
    Schedule(name="nightly-export", step="nightly-export", job="nightly-export", cron="30 2 * * *"),
    Schedule(name="hourly-sync", step="hourly-sync", cron="0 * * * *"),
)


def _run(job: str, number: int, ended_ago: float, took: float, state: TaskState) -> Task:
    claimed = NOW - ended_ago - took
    return Task(
        task_id=f"{job}/{number}",
        run_id=f"{job}-{number}",
        step=job,
        step_type=job,
        state=state,
        exit_code=0 if state is OK else 1,
        created_at=claimed - 2,
        claimed_at=claimed,
        started_at=claimed + 30,
        finished_at=claimed + took,
        updated_at=claimed + took,
        job=job,
        run_number=number,
    )


def sample_job_runs() -> dict[str, list[Task]]:
    """By job, its ended runs, newest first (as the store's ``latest_ended_runs`` gives them)."""
    runs: dict[str, list[Task]] = {}
    for job, (every_h, plan) in JOB_PLANS.items():
        count = len(plan)
        made = []
        for index, (minutes, state) in enumerate(plan):
            later = count - 1 - index  # how many runs came after this one
            made.append(_run(job, index + 1, 25 * M + later * every_h * H, minutes * M, state))
        runs[job] = list(reversed(made))
    return runs


def sample_job_summaries() -> dict[str, JobSummary]:
    summaries = {}
    for job, runs in sample_job_runs().items():
        summary = JobSummary(name=job)
        for run in reversed(runs):
            summary = summary.with_run(run, NOW)
        summaries[job] = summary
    return summaries


def sample_jobs_snapshot(now: float = NOW, *, oncall: bool = False) -> Snapshot:
    """The sample fleet, with the sample jobs' summaries and report-daily's failed last run;
    with ``oncall``, also the sample fleet's ack, silence and schedules."""
    failed = sample_job_runs()["report-daily"][0]
    record = TaskRecord(
        task=failed, lease=Lease(task_id=failed.task_id, owner=None, token=1), heartbeat=None
    )
    snapshot = build_snapshot(
        now,
        [*sample_records(), record],
        sample_config(),
        sample_samples(),
        jobs=sample_job_summaries(),
    )
    snapshot = replace(snapshot, jobs=sample_job_summaries())
    if not oncall:
        return snapshot
    return replace(snapshot, oncall=sample_oncall(now), schedules=sample_schedules(now))


SAMPLE_VIEWS = (
    View(
        name="failing-jobs",
        rows="jobs",
        sort="success rate",
        columns=("job", "runs", "success", "trend", "last"),
    ),
    View(
        name="exports",
        rows="runs",
        filter="export",
        sort="oldest heartbeat",
        columns=("health", "task", "progress", "heartbeat", "stage"),
    ),
    View(name="all-jobs", rows="jobs"),
)
"""The saved views of the sample screens: one of jobs with fewer columns, one of runs."""
