"""A failed run is an incident: open from its failure until a later run of its job succeeds,
or the run is resumed (it is no longer failed) or discarded.

The watchdog pages it once and follows it up like any incident; ``status`` is CRITICAL while it
is open, also once the run has left the finished window: the jobs table says which jobs' latest
run failed (``older_failures``), so that costs one row per such job, never a scan of the runs.
``page_on_failure = false`` for a step type turns this off. A task with no job is its own job of
one run: only resuming or discarding it ends its failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from zombietop.config import Config
from zombietop.durations import format_age
from zombietop.job_summary import JobSummary, run_duration
from zombietop.judge.snapshot import Snapshot, TaskView, finished_view
from zombietop.judge.verdict import FAILING_REASON, format_progress
from zombietop.model import TaskState
from zombietop.output import LastOutput, with_last_output

if TYPE_CHECKING:
    from zombietop.store import Store

ASK = " - rerun, resume or discard"


def failure_open(view: TaskView, jobs: Mapping[str, JobSummary]) -> bool:
    """True while the failed run ``view`` is an open incident."""
    task = view.task
    if task.state is not TaskState.FAILED or not view.limits.page_on_failure:
        return False
    if task.job is None:
        return True
    summary = jobs.get(task.job)
    succeeded_at = None if summary is None else summary.last_success_at
    return succeeded_at is None or task.finished_at is None or succeeded_at < task.finished_at


def failure_line(view: TaskView, last: LastOutput | None, now: float, blocks: str = "") -> str:
    """``export/20261201T023000Z failed: exit 3 after 12m at stage=copy p=40%; last output 0s
    ago: rsync: connection reset - rerun, resume or discard``; ``blocks`` (``; blocks 2: ...``,
    ``root_causes``) after the failure."""
    task, beat = view.task, view.heartbeat
    how = f"exit {task.exit_code}" if task.exit_code is not None else (task.state_reason or "")
    line = f"{task.task_id} failed: {how}".rstrip()
    took = run_duration(task)
    if took is not None:
        line += f" after {format_age(took)}"
    if beat is not None and beat.reports_progress:
        where = f" stage={beat.stage}" if beat.stage else ""
        line += f" at{where} p={format_progress(beat.progress)}"
    # The job's trend is news the failure's own page carries: it opens no page of its own.
    line += "".join(f"; {r.words(now)}" for r in view.verdict.reasons if r.code == FAILING_REASON)
    return with_last_output(line + blocks, last, now) + _ask(view)


def _ask(view: TaskView) -> str:
    """What a failure page ends with: zombietop refuses rerun, resume and discard for an
    engine's task, so such a page names the engine's own actions."""
    actions = view.limits.engine_actions
    return f" - {actions}" if actions else ASK


def open_failures(snapshot: Snapshot) -> list[TaskView]:
    """The failed runs that are open incidents: the snapshot's own, then the older ones. A
    failed run whose health pages (its process lives on: orphaned) is that incident, not two."""
    shown = [
        view
        for view in snapshot.tasks
        if failure_open(view, snapshot.jobs) and not view.health.pages
    ]
    return [*shown, *snapshot.older_failures]


def open_incidents(snapshot: Snapshot) -> list[TaskView]:
    """The runs whose incident is open: those that page (stuck), then the open failed runs."""
    return [*(view for view in snapshot.tasks if view.health.pages), *open_failures(snapshot)]


def job_incident(snapshot: Snapshot, job: str) -> TaskView | None:
    """The open incident of ``job``: its latest run that is stuck or failed and still open
    (None: it has none). A task with no job is its own job of one run."""
    runs = [view for view in open_incidents(snapshot) if view.task.job_name == job]
    return max(
        runs, key=lambda view: (view.task.run_number or 0, view.task.created_at), default=None
    )


def incident_of_row(snapshot: Snapshot, view: TaskView) -> TaskView:
    """What an ack of a job's row acts on: the run itself when its incident is open, else the
    job's open incident (its latest failed or stuck run), else the run."""
    if view.health.pages or any(v.task_id == view.task_id for v in open_failures(snapshot)):
        return view
    return job_incident(snapshot, view.task.job_name) or view


async def older_failures(store: Store, config: Config, snapshot: Snapshot) -> Snapshot:
    """The snapshot with the open failed runs that ended before its finished window: those
    that are still the latest run of their job to end (a later success, a resume or a discard
    ends one). A run pruned from the store is no longer known."""
    if snapshot.taken_at is None:
        return snapshot
    now = snapshot.taken_at
    shown = {view.task_id for view in snapshot.tasks}
    views = []
    for record in await store.failed_latest_runs(now - config.finished_window):
        if record.task.task_id in shown:
            continue
        view = finished_view(now, record, config)
        if failure_open(view, snapshot.jobs):
            views.append(view)
    return replace(snapshot, older_failures=tuple(views))
