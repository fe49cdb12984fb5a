"""The sample fleet: one task of every health at ``NOW``, and what the probe sees of it.

Built through core's real types and ``zombietop.judge.monitor.build_snapshot``; the snapshot tests
and ``scripts/export_screenshots.py`` both draw it, so the screenshots are the tested screens. Each
kind of task it shows has a builder of its own; ``sample_records`` lists them in table order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from zombietop.health import Flag, Health
from zombietop.judge.monitor import Snapshot, build_snapshot
from zombietop.judge.quiet import Counted
from zombietop.model import (
    Heartbeat,
    Lease,
    PendingKill,
    ProcessSample,
    Task,
    TaskRecord,
    TaskState,
)
from zombietop.tui.testing.builders import (
    HOST,
    NOW,
    H,
    M,
    alive_process,
    make_beat,
    make_lease,
    make_task,
    sample_config,
)
from zombietop.tui.testing.oncall import sample_oncall, sample_schedules


def sample_records(*, kill_pending: Iterable[str] = ()) -> list[TaskRecord]:
    """Every health at ``NOW``; tasks in ``kill_pending`` have a SIGTERM out, 23 s to go."""
    records = [
        _dead(),
        _reclaimable(),
        _stalled(),
        _spinning(),
        _quarantined(),
        _interrupted(),
        _starting(),
        _queued(),
        *_healthy(),
        *_finished(),
    ]
    pending = set(kill_pending)
    return [
        _with_kill_pending(record) if record.task.task_id in pending else record
        for record in records
    ]


def _dead() -> TaskRecord:
    """Dead: it claims to run, but its process is gone."""
    return TaskRecord(
        task=make_task("etl-0417", TaskState.RUNNING, started_ago=50 * M, pid=3907),
        lease=make_lease("etl-0417", 3907, expires_in=4 * M, token=3),
        heartbeat=make_beat("etl-0417", "load", 88, age=70, counters={"rows": 9_100_000}),
    )


def _reclaimable() -> TaskRecord:
    """Reclaimable (and stalled): the page from DESIGN.md."""
    return TaskRecord(
        task=make_task(
            "export-2031",
            TaskState.RUNNING,
            started_ago=5 * H,
            pid=4121,
            step_type="export",
            checkpoint="s3://exports/2031/part-0061",
        ),
        lease=make_lease("export-2031", 4121, expires_in=-(3 * H + 50 * M), token=7),
        heartbeat=make_beat(
            "export-2031",
            "transform",
            61,
            age=4 * H + 12 * M,
            stage_for=4 * H + 40 * M,
            counters={"rows": 8_200_000},
        ),
    )


def _stalled() -> TaskRecord:
    """Stalled: the lease is renewed, but no heartbeat for 6 minutes."""
    return TaskRecord(
        task=make_task("thumbs-7781", TaskState.RUNNING, started_ago=40 * M, pid=5230),
        lease=make_lease("thumbs-7781", 5230, expires_in=3 * M + 20, token=2),
        heartbeat=make_beat("thumbs-7781", "resize", 61, age=6 * M + 5, counters={"images": 6100}),
    )


def _spinning() -> TaskRecord:
    """Spinning: it beats, but its progress is stuck for 45 minutes."""
    return TaskRecord(
        task=make_task("crawl-0042", TaskState.RUNNING, started_ago=2 * H, pid=6012),
        lease=make_lease("crawl-0042", 6012, expires_in=4 * M + 30, token=1),
        heartbeat=make_beat(
            "crawl-0042",
            "fetch",
            37,
            age=8,
            stuck=45 * M,
            stage_for=70 * M,
            counters={"pages": 41_000},
        ),
    )


def _quarantined() -> TaskRecord:
    """Quarantined by the watchdog after an interruption."""
    return TaskRecord(
        task=make_task(
            "billing-0901",
            TaskState.INTERRUPTED,
            started_ago=3 * H,
            quarantined_at=NOW - 20 * M,
            quarantined_by="watchdog",
            quarantine_reason="stalled 2m at stage=invoice",
            checkpoint="/var/lib/billing/0901.ckpt",
        ),
        lease=Lease(task_id="billing-0901", owner=None, token=4),
        heartbeat=make_beat("billing-0901", "invoice", 72, age=25 * M),
    )


def _interrupted() -> TaskRecord:
    """Interrupted: stopped by SIGTERM, its checkpoint kept."""
    return TaskRecord(
        task=make_task(
            "report-3310",
            TaskState.INTERRUPTED,
            started_ago=1 * H,
            checkpoint="/srv/reports/3310/ckpt-14",
        ),
        lease=Lease(task_id="report-3310", owner=None, token=2),
        heartbeat=make_beat("report-3310", "render", 45, age=12 * M),
    )


def _starting() -> TaskRecord:
    """Starting: claimed 20 s ago, no heartbeat expected yet."""
    return TaskRecord(
        task=make_task("ingest-5120", TaskState.STARTING, started_ago=20, pid=7305),
        lease=make_lease("ingest-5120", 7305, expires_in=4 * M + 40, token=1),
        heartbeat=None,
    )


def _queued() -> TaskRecord:
    """Queued behind the reclaimable export."""
    return TaskRecord(
        task=make_task(
            "publish-2032", TaskState.QUEUED, started_ago=5 * H, upstream=("export-2031",)
        ),
        lease=None,
        heartbeat=None,
    )


def _healthy() -> list[TaskRecord]:
    """Healthy, three ways: plain, over its stage budget, with a request past its
    budget."""
    return [
        TaskRecord(
            task=make_task("ingest-5119", TaskState.RUNNING, started_ago=12 * M, pid=7211),
            lease=make_lease("ingest-5119", 7211, expires_in=4 * M + 51, token=1),
            heartbeat=make_beat(
                "ingest-5119", "parse", 34, age=3, stage_for=6 * M, counters={"files": 340}
            ),
        ),
        TaskRecord(
            task=make_task(
                "train-0008", TaskState.RUNNING, started_ago=2 * H + 5 * M, pid=8100, attempt=2
            ),
            lease=make_lease("train-0008", 8100, expires_in=4 * M + 55, token=5),
            heartbeat=make_beat(
                "train-0008", "epoch-3", 76.5, age=4, stage_for=22 * M, counters={"step": 30_600}
            ),
        ),
        TaskRecord(
            task=make_task("resize-9001", TaskState.RUNNING, started_ago=9 * M, pid=8422),
            lease=make_lease("resize-9001", 8422, expires_in=4 * M + 48, token=1),
            heartbeat=make_beat(
                "resize-9001",
                "upload",
                90,
                age=6,
                stage_for=3 * M,
                request_name="PUT s3://thumbs",
                request_started_at=NOW - 2 * M - 10,
            ),
        ),
    ]


def _finished() -> list[TaskRecord]:
    """Finished: one of each (succeeded, failed, discarded)."""
    return [
        TaskRecord(
            task=make_task(
                "backup-0730",
                TaskState.SUCCEEDED,
                started_ago=50 * M,
                exit_code=0,
                finished_at=NOW - 10 * M,
            ),
            lease=Lease(task_id="backup-0730", owner=None, token=1),
            heartbeat=make_beat("backup-0730", "verify", 100, age=10 * M),
        ),
        TaskRecord(
            task=make_task(
                "backup-0731",
                TaskState.FAILED,
                started_ago=40 * M,
                exit_code=3,
                finished_at=NOW - 5 * M,
                state_reason="disk full",
            ),
            lease=Lease(task_id="backup-0731", owner=None, token=1),
            heartbeat=make_beat("backup-0731", "copy", 12, age=5 * M),
        ),
        TaskRecord(
            task=make_task(
                "export-2029",
                TaskState.DISCARDED,
                started_ago=3 * H,
                finished_at=NOW - 30 * M,
                state_reason="discarded by alice",
            ),
            lease=Lease(task_id="export-2029", owner=None, token=3),
            heartbeat=make_beat("export-2029", "transform", 20, age=2 * H),
        ),
    ]


def _with_kill_pending(record: TaskRecord) -> TaskRecord:
    """The record with a SIGTERM out 7 s ago and its SIGKILL due in 23 s."""
    return replace(
        record,
        pending_kill=PendingKill(
            task_id=record.task.task_id,
            pid=record.task.pid or 0,
            pid_start_time=record.task.pid_start_time,
            pid_start_identity=record.task.pid_start_identity,
            host=HOST,
            requested_by="alice@laptop",
            term_sent_at=NOW - 7,
            deadline=NOW + 23,
        ),
    )


def sample_samples() -> dict[str, ProcessSample]:
    """What the probe sees: every running pid alive except etl-0417's."""
    samples = {
        "thumbs-7781": alive_process(5230, 0.0, started_ago=40 * M),
        "crawl-0042": alive_process(6012, 2.0, started_ago=2 * H),
        "ingest-5120": alive_process(7305, 4.0, started_ago=20),
        "ingest-5119": alive_process(7211, 97.0, started_ago=12 * M),
        "train-0008": alive_process(8100, 188.0, started_ago=2 * H + 5 * M),
        "resize-9001": alive_process(8422, 0.0, started_ago=9 * M),
        "export-2031": alive_process(4121, 0.0, started_ago=5 * H),
        "etl-0417": ProcessSample(pid=3907, alive=False, sampled_at=NOW),
    }
    return samples


