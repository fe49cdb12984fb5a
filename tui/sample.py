"""A fixed fake fleet with every health present, at a frozen ``now``.

Built through core's real types and ``zombietop.monitor.build_snapshot``; the snapshot tests and
``scripts/export_screenshots.py`` both draw it, so the screenshots are the tested screens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import ClassVar

from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.config import Config, Schedule, default_config
from zombietop.model import (
    Ack,
    Event,
    EventKind,
    Heartbeat,
    HeartbeatSource,
    HistoryPoint,
    Lease,
    Matcher,
    PendingKill,
    ProcessSample,
    Silence,
    StepRuns,
    Task,
    TaskRecord,
    TaskState,
)
from zombietop.monitor import Snapshot, build_snapshot
from zombietop.oncall import OnCall
from zombietop.output import LastOutput
from zombietop.schedules import ScheduleView, judge, order
from zombietop.start_identity import StartIdentity

NOW = 1_796_000_000.0
"""2026-11-30 00:53:20 UTC: the frozen moment every sample screen shows."""
HOST = "batch-01"
BOOTED = NOW - 9 * 86400.0
"""When the sample host booted: the kernel counts its processes' starts in ticks from here."""
BOOT_ID = "5d3ac1f0-7a9e-4d6b-9a51-2f0c8e4b7d21"
M, H = 60.0, 3600.0


def _started(ago: float) -> StartIdentity:
    """The kernel's count of a sample process's start (100 ticks a second)."""
    return StartIdentity(boot_id=BOOT_ID, ticks=round((NOW - ago - BOOTED) * 100))


def sample_config() -> Config:
    """The defaults, plus an ``export`` step type with a longer stage budget from a file."""
    config = default_config()
    export = replace(
        config.defaults,
        stage=45 * M,
        step_type="export",
        sources={"stage": "config.toml [step_types.export]"},
    )
    return replace(config, step_types={"export": export})


def _task(
    task_id: str,
    state: TaskState,
    *,
    started_ago: float,
    pid: int | None = None,
    step_type: str = "batch",
    attempt: int = 1,
    **extra: object,
) -> Task:
    run, _, number = task_id.rpartition("-")
    return Task(
        task_id=task_id,
        run_id=f"{run}-run-{number}",
        step=run,
        step_type=step_type,
        state=state,
        attempt=attempt,
        host=HOST if pid is not None or state.executing else None,
        pid=pid,
        pid_start_time=NOW - started_ago if pid is not None else None,
        pid_start_identity=_started(started_ago) if pid is not None else None,
        created_at=NOW - started_ago - 5,
        claimed_at=NOW - started_ago if state is not TaskState.QUEUED else None,
        started_at=NOW - started_ago
        if state not in (TaskState.QUEUED, TaskState.STARTING)
        else None,
        updated_at=NOW - 1,
        **extra,  # type: ignore[arg-type]
    )


def _lease(task_id: str, pid: int, *, expires_in: float, token: int = 1) -> Lease:
    return Lease(
        task_id=task_id,
        owner=f"run-{pid}@{HOST}",
        token=token,
        acquired_at=NOW - 2 * H,
        renewed_at=NOW + expires_in - 300,
        expires_at=NOW + expires_in,
    )


def _beat(
    task_id: str,
    stage: str,
    progress: float,
    *,
    age: float,
    stuck: float | None = None,
    stage_for: float = 5 * M,
    **extra: object,
) -> Heartbeat:
    return Heartbeat(
        task_id=task_id,
        stage=stage,
        progress=progress,
        written_at=NOW - age,
        progress_changed_at=NOW - (stuck if stuck is not None else age),
        stage_started_at=NOW - stage_for,
        seq=100,
        **extra,  # type: ignore[arg-type]
    )


def _alive(pid: int, cpu: float, *, started_ago: float) -> ProcessSample:
    return ProcessSample(
        pid=pid,
        alive=True,
        status="sleeping" if cpu < 1 else "running",
        cpu_percent=cpu,
        rss_bytes=412 * 2**20,
        threads=4,
        create_time=NOW - started_ago,
        sampled_at=NOW,
    )


