"""What Celery's workers and its Redis transport report, and how it becomes zombietop's tasks.

Pure functions of one read (``Reads``) and of what earlier polls saw (``WorkerMemory``): no
network, no clock; only the start time of a local pid is read, to check its identity. The
source that does the reading is ``zombietop.sources.celery``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from zombietop.durations import format_age
from zombietop.model import Lease, Task, TaskRecord, TaskState
from zombietop.procs import read_start
from zombietop.sources.base import Capability, Origin, SourceRecord, proof_of_life
from zombietop.sources.engine_text import bounded_id
from zombietop.start_identity import ProcessStart

IDENTITY_SLACK = 5.0
"""Seconds a worker's child may have started after the task's ``time_start`` and still be the
same process. A prefork child is forked before it accepts a task, so it is older than the
task; one born well after it got the pid by reuse."""

ACTIVE, RESERVED, SCHEDULED = "active", "reserved", "scheduled"
DELIVERIES_KEPT = 600.0
"""Seconds the deliveries of a task no worker lists any more are remembered: a redelivery is
seen while the first run still goes on, so the count needs no long memory, and a fleet that
runs thousands of tasks a minute keeps only the last few minutes of them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sighting:
    """One task as one worker reported it, in one of its three lists."""

    task_id: str
    name: str
    queue: str
    worker: str
    """The worker's node name, ``celery@HOST``."""
    listed: str
    """``active``, ``reserved`` or ``scheduled``."""
    worker_pid: int | None = None
    """The pool child that runs it (active tasks only)."""
    time_start: float | None = None
    """When the child accepted it, epoch seconds (the worker's clock)."""
    eta: str | None = None
    redelivered: bool = False
    """Celery's ``delivery_info.redelivered``: the transport delivered the message before."""

    @property
    def delivery(self) -> tuple[str, int | None, float | None]:
        """What tells one delivery of a task from another: the worker, child and start."""
        return (self.worker, self.worker_pid, self.time_start)