def sample_snapshot(
    now: float = NOW, *, kill_pending: Iterable[str] = (), oncall: bool = False
) -> Snapshot:
    """The sample fleet; with ``oncall``, also an ack, a silence and schedules (one missed)."""
    snapshot = build_snapshot(
        now, sample_records(kill_pending=kill_pending), sample_config(), sample_samples()
    )
    if not oncall:
        return snapshot
    return replace(snapshot, oncall=sample_oncall(now), schedules=sample_schedules(now))


def synthetic_records(n: int, now: float = NOW) -> list[TaskRecord]:
    """``n`` healthy running tasks with varied progress and ages, for table and CPU benchmarks."""
    records = []
    for i in range(n):
        task_id = f"job-{i:05d}"
        records.append(
            TaskRecord(
                task=Task(
                    task_id=task_id,
                    run_id=f"run-{i}",
                    step="job",
                    step_type="batch",
                    state=TaskState.RUNNING,
                    host="batch-01",
                    pid=10_000 + i,
                    created_at=now - 900,
                    claimed_at=now - 890,
                    started_at=now - 890,
                    updated_at=now,
                ),
                lease=Lease(
                    task_id=task_id, owner="run@batch-01", token=1, expires_at=now + 300 - i % 10
                ),
                heartbeat=Heartbeat(
                    task_id=task_id,
                    stage="work",
                    progress=float(i % 100),
                    written_at=now - i % 50,
                    progress_changed_at=now - i % 50,
                    stage_started_at=now - 600,
                ),
            )
        )
    return records


