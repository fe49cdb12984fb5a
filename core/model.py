"""The vocabulary every layer speaks: task states and frozen snapshots of store rows (the
healths and flags of a verdict are in ``zombietop.health``)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from zombietop.durations import format_age
from zombietop.rows import Row, RowReads, column, json_mapping, json_tuple, read_row
from zombietop.start_identity import ProcessStart, StartIdentity


class TaskState(StrEnum):
    """Where a task is in its life, as recorded in the store."""

    QUEUED = "queued"
    """Waiting to be claimed; no heartbeat expected."""
    STARTING = "starting"
    """Claimed with a lease, not yet beating; has a start grace."""
    RUNNING = "running"
    """Executing; heartbeats and lease renewals expected."""
    INTERRUPTED = "interrupted"
    """Stopped by a kill or a forwarded SIGTERM, SIGINT or SIGHUP, whatever its exit status;
    waits for resume or discard."""
    SUCCEEDED = "succeeded"
    """Finished with exit code 0, reached on its own (never after a kill)."""
    FAILED = "failed"
    """Finished with a non-zero exit code or an error."""
    DISCARDED = "discarded"
    """Given up by an operator; artifacts kept, dependents stay blocked."""

    @property
    def finished(self) -> bool:
        return self in FINISHED_STATES

    @property
    def executing(self) -> bool:
        """Claimed and expected to hold a lease (starting or running)."""
        return self in EXECUTING_STATES


FINISHED_STATES = frozenset({TaskState.SUCCEEDED, TaskState.FAILED, TaskState.DISCARDED})
EXECUTING_STATES = frozenset({TaskState.STARTING, TaskState.RUNNING})


def _start(time: float | None, identity: StartIdentity | None) -> ProcessStart | None:
    return None if time is None else ProcessStart(time=time, identity=identity)


def _start_identity(row: Row) -> StartIdentity | None:
    return StartIdentity.from_columns(row["pid_boot_id"], row["pid_start_ticks"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One execution of one workflow step."""

    task_id: str
    run_id: str
    step: str
    step_type: str
    state: TaskState
    attempt: int = 1
    upstream: tuple[str, ...] = ()
    host: str | None = None
    pid: int | None = None
    pid_start_time: float | None = None
    """When the process started, wall clock: what people read, and checked only without
    ``pid_start_identity``."""
    pid_start_identity: StartIdentity | None = None
    """The kernel's count of the start, which identity checks compare exactly; None in rows
    written before the store kept it, and where /proc cannot tell it."""
    command: tuple[str, ...] = ()
    cwd: str | None = None
    checkpoint: str | None = None
    exit_code: int | None = None
    state_reason: str | None = None
    heartbeat_error: str | None = None
    heartbeat_error_at: float | None = None
    quarantined_at: float | None = None
    quarantined_by: str | None = None
    quarantine_reason: str | None = None
    redelivered: bool = False
    """A queue handed this task to a worker again while it was still held: seen active twice,
    or active and waiting at once (the engine's word; never in zombietop's store)."""
    waits_in_queue: bool = True
    """Queued for a slot or a worker, so ``queue_timeout`` applies; False for a source's queued
    task that waits for its upstream, a retry at a set time or a trigger (never in the store)."""
    created_at: float
    claimed_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float
    job: str | None = None
    """The job this task is a run of (``zombietop run --job``); None for a task named alone."""
    run_number: int | None = None
    """The run's number within its job, from 1 (None: not a run of a job)."""
    trace_id: str | None = None
    """The W3C trace the run belongs to (``zombietop.trace_context``), None when unknown."""
    span_id: str | None = None
    """The run's own span in that trace: the parent of its command's spans."""
    parent_span_id: str | None = None
    """The caller's span the run joined (None: the run started the trace)."""

    @property
    def job_name(self) -> str:
        """The job whose history this task belongs to: a task with no job is its own job of
        one run."""
        return self.job or self.task_id

    @property
    def quarantined(self) -> bool:
        return self.quarantined_at is not None

    @property
    def pid_start(self) -> ProcessStart | None:
        """The recorded start of the task's process, to check a live PID against (None:
        none recorded)."""
        return _start(self.pid_start_time, self.pid_start_identity)

    @classmethod
    def from_row(cls, row: Row) -> Task:
        return read_row(cls, row, _TASK_READS)