def sample_records(*, kill_pending: Iterable[str] = ()) -> list[TaskRecord]:
    """Every health at ``NOW``; tasks in ``kill_pending`` have a SIGTERM out, 23 s to go."""
    records = [
        # dead: claims to run, its process is gone.
        TaskRecord(
            task=_task("etl-0417", TaskState.RUNNING, started_ago=50 * M, pid=3907),
            lease=_lease("etl-0417", 3907, expires_in=4 * M, token=3),
            heartbeat=_beat("etl-0417", "load", 88, age=70, counters={"rows": 9_100_000}),
        ),
        # reclaimable (and stalled): the page from DESIGN.md.
        TaskRecord(
            task=_task(
                "export-2031",
                TaskState.RUNNING,
                started_ago=5 * H,
                pid=4121,
                step_type="export",
                checkpoint="s3://exports/2031/part-0061",
            ),
            lease=_lease("export-2031", 4121, expires_in=-(3 * H + 50 * M), token=7),
            heartbeat=_beat(
                "export-2031",
                "transform",
                61,
                age=4 * H + 12 * M,
                stage_for=4 * H + 40 * M,
                counters={"rows": 8_200_000},
            ),
        ),
        # stalled: the lease is renewed, but no heartbeat for 6 minutes.
        TaskRecord(
            task=_task("thumbs-7781", TaskState.RUNNING, started_ago=40 * M, pid=5230),
            lease=_lease("thumbs-7781", 5230, expires_in=3 * M + 20, token=2),
            heartbeat=_beat("thumbs-7781", "resize", 61, age=6 * M + 5, counters={"images": 6100}),
        ),
        # spinning: beating, progress stuck for 45 minutes.
        TaskRecord(
            task=_task("crawl-0042", TaskState.RUNNING, started_ago=2 * H, pid=6012),
            lease=_lease("crawl-0042", 6012, expires_in=4 * M + 30, token=1),
            heartbeat=_beat(
                "crawl-0042",
                "fetch",
                37,
                age=8,
                stuck=45 * M,
                stage_for=70 * M,
                counters={"pages": 41_000},
            ),
        ),
        # quarantined by the watchdog after an interruption.
        TaskRecord(
            task=_task(
                "billing-0901",
                TaskState.INTERRUPTED,
                started_ago=3 * H,
                quarantined_at=NOW - 20 * M,
                quarantined_by="watchdog",
                quarantine_reason="stalled 2m at stage=invoice",
                checkpoint="/var/lib/billing/0901.ckpt",
            ),
            lease=Lease(task_id="billing-0901", owner=None, token=4),
            heartbeat=_beat("billing-0901", "invoice", 72, age=25 * M),
        ),
        # interrupted: stopped by SIGTERM, checkpoint kept.
        TaskRecord(
            task=_task(
                "report-3310",
                TaskState.INTERRUPTED,
                started_ago=1 * H,
                checkpoint="/srv/reports/3310/ckpt-14",
            ),
            lease=Lease(task_id="report-3310", owner=None, token=2),
            heartbeat=_beat("report-3310", "render", 45, age=12 * M),
        ),
        # starting: claimed 20 s ago, no heartbeat expected yet.
        TaskRecord(
            task=_task("ingest-5120", TaskState.STARTING, started_ago=20, pid=7305),
            lease=_lease("ingest-5120", 7305, expires_in=4 * M + 40, token=1),
            heartbeat=None,
        ),
        # queued behind the reclaimable export.
        TaskRecord(
            task=_task(
                "publish-2032", TaskState.QUEUED, started_ago=5 * H, upstream=("export-2031",)
            ),
            lease=None,
            heartbeat=None,
        ),
        # healthy, three ways: plain, over its stage budget, with a request past its budget.
        TaskRecord(
            task=_task("ingest-5119", TaskState.RUNNING, started_ago=12 * M, pid=7211),
            lease=_lease("ingest-5119", 7211, expires_in=4 * M + 51, token=1),
            heartbeat=_beat(
                "ingest-5119", "parse", 34, age=3, stage_for=6 * M, counters={"files": 340}
            ),
        ),
        TaskRecord(
            task=_task(
                "train-0008", TaskState.RUNNING, started_ago=2 * H + 5 * M, pid=8100, attempt=2
            ),
            lease=_lease("train-0008", 8100, expires_in=4 * M + 55, token=5),
            heartbeat=_beat(
                "train-0008", "epoch-3", 76.5, age=4, stage_for=22 * M, counters={"step": 30_600}
            ),
        ),
        TaskRecord(
            task=_task("resize-9001", TaskState.RUNNING, started_ago=9 * M, pid=8422),
            lease=_lease("resize-9001", 8422, expires_in=4 * M + 48, token=1),
            heartbeat=_beat(
                "resize-9001",
                "upload",
                90,
                age=6,
                stage_for=3 * M,
                request_name="PUT s3://thumbs",
                request_started_at=NOW - 2 * M - 10,
            ),
        ),
        # finished: one of each.
        TaskRecord(
            task=_task(
                "backup-0730",
                TaskState.SUCCEEDED,
                started_ago=50 * M,
                exit_code=0,
                finished_at=NOW - 10 * M,
            ),
            lease=Lease(task_id="backup-0730", owner=None, token=1),
            heartbeat=_beat("backup-0730", "verify", 100, age=10 * M),
        ),
        TaskRecord(
            task=_task(
                "backup-0731",
                TaskState.FAILED,
                started_ago=40 * M,
                exit_code=3,
                finished_at=NOW - 5 * M,
                state_reason="disk full",
            ),
            lease=Lease(task_id="backup-0731", owner=None, token=1),
            heartbeat=_beat("backup-0731", "copy", 12, age=5 * M),
        ),
        TaskRecord(
            task=_task(
                "export-2029",
                TaskState.DISCARDED,
                started_ago=3 * H,
                finished_at=NOW - 30 * M,
                state_reason="discarded by alice",
            ),
            lease=Lease(task_id="export-2029", owner=None, token=3),
            heartbeat=_beat("export-2029", "transform", 20, age=2 * H),
        ),
    ]
    pending = set(kill_pending)
    return [
        replace(
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
        if record.task.task_id in pending
        else record
        for record in records
    ]


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


def sample_samples() -> dict[str, ProcessSample]:
    """What the probe sees: every running pid alive except etl-0417's."""
    samples = {
        "thumbs-7781": _alive(5230, 0.0, started_ago=40 * M),
        "crawl-0042": _alive(6012, 2.0, started_ago=2 * H),
        "ingest-5120": _alive(7305, 4.0, started_ago=20),
        "ingest-5119": _alive(7211, 97.0, started_ago=12 * M),
        "train-0008": _alive(8100, 188.0, started_ago=2 * H + 5 * M),
        "resize-9001": _alive(8422, 0.0, started_ago=9 * M),
        "export-2031": _alive(4121, 0.0, started_ago=5 * H),
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


def sample_oncall(now: float = NOW) -> OnCall:
    """ana acked export-2031 12 minutes ago; bob silenced thumbs-* for a maintenance night."""
    return OnCall(
        at=now,
        acks={
            "export-2031": Ack(
                task_id="export-2031",
                by="ana",
                reason="restarting the partner API",
                acked_at=now - 12 * M,
                until=now + 108 * M,
            )
        },
        silences=(
            Silence(
                silence_id=3,
                matcher=Matcher.TASK,
                pattern="thumbs-*",
                by="bob",
                reason="resize cluster maintenance night",
                created_at=now - H,
                until=now + 5 * H,
            ),
        ),
    )


SAMPLE_SCHEDULES = (
    Schedule(name="nightly-ledger", step="ledger", cron="30 0 * * *", grace=10 * M),
    Schedule(name="hourly-crawl", step="crawl", cron="50 * * * *", grace=15 * M),
)


def sample_schedules(now: float = NOW) -> tuple[ScheduleView, ...]:
    """nightly-ledger missed its 00:30 UTC run; hourly-crawl ran at 23:53 for its 23:50 fire
    time and is inside the grace of its 00:50 one (late). Both were configured weeks ago."""
    runs = {
        "ledger": StepRuns(last_started=now - 24 * H - 22 * M),
        "crawl": StepRuns(last_started=now - H),
    }
    seen = now - 30 * 24 * H
    return order([judge(now, s, runs[s.step], first_seen=seen) for s in SAMPLE_SCHEDULES])


UNTRUSTED_ID = "evil-\x1b[2J\x1b]0;pwned\x07-01"
"""A task id with a screen wipe and a retitle in it: shown escaped, never obeyed."""


def untrusted_snapshot(now: float = NOW) -> Snapshot:
    """Untrusted text everywhere it can be, and commands that report nothing.

    ``UNTRUSTED_ID`` (escape sequences in its id and stage) is stalled; ``tar-0099``, a legacy
    command under ``zombietop run``, is healthy on observed heartbeats (CPU, I/O, output).
    """
    hostile = TaskRecord(
        task=_task(
            UNTRUSTED_ID, TaskState.RUNNING, started_ago=3 * H, pid=4242, command=("sh", "job.sh")
        ),
        lease=_lease(UNTRUSTED_ID, 4242, expires_in=2 * M, token=4),
        heartbeat=_beat(
            UNTRUSTED_ID, "load\x1b[31m\u202eRED", 12, age=3 * H + 12 * M, counters={"rows": 120}
        ),
    )
    observed = TaskRecord(
        task=_task("tar-0099", TaskState.RUNNING, started_ago=40 * M, pid=5120, command=("tar",)),
        lease=_lease("tar-0099", 5120, expires_in=4 * M, token=1),
        heartbeat=Heartbeat(
            task_id="tar-0099",
            counters={"cpu_s": 2310.5, "io_bytes": 48_000_000_000, "out_lines": 0},
            written_at=now - 9,
            progress_changed_at=now - 40 * M,
            stage_started_at=now - 40 * M,
            seq=240,
            source=HeartbeatSource.OBSERVED,
        ),
    )
    samples = {
        UNTRUSTED_ID: _alive(4242, 0.0, started_ago=3 * H),
        "tar-0099": replace(_alive(5120, 97.0, started_ago=40 * M), children=3),
    }
    return build_snapshot(now, [hostile, observed], sample_config(), samples)


def untrusted_outputs(now: float = NOW) -> dict[str, LastOutput]:
    """The last output of the hostile task: a retitle, a bell, a bidi override, a wipe."""
    lines = (
        "connecting to orders-db",
        "\x1b[2Jwiped?",
        "retrying POST /orders (attempt 37) \x1b]0;pwned\x07\u202egnirts",
    )
    return {
        UNTRUSTED_ID: LastOutput(
            line=lines[-1], written_at=now - 3 * H - 12 * M, lines=lines, attempt=1
        )
    }


def sample_history(task_id: str) -> list[HistoryPoint]:
    """A made-up climb that flattens out, for the sparkline."""
    points = [0, 4, 9, 15, 22, 28, 33, 40, 46, 51, 55, 58, 60, 61, 61, 61, 61, 61]
    return [
        HistoryPoint(
            written_at=NOW - (len(points) - i) * 10 * M, stage="transform", progress=float(p)
        )
        for i, p in enumerate(points)
    ]


def sample_events(task_id: str | None = None) -> list[Event]:
    events = [
        Event(
            event_id=6,
            at=NOW - 60,
            task_id="etl-0417",
            kind=EventKind.TRANSITION,
            actor="watchdog",
            message="healthy -> dead: pid 3907 is gone",
        ),
        Event(
            event_id=5,
            at=NOW - 6 * M,
            task_id="thumbs-7781",
            kind=EventKind.TRANSITION,
            actor="watchdog",
            message="healthy -> stalled: heartbeat 2m00s old (timeout 2m)",
        ),
        Event(
            event_id=4,
            at=NOW - 20 * M,
            task_id="billing-0901",
            kind=EventKind.QUARANTINED,
            actor="watchdog",
            message="quarantined: stalled 2m at stage=invoice",
        ),
        Event(
            event_id=3,
            at=NOW - 30 * M,
            task_id="export-2029",
            kind=EventKind.ACTION,
            actor="alice@laptop",
            message="discard: discarded (token 2 -> 3)",
        ),
        Event(
            event_id=2,
            at=NOW - 3 * H - 50 * M,
            task_id="export-2031",
            kind=EventKind.TRANSITION,
            actor="watchdog",
            message="stalled -> reclaimable: lease expired",
        ),
        Event(
            event_id=1,
            at=NOW - 4 * H,
            task_id="export-2031",
            kind=EventKind.PAGE,
            actor="watchdog",
            message=(
                "export-2031 stalled: stage=transform p=61% heartbeat 2m00s old - resume or discard"
            ),
        ),
    ]
    return [e for e in events if task_id is None or e.task_id == task_id]


# A hostile fleet: what someone who can write the store, or a job, can put in each field -------

OSC = "\x1b]2;owned\x07"
"""Retitles the terminal (or the tmux pane)."""
CSI_CLEAR = "\x1b[2J"
"""Wipes the screen."""
HOSTILE_ID = f"evil{OSC}{CSI_CLEAR}-1"


def hostile_records() -> list[TaskRecord]:
    """One stalled task whose every text field holds terminal controls, C1 and a bidi override;
    the dashboard must show each escaped (``\\x1b]2;owned\\x07``), never obey it."""
    task = _task(
        "evil-1",
        TaskState.RUNNING,
        started_ago=40 * M,
        pid=6666,
        checkpoint="s3://x/\u202egpj.exe",
    )
    task = replace(
        task,
        task_id=HOSTILE_ID,
        run_id=f"run{CSI_CLEAR}",
        step="st\x1b[5mep",
        host="batch\x9b2J-01",
    )
    lease = replace(_lease(HOSTILE_ID, 6666, expires_in=3 * M), owner=f"run{OSC}@batch-01")
    beat = _beat(
        HOSTILE_ID,
        f"load{CSI_CLEAR}",
        40,
        age=6 * M,
        counters={"rows\x1b[31m": 5},
        request_name="GET\x1b[1m /x",
        trace_id="t\x7f1",
    )
    return [TaskRecord(task=task, lease=lease, heartbeat=beat)]


def hostile_snapshot(now: float = NOW) -> Snapshot:
    samples = {HOSTILE_ID: _alive(6666, 0.0, started_ago=40 * M)}
    return build_snapshot(now, hostile_records(), sample_config(), samples)


def hostile_events() -> list[Event]:
    return [
        Event(
            event_id=1,
            at=NOW - 60,
            task_id=HOSTILE_ID,
            kind=EventKind.ACTION,
            actor=f"mallory{OSC}@laptop",
            message=f"kill refused: {CSI_CLEAR}(reason: because{OSC})",
        )
    ]


class SampleSource:
    """A ``SnapshotSource`` over fixed snapshots; ``fail_with`` makes the next polls fail."""

    def __init__(
        self,
        snapshots: Sequence[Snapshot] | None = None,
        *,
        read_only: bool = False,
        outputs: Mapping[str, LastOutput] | None = None,
        events: Sequence[Event] | None = None,
    ) -> None:
        self.snapshots = list(snapshots or [sample_snapshot()])
        self._events = None if events is None else list(events)
        self._read_only = read_only
        self.outputs: dict[str, LastOutput] = dict(outputs or {})
        self.polls = 0
        self.fail_with: str | None = None
        self.failed_at = NOW + 14
        self.last = Snapshot(taken_at=None)

    @property
    def read_only(self) -> bool:
        return self._read_only

    async def poll(self) -> Snapshot:
        if self.fail_with is not None:
            self.last = replace(self.last, error=self.fail_with, failed_at=self.failed_at)
            return self.last
        index = min(self.polls, len(self.snapshots) - 1)
        self.polls += 1
        self.last = self.snapshots[index]
        return self.last

    async def history(self, task_id: str) -> list[HistoryPoint]:
        return sample_history(task_id)

    async def events(self, task_id: str | None = None, limit: int = 100) -> list[Event]:
        if self._events is not None:
            return [e for e in self._events if task_id is None or e.task_id == task_id][:limit]
        return sample_events(task_id)[:limit]

    async def last_output(self, task: Task) -> LastOutput | None:
        return self.outputs.get(task.task_id)


class RecordingDesk:
    """An ``OnCallDesk`` that records what was asked and answers as the store would."""

    def __init__(self, *, read_only: bool = False, now: float = NOW) -> None:
        self._read_only = read_only
        self.now = now
        self.acks: list[Ack] = []
        self.unacked: list[str] = []
        self.silences: list[Silence] = []

    @property
    def read_only(self) -> bool:
        return self._read_only

    async def ack(self, task_id: str, *, reason: str | None, duration: float | None) -> Ack:
        ack = Ack(
            task_id=task_id,
            by="you",
            reason=reason,
            acked_at=self.now,
            until=self.now + (duration or 2 * H),
        )
        self.acks.append(ack)
        return ack

    async def unack(self, task_id: str) -> Ack | None:
        self.unacked.append(task_id)
        return sample_oncall(self.now).ack_for(task_id)

    async def silence(
        self, *, matcher: Matcher, pattern: str, reason: str, duration: float
    ) -> Silence:
        made = Silence(
            silence_id=len(self.silences) + 1,
            matcher=matcher,
            pattern=pattern,
            by="you",
            reason=reason,
            created_at=self.now,
            until=self.now + duration,
        )
        self.silences.append(made)
        return made


class RecordingExecutor:
    """An ``ActionExecutor`` that records requests and answers with a fixed outcome per kind."""

    OUTCOMES: ClassVar[dict[ActionKind, tuple[Outcome, str]]] = {
        ActionKind.RESUME: (Outcome.REQUEUED, "requeued with token {token}"),
        ActionKind.DISCARD: (Outcome.DISCARDED, "discarded; artifacts kept"),
        ActionKind.KILL: (Outcome.TERM_SENT, "SIGTERM sent; SIGKILL in 30s if still alive"),
    }

    def __init__(self, *, read_only: bool = False) -> None:
        self._read_only = read_only
        self.requests: list[ActionRequest] = []
        self.completions = 0
        self.pending_outcomes: list[ActionOutcome] = []

    @property
    def read_only(self) -> bool:
        return self._read_only

    async def run(self, request: ActionRequest) -> ActionOutcome:
        self.requests.append(request)
        if self._read_only:
            return ActionOutcome(
                request=request, outcome=Outcome.REFUSED, message="store is read-only"
            )
        outcome, message = self.OUTCOMES[request.kind]
        token = (request.expected_token or 0) + 1
        return ActionOutcome(
            request=request, outcome=outcome, message=message.format(token=token), new_token=token
        )

    async def complete_pending_kills(self) -> list[ActionOutcome]:
        self.completions += 1
        outcomes, self.pending_outcomes = self.pending_outcomes, []
        return outcomes


def main() -> None:
    """Run the dashboard on the sample fleet: ``python -m zombietop.tui.sample [--wall]``.

    ``--read-only`` hides the action keys. The fleet is the one the snapshot tests and
    ``scripts/export_screenshots.py`` use.
    """
    import sys

    from zombietop.clock import FakeClock
    from zombietop.tui.app import ZombietopApp

    wall = "--wall" in sys.argv
    read_only = "--read-only" in sys.argv
    ZombietopApp(
        SampleSource([sample_snapshot(oncall=True)], read_only=read_only),
        executor=None if read_only else RecordingExecutor(),
        desk=None if read_only else RecordingDesk(),
        clock=FakeClock(NOW),
        wall=wall,
        store_label="sample fleet",
        actor="you@sample",
    ).run()


if __name__ == "__main__":
    main()