def every_flag_snapshot(now: float = NOW) -> Snapshot:
    """The sample fleet with every ``Flag`` raised on its first (most urgent) row, so each
    screen is drawn with every flag there is, including one added later."""
    snapshot = sample_snapshot(now)
    first, *rest = snapshot.tasks
    flagged = replace(first, verdict=replace(first.verdict, flags=tuple(Flag)))
    return replace(snapshot, tasks=(flagged, *rest))


def counted_snapshot(
    snapshot: Snapshot | None = None,
    *,
    healthy: int = 921_635,
    queued: int = 3_012,
    unread: int = 12_000,
    read_at_most: int = 20_000,
) -> Snapshot:
    """``snapshot`` (the sample fleet by default) as a poll of a store past ``[monitor]
    read_at_most`` says it: the quiet tasks in its counts and in ``counted``, with no row; the
    ``unread`` tasks in ``counted`` only."""
    snapshot = snapshot or sample_snapshot()
    by_state = {TaskState.RUNNING: healthy, TaskState.QUEUED: queued}
    quiet = {health: by_state[state] for state, health in Health.of_quiet().items()}
    counts = dict(snapshot.counts)
    for health, n in quiet.items():
        counts[health] = counts.get(health, 0) + n
    counted = Counted(quiet=quiet, unread=unread, read_at_most=read_at_most)
    return replace(snapshot, counts=counts, counted=counted)