_TASK_READS: RowReads = {
    "state": column("state", TaskState),
    "upstream": column("upstream", json_tuple),
    "command": column("command", json_tuple),
    "pid_start_identity": _start_identity,
    "redelivered": None,  # only a source's tasks are redelivered: no column in the store
    "waits_in_queue": None,  # and only theirs wait outside a queue
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """The time-bounded, exclusive right to execute a task.

    ``owner`` is None once released; the token survives release so that it only ever grows.
    """

    task_id: str
    owner: str | None
    token: int
    acquired_at: float | None = None
    renewed_at: float | None = None
    expires_at: float | None = None

    @property
    def held(self) -> bool:
        return self.owner is not None

    @property
    def over_http(self) -> bool:
        """Held by ``zombietop serve`` for a run reported over HTTP: no process to probe."""
        return self.owner is not None and self.owner.startswith(f"{HTTP_OWNER}@")

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now > self.expires_at

    @classmethod
    def from_row(cls, row: Row) -> Lease:
        return read_row(cls, row)


HTTP_OWNER = "http"
"""The kind of lease owner (``http@<host>:<pid>``) that holds the runs reported over HTTP."""


class HeartbeatSource(StrEnum):
    """Where a heartbeat came from."""

    REPORTED = "reported"
    """Written by the job: a heartbeat line, ``zombietop beat``, the SDK. Proof of progress."""
    OBSERVED = "observed"
    """Written by ``zombietop run`` when the command's process tree used CPU, did I/O or wrote
    output while reporting nothing. Proof of activity, never of progress."""
    SUPERVISOR = "supervisor"
    """Written for the task by an engine's supervisor or worker (Airflow's task runner, a Celery
    worker): proof of life, not of progress."""


OBSERVED_COUNTERS = ("cpu_s", "io_bytes", "out_lines")
"""The counters an observed heartbeat carries: CPU seconds, I/O bytes and output lines of the
command's process tree since it started."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    """The latest proof of progress for a task, as the store last recorded it."""

    task_id: str
    stage: str | None = None
    progress: float | None = None
    counters: Mapping[str, float] = field(default_factory=dict)
    checkpoint: str | None = None
    eta_s: float | None = None
    request_name: str | None = None
    request_started_at: float | None = None
    trace_id: str | None = None
    reported_at: float | None = None
    """When the job says it wrote the line (its own clock; compare with written_at for skew)."""
    written_at: float
    """When the store recorded it (the store's clock); ages are measured from here."""
    progress_changed_at: float
    """Last time stage, progress, counters or checkpoint changed."""
    stage_started_at: float
    """When the current stage was first reported."""
    seq: int = 1
    source: HeartbeatSource = HeartbeatSource.REPORTED

    @property
    def observed(self) -> bool:
        """True when ``zombietop run`` wrote this beat from what the command did."""
        return self.source is HeartbeatSource.OBSERVED

    @property
    def proves_life_only(self) -> bool:
        """True when the beat proves that something lives, not that the task moves (observed or
        written by a supervisor): the task process's CPU and I/O stand in for progress."""
        return self.source is not HeartbeatSource.REPORTED

    @property
    def reports_progress(self) -> bool:
        """True once the job itself said where it is (a stage, a percent or a checkpoint)."""
        return (
            self.source is HeartbeatSource.REPORTED
            or self.stage is not None
            or self.progress is not None
            or self.checkpoint is not None
        )

    @property
    def clock_skew_s(self) -> float | None:
        """How far the worker's clock was ahead of the store's at this beat (negative: behind).

        Includes the time the line took to reach the store (milliseconds for a direct write, up
        to the tail interval under ``zombietop run``), so only seconds of skew mean anything.
        None for an observed beat: it moves the time the store wrote, but the time the job
        wrote stays that of its last line, so the two say nothing about the clocks.
        """
        if self.reported_at is None or self.observed:
            return None
        return self.reported_at - self.written_at

    @classmethod
    def from_row(cls, row: Row) -> Heartbeat:
        return read_row(cls, row, _HEARTBEAT_READS)


_HEARTBEAT_READS: RowReads = {
    "counters": column("counters", json_mapping),
    "source": column("source", HeartbeatSource),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryPoint:
    """One past heartbeat, enough for a sparkline."""

    written_at: float
    stage: str | None
    progress: float | None


class IdleSource(StrEnum):
    """Where a process sample's idle time comes from."""

    KERNEL = "kernel"
    """The kernel's record of when each thread of the tree last ran (``zombietop.last_ran``):
    known at the first look."""
    SAMPLES = "samples"
    """The CPU and I/O of the tree compared between this probe's samples: at most as old as
    the probe's first sample of the tree."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSample:
    """What the local process probe saw of a task's PID at one moment.

    ``identity_ok`` is False when the PID is alive but its start time differs from the one
    recorded when the task started: the PID was reused and the task's process is gone.
    """

    pid: int
    alive: bool
    identity_ok: bool = True
    status: str | None = None
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    threads: int | None = None
    read_bytes_delta: int | None = None
    write_bytes_delta: int | None = None
    io_idle_s: float | None = None
    idle_s: float | None = None
    """Seconds, as of ``sampled_at``, since the tree last used CPU or did I/O (None: not known,
    such as at the first sample where the kernel's record cannot be read)."""
    idle_source: IdleSource | None = None
    """Where ``idle_s`` comes from (None: not known, or a sample an agent stored)."""
    children: int = 0
    create_time: float | None = None
    sampled_at: float

    @property
    def gone(self) -> bool:
        """True when the task's own process no longer exists (exited, reaped, zombie or reused)."""
        return not self.alive or not self.identity_ok or self.status == "zombie"


class EventKind(StrEnum):
    """What an event in the append-only log records."""

    TASK_CREATED = "task_created"
    STATE_CHANGED = "state_changed"
    LEASE_ACQUIRED = "lease_acquired"
    LEASE_RENEWED = "lease_renewed"
    LEASE_RELEASED = "lease_released"
    LEASE_RECLAIMED = "lease_reclaimed"
    HEARTBEAT_REJECTED = "heartbeat_rejected"
    QUARANTINED = "quarantined"
    UNQUARANTINED = "unquarantined"
    TRANSITION = "transition"
    ACTION = "action"
    PAGE = "page"
    DELIVERY = "delivery"
    WATCHDOG = "watchdog"
    NOTE = "note"
    ACK = "ack"
    """An ack or unack of a task's incident, with who and why."""
    SILENCE = "silence"
    """A silence set or ended, with who and why."""
    PING = "ping"
    """A ping over HTTP (``zombietop serve``): the job, what it said, and ``via``."""
    INCIDENT_NOTE = "incident_note"
    """A person's note on a task's incident (``zombietop note``), with who and when."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One line of the append-only event log."""

    event_id: int
    at: float
    task_id: str | None
    kind: str
    actor: str
    message: str
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Row) -> Event:
        return read_row(cls, row, _EVENT_READS)


_EVENT_READS: RowReads = {"data": column("data", json_mapping)}


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchdogMemory:
    """What a watchdog that starts must remember from the event log, whatever its length."""

    open_events: Sequence[Event] = ()
    """The page and watchdog events of every open incident, from its opening page on, oldest
    first."""
    keys: frozenset[str] = frozenset()
    """The one-shot reactions already taken on tasks that have not finished."""
    last_digest_at: float | None = None
    """When the last spinning digest was logged."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingKill:
    """A graceful kill in progress, durable in the store so any zombietop on the host can finish it.

    SIGTERM went to ``pid``'s process group at ``term_sent_at``; SIGKILL is due at ``deadline``
    if the same identity (pid and start) is still alive then.
    """

    task_id: str
    pid: int
    pid_start_time: float | None
    host: str | None
    requested_by: str
    term_sent_at: float
    deadline: float
    outcome: str | None = None
    """None while pending; then an ``zombietop.actions.Outcome`` value."""
    finished_at: float | None = None
    pgid: int | None = None
    """The process group that got SIGTERM; None when only ``pid`` itself was signalled."""
    source: str | None = None
    """The read-only source whose task this is (None: the store's own): only a zombietop that
    reads that source can vouch for the process before a SIGKILL."""
    pid_start_identity: StartIdentity | None = None
    """The kernel's count of the start of the process that got SIGTERM (None: a kill recorded
    before the store kept it, or where /proc cannot tell it)."""

    @property
    def pending(self) -> bool:
        return self.outcome is None

    @property
    def pid_start(self) -> ProcessStart | None:
        """The start of the process that got SIGTERM, to check a live PID against (None:
        none recorded)."""
        return _start(self.pid_start_time, self.pid_start_identity)

    @classmethod
    def from_row(cls, row: Row) -> PendingKill:
        return read_row(cls, row, _KILL_READS)


_KILL_READS: RowReads = {"pid_start_identity": _start_identity}


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """A task with its lease and latest heartbeat, as one poll read them."""

    task: Task
    lease: Lease | None
    heartbeat: Heartbeat | None
    pending_kill: PendingKill | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PollChanges:
    """How a store's latest poll differs from the one before it, by task id."""

    poll: int
    """This poll's number among the polls of one store object."""
    after: int | None
    """The number of the poll these changes are against; None when this poll read every task
    afresh (and ``changed`` and ``dropped`` say nothing)."""
    changed: Mapping[str, TaskRecord] = field(default_factory=dict)
    """The records read again, new or changed in any column; every other record is the same
    object as in poll ``after``."""
    dropped: frozenset[str] = frozenset()
    """The tasks polled by poll ``after`` and no longer (finished before the window)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredPage:
    """A page still owed to one channel, kept in the store until it is delivered."""

    page_id: int
    notifier: str
    kind: str
    line: str
    task_id: str | None
    health: str | None
    page_at: float
    attempts: int
    next_at: float
    incident: str | None = None
    runbook: str | None = None
    trace_id: str | None = None
    """The W3C trace the page's task runs in (``Page.trace_id``)."""
    trace_url: str | None = None
    """The link to that trace, as the page was composed (``Page.trace_url``)."""

    @classmethod
    def from_row(cls, row: Row) -> StoredPage:
        return read_row(cls, row)


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRuns:
    """What a schedule needs to know of its step's tasks."""

    last_started: float | None = None
    """When a task of the step was last claimed (None: never)."""
    running_since: float | None = None
    """When the oldest task of the step still starting or running was claimed (None: none is)."""


class Matcher(StrEnum):
    """What a silence matches a task by."""

    TASK = "task"
    """A glob over task ids (``export-*``)."""
    STEP_TYPE = "step_type"
    """One step type, exactly."""
    HOST = "host"
    """One host, exactly."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ack:
    """Someone is on a task's incident: no re-notify until ``until`` or the incident ends."""

    task_id: str
    by: str
    reason: str | None
    acked_at: float
    until: float
    source: str | None = None
    """The read-only source whose task this is (its name); None for this store's own task."""

    @classmethod
    def from_row(cls, row: Row) -> Ack:
        return read_row(cls, row, _ACK_READS)

    def active(self, now: float) -> bool:
        return now < self.until

    def words(self, now: float) -> str:
        """``acked by ana 12m ago: restarting the partner API`` (untrusted parts unescaped)."""
        why = f": {self.reason}" if self.reason else ""
        return f"acked by {self.by} {format_age(max(now - self.acked_at, 0))} ago{why}"


_ACK_READS: RowReads = {"by": column("actor"), "until": column("until_at")}


@dataclass(frozen=True, slots=True, kw_only=True)
class Note:
    """A person's note on a task's incident: kept as an ``INCIDENT_NOTE`` event."""

    task_id: str
    by: str
    at: float
    text: str
    source: str | None = None
    """The read-only source whose task this is (its name); None for this store's own task."""

    @classmethod
    def from_event(cls, event: Event) -> Note:
        source = event.data.get("source")
        return cls(
            task_id=event.task_id or "",
            by=event.actor,
            at=event.at,
            text=str(event.data.get("text", event.message)),
            source=source if isinstance(source, str) else None,
        )

    def words(self, now: float) -> str:
        """``note by ana 5m ago: waiting on partner API`` (untrusted parts unescaped)."""
        return f"note by {self.by} {format_age(max(now - self.at, 0))} ago: {self.text}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Silence:
    """A rule that holds the pages of every task it matches until it ends."""

    silence_id: int
    matcher: Matcher
    pattern: str
    by: str
    reason: str
    created_at: float
    until: float
    ended_at: float | None = None
    ended_by: str | None = None
    set_until: float | None = None
    """The end its creator set, when this reader's ``[oncall] max_silence`` ends it sooner
    (``until``); None when the silence ends where it was set to."""

    @classmethod
    def from_row(cls, row: Row) -> Silence:
        return read_row(cls, row, _SILENCE_READS)

    def active(self, now: float) -> bool:
        return self.ended_at is None and now < self.until

    def matches(self, task: Task) -> bool:
        if self.matcher is Matcher.TASK:
            return fnmatch.fnmatchcase(task.task_id, self.pattern)
        if self.matcher is Matcher.STEP_TYPE:
            return task.step_type == self.pattern
        return task.host == self.pattern

    @property
    def rule(self) -> str:
        """``task export-*``, ``step_type export``, ``host web-3``."""
        return f"{self.matcher} {self.pattern}"


_SILENCE_READS: RowReads = {
    "matcher": column("matcher", Matcher),
    "by": column("actor"),
    "until": column("until_at"),
    "set_until": None,
}