@dataclass(slots=True)
class Deliveries:
    """Every delivery of one task id that the workers reported running, across polls."""

    seen: set[tuple[str, int | None, float | None]] = field(default_factory=set)
    first_start: float | None = None
    """The earliest ``time_start`` of them: when the task first started."""
    overlapped: bool = False
    """Two deliveries were held at once: the message came back while a worker still ran it."""
    last_seen: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Unacked:
    """A message the Redis transport delivered and holds until it is acknowledged."""

    task_id: str
    name: str
    queue: str
    delivered_at: float
    """Its score in ``unacked_index``: when a worker took it (the worker's clock)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reads:
    """One poll's reads: the answers of the workers that answered, and the unacked messages."""

    read_at: float
    answered: Mapping[str, tuple[Sighting, ...]]
    """By worker, everything it listed (a worker that answered with nothing maps to ())."""
    unacked: tuple[Unacked, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSeen:
    """What a worker said the last time it answered."""

    answered_at: float
    active: tuple[Sighting, ...] = ()
    waiting: tuple[Sighting, ...] = ()
    """Its reserved and scheduled tasks."""


@dataclass(slots=True)
class WorkerMemory:
    """The last answer of every worker, so that a worker that stops answering (frozen, killed)
    still shows the tasks it was running, with its last answer as its heartbeat."""

    kept_for: float
    """Seconds a silent worker's tasks are kept after its last answer."""
    workers: dict[str, WorkerSeen] = field(default_factory=dict)
    deliveries: dict[str, Deliveries] = field(default_factory=dict)
    """By task id, the deliveries seen running: a task the visibility timeout hands out again
    runs several times, and counts from its first start."""

    def update(self, reads: Reads) -> dict[str, WorkerSeen]:
        """Remember this poll's answers; return every worker's latest, the silent ones too."""
        held: dict[str, list[Sighting]] = {}
        for worker, listed in reads.answered.items():
            active = tuple(s for s in listed if s.listed == ACTIVE)
            waiting = tuple(s for s in listed if s.listed != ACTIVE)
            self.workers[worker] = WorkerSeen(
                answered_at=reads.read_at, active=active, waiting=waiting
            )
            for sighting in listed:
                held.setdefault(sighting.task_id, []).append(sighting)
        for task_id, sightings in held.items():
            self._count(task_id, sightings, reads.read_at)
        for worker, seen in list(self.workers.items()):
            if reads.read_at - seen.answered_at > self.kept_for:
                del self.workers[worker]
        for task_id, counted in list(self.deliveries.items()):
            if reads.read_at - counted.last_seen > DELIVERIES_KEPT:
                del self.deliveries[task_id]
        return dict(self.workers)

    def _count(self, task_id: str, sightings: list[Sighting], now: float) -> None:
        if task_id not in self.deliveries and all(s.listed != ACTIVE for s in sightings):
            return  # only waiting: nothing ran yet (most tasks of a busy fleet, not kept)
        counted = self.deliveries.setdefault(task_id, Deliveries())
        counted.last_seen = now
        counted.overlapped = counted.overlapped or len(sightings) > 1
        for sighting in sightings:
            if sighting.listed != ACTIVE:
                continue
            counted.seen.add(sighting.delivery)
            start = sighting.time_start
            if start is not None and (counted.first_start is None or start < counted.first_start):
                counted.first_start = start


def sightings_of(worker: str, listed: str, answer: Any) -> list[Sighting]:
    """The tasks in one worker's answer to ``inspect active``, ``reserved`` or ``scheduled``."""
    found: list[Sighting] = []
    for item in answer if isinstance(answer, list) else []:
        if not isinstance(item, dict):
            continue
        eta = None
        if listed == SCHEDULED:
            eta = item.get("eta")
            item = item.get("request") or {}
        delivery = item.get("delivery_info") or {}
        pid, start = item.get("worker_pid"), item.get("time_start")
        found.append(
            Sighting(
                task_id=bounded_id(str(item.get("id") or "?")),
                name=bounded_id(str(item.get("name") or item.get("type") or "?")),
                queue=bounded_id(str(delivery.get("routing_key") or "?")),
                worker=bounded_id(worker),
                listed=listed,
                worker_pid=pid if isinstance(pid, int) and pid > 0 else None,
                time_start=float(start) if isinstance(start, int | float) else None,
                eta=None if eta is None else bounded_id(str(eta)),
                redelivered=delivery.get("redelivered") is True,
            )
        )
    return found


def unacked_of(entries: Mapping[bytes, bytes], index: Mapping[bytes, float]) -> list[Unacked]:
    """The messages in the transport's ``unacked`` hash (delivery tag -> ``[message, exchange,
    routing key]``), each with its delivery time from ``unacked_index``."""
    found: list[Unacked] = []
    for tag, raw in entries.items():
        try:
            message, _exchange, routing_key = json.loads(raw)
            headers = message.get("headers") or {}
        except (ValueError, TypeError, AttributeError):
            continue  # not a Celery message: nothing to say about it
        delivered = index.get(tag)
        if delivered is None or "id" not in headers:
            continue
        found.append(
            Unacked(
                task_id=bounded_id(str(headers["id"])),
                name=bounded_id(str(headers.get("task") or "?")),
                queue=bounded_id(str(routing_key or "?")),
                delivered_at=float(delivered),
            )
        )
    return found


def celery_task_id(queue: str, name: str, task_id: str) -> str:
    """zombietop's id for a Celery task: ``QUEUE/TASKNAME/TASK_ID``."""
    return f"{queue}/{name}/{task_id}"


def records(
    reads: Reads,
    workers: Mapping[str, WorkerSeen],
    *,
    visibility_timeout: float,
    heartbeat_timeout: float,
    source: str,
    host: str,
    local: frozenset[str],
    deliveries: Mapping[str, Deliveries] | None = None,
) -> list[SourceRecord]:
    """One record per task id: what the workers run (the silent ones as last heard), what they
    hold waiting, and the unacked messages that no worker reports. ``deliveries`` counts each
    task's deliveries across polls (``WorkerMemory``).

    A worker silent for less than ``heartbeat_timeout`` (one slow answer) still holds what it
    last said it held; silent longer, its waiting tasks are judged by their unacked messages.
    """
    seen: dict[str, list[Sighting]] = {}
    beats: dict[str, float] = {}
    for worker, listed in reads.answered.items():
        beats[worker] = reads.read_at
        for sighting in listed:
            seen.setdefault(sighting.task_id, []).append(sighting)
    for worker, last in workers.items():
        if worker in reads.answered:
            continue
        beats[worker] = last.answered_at
        held = last.active
        if reads.read_at - last.answered_at <= heartbeat_timeout:
            held += last.waiting
        else:
            # Silent past the timeout, with its child gone from this host: nothing in Celery
            # holds the task any more, so it leaves (the watchdog pages it lost, once).
            held = tuple(s for s in held if not _child_gone(s, local))
        for sighting in held:
            seen.setdefault(sighting.task_id, []).append(sighting)
    unacked = {u.task_id: u for u in reads.unacked}
    out: list[SourceRecord] = []
    for task_id, sightings in seen.items():
        message = unacked.get(task_id)
        silent = all(s.worker not in reads.answered for s in sightings)
        out.append(
            _sighted(
                sightings,
                beats,
                expires=message.delivered_at + visibility_timeout if message and silent else None,
                again=_redelivery(sightings, (deliveries or {}).get(task_id), visibility_timeout),
                source=source,
                host=host,
                local=local,
                now=reads.read_at,
            )
        )
    for task_id, message in unacked.items():
        if task_id not in seen:
            out.append(_lost(message, visibility_timeout, source=source, now=reads.read_at))
    return out


def _sighted(
    sightings: list[Sighting],
    beats: Mapping[str, float],
    *,
    expires: float | None,
    again: Redelivery | None,
    source: str,
    host: str,
    local: frozenset[str],
    now: float,
) -> SourceRecord:
    active = sorted(
        (s for s in sightings if s.listed == ACTIVE), key=lambda s: (s.time_start or 0, s.worker)
    )
    waiting = [s for s in sightings if s.listed != ACTIVE]
    shown = active[0] if active else waiting[0]
    zid = celery_task_id(shown.queue, shown.name, shown.task_id)
    worker_host = shown.worker.partition("@")[2] or shown.worker
    here = worker_host in local
    state = TaskState.RUNNING if active else TaskState.QUEUED
    pid = shown.worker_pid if active else None
    start = _identity(pid, shown.time_start) if pid is not None and here else None
    if active:
        reason = None if again is None else again.words
        others = ", ".join(f"{s.listed} on {s.worker}" for s in sightings if s is not shown)
        if again is not None and others:
            reason = f"{reason}; also {others}"
    elif shown.listed == SCHEDULED:
        reason = f"scheduled on {shown.worker} for {shown.eta or '?'}"
    else:
        reason = f"reserved by {shown.worker}, waiting for a free child"
    started = shown.time_start if active else None
    if active and again is not None and again.first_start is not None:
        started = again.first_start  # the task's clock runs from its first delivery
    task = Task(
        task_id=zid,
        run_id=shown.task_id,
        step=shown.name,
        step_type=shown.name,
        job=shown.name,
        state=state,
        host=host if here else worker_host,
        pid=pid,
        pid_start_time=None if start is None else start.time,
        pid_start_identity=None if start is None else start.identity,
        state_reason=reason,
        redelivered=bool(active) and again is not None,
        created_at=started if started is not None else now,
        claimed_at=started,
        started_at=started,
        updated_at=now,
    )
    lease = heartbeat = None
    if active:
        lease = Lease(
            task_id=zid,
            owner=shown.worker,
            token=len(active),
            acquired_at=started,
            expires_at=expires,
        )
        beat = beats.get(shown.worker, now)
        # The worker's answer proves that it lives, not that the task moves.
        heartbeat = proof_of_life(zid, beat, started)
    return SourceRecord(
        record=TaskRecord(task=task, lease=lease, heartbeat=heartbeat),
        origin=_origin(source, shown, listed=[s.listed for s in sightings]),
    )


@dataclass(frozen=True, slots=True)
class Redelivery:
    """A running task that its message was delivered for more than once."""

    words: str
    first_start: float | None


def _redelivery(
    sightings: list[Sighting], counted: Deliveries | None, visibility_timeout: float
) -> Redelivery | None:
    """How often the task was delivered, and why, when it was delivered again while it ran
    (two deliveries held at once) or Celery marks it ``redelivered``; else None.

    A retry sends the same task id again after the first run ended: that is no redelivery.
    """
    active = [s for s in sightings if s.listed == ACTIVE]
    together = len(active) > 1 or bool(active and len(sightings) > len(active))
    overlapped = together or (counted is not None and counted.overlapped)
    marked = any(s.redelivered for s in active)
    if not active or not (overlapped or marked):
        return None
    times = max(len(counted.seen) if counted else 0, len(active))
    first = counted.first_start if counted is not None else None
    if overlapped:
        words = (
            f"delivered {max(times, 2)} times: the visibility timeout "
            f"{visibility_timeout:g}s is shorter than the task runs"
        )
    elif times > 1:
        words = f"delivered {times} times (Celery's delivery_info.redelivered)"
    else:
        words = "delivered again (Celery's delivery_info.redelivered)"
    return Redelivery(words=words, first_start=first)


def _lost(message: Unacked, visibility_timeout: float, *, source: str, now: float) -> SourceRecord:
    """An unacked message no worker reports: delivered, never acknowledged. Its visibility
    timeout is its lease: past it the transport hands it to the next worker that asks."""
    zid = celery_task_id(message.queue, message.name, message.task_id)
    delivered = message.delivered_at
    task = Task(
        task_id=zid,
        run_id=message.task_id,
        step=message.name,
        step_type=message.name,
        job=message.name,
        state=TaskState.RUNNING,
        state_reason=(
            f"unacked for {format_age(now - delivered)}: delivered at {_iso(delivered)} and "
            f"never acknowledged; no worker reports it (visibility timeout {visibility_timeout:g}s)"
        ),
        created_at=delivered,
        claimed_at=delivered,
        started_at=delivered,
        updated_at=now,
    )
    lease = Lease(
        task_id=zid,
        owner="unacked",
        token=1,
        acquired_at=delivered,
        expires_at=delivered + visibility_timeout,
    )
    origin = Origin(
        source=source,
        kind="celery",
        capability=Capability.READ_ONLY,
        ids={
            "queue": message.queue,
            "task_name": message.name,
            "task_id": message.task_id,
            "worker": None,
            "listed": "unacked",
            "delivered_at": _iso(delivered),
        },
    )
    return SourceRecord(record=TaskRecord(task=task, lease=lease, heartbeat=None), origin=origin)


def _origin(source: str, shown: Sighting, *, listed: Sequence[str]) -> Origin:
    return Origin(
        source=source,
        kind="celery",
        capability=Capability.READ_ONLY,
        ids={
            "queue": shown.queue,
            "task_name": shown.name,
            "task_id": shown.task_id,
            "worker": shown.worker,
            "listed": ", ".join(listed),
            "delivered_at": None,
        },
    )


def _child_gone(sighting: Sighting, local: frozenset[str]) -> bool:
    """True when the child that ran the task was on this host and is gone (or its pid reused)."""
    host = sighting.worker.partition("@")[2] or sighting.worker
    if host not in local or sighting.worker_pid is None or sighting.time_start is None:
        return False
    actual = read_start(sighting.worker_pid)
    return actual is None or actual.time > sighting.time_start + IDENTITY_SLACK


def _identity(pid: int, start: float | None) -> ProcessStart | None:
    """The start the probe checks ``pid`` against: its own when it can be the child that took
    the task, ``start`` itself (which no live process matches) when it was born after it."""
    if start is None:
        return None
    actual = read_start(pid)
    if actual is None or actual.time > start + IDENTITY_SLACK:
        return ProcessStart(time=start)
    return actual


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, tz=UTC).isoformat(timespec="seconds")
