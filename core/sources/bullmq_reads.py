"""How BullMQ's keys are read from its Redis, without writing, and which process a worker is.

BullMQ keeps each queue under ``PREFIX:QUEUE:`` (``bull`` by default): the lists ``active``,
``wait`` and ``paused``, the sorted sets ``prioritized``, ``delayed`` (its score the time the job
is due, in milliseconds times 4096), ``waiting-children``, ``completed`` and ``failed`` (their
score the time the job ended, in milliseconds), the hash ``meta`` (``paused`` when the queue is
paused), each job's hash ``PREFIX:QUEUE:ID`` and, while a worker holds it, its lock
``PREFIX:QUEUE:ID:lock``, a string that expires (``lockDuration``, 30 s by default) unless the
worker renews it.

A worker's blocking connection is named ``PREFIX:BASE64(QUEUE)`` in Redis's ``CLIENT LIST``,
``PREFIX:BASE64(QUEUE):w:NAME`` when the worker has a name (``processedBy``, ``pb`` in the job's
hash). On this host the kernel says which process holds the connection's socket: that is the
worker process, since a process cannot hold a socket it did not open or inherit.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zombietop.printable import printable

SHOWN = 1000
"""Jobs read from the head of each list or set of a queue."""
QUEUES_SHOWN = 1000
"""Queues read at most: each costs one round trip."""
JOB_FIELDS = (
    "name",
    "timestamp",
    "processedOn",
    "finishedOn",
    "failedReason",
    "pb",
    "ats",
    "stc",
    "delay",
)
"""The fields of a job's hash zombietop reads: never ``data``, ``opts`` or ``stacktrace``,
which a job's author fills."""
WAITING = ("wait", "paused")
"""The lists of jobs that wait for a worker."""
HELD = ("prioritized", "waiting-children")
"""The sorted sets of jobs that wait: for a worker by priority, or for their children."""
REASON_SHOWN = 200
"""The most characters of a failed job's error kept in its reason."""
DELAY_SHIFT = 4096
"""BullMQ's ``delayed`` score is the time due in milliseconds times this, plus a counter."""


def text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def millis(value: str | None) -> float | None:
    """BullMQ's times (milliseconds since the epoch, as text) as epoch seconds."""
    if not value:
        return None
    try:
        found = float(value)
    except ValueError:
        return None
    return found / 1000 if found > 0 else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One job of a queue as BullMQ keeps it, and where it was found."""

    queue: str
    job_id: str
    where: str
    """The key it was found in: ``active``, ``wait``, ``delayed``, ``completed`` ..."""
    fields: Mapping[str, str | None]
    lock_ms: int | None = None
    """An active job's lock: milliseconds left, -1 for a lock without expiry, None when gone."""
    due: float | None = None
    """A delayed job: when BullMQ moves it to wait, epoch seconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Client:
    """One connection in Redis's CLIENT LIST that BullMQ named for a queue's worker."""

    queue: str
    """The queue's name as BullMQ wrote it (compared with keys' names, never shown)."""
    worker: str | None
    """The worker's name (``:w:NAME``), None for a worker without one; never shown."""
    addr: str
    """The client's address as Redis saw it: ``HOST:PORT``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BullReads:
    read_at: float
    jobs: tuple[Job, ...]
    paused: frozenset[str]
    """The queues BullMQ says are paused."""
    workers: tuple[Client, ...]
    queues: tuple[str, ...]


def queue_names(scan: Callable[[str], Any], prefix: str) -> list[str]:
    """Every queue under ``prefix``: each has a ``meta`` hash or an ``id`` counter."""
    found: set[str] = set()
    for suffix in ("meta", "id"):
        for key in scan(f"{prefix}:*:{suffix}"):
            name = (text(key) or "").removeprefix(f"{prefix}:").removesuffix(f":{suffix}")
            if name:
                found.add(name)
    return sorted(found)[:QUEUES_SHOWN]


def read_queues(redis: Any, prefix: str, since: float | None, now: float) -> BullReads:
    """Every job of every queue under ``prefix`` that waits, runs, or ended at or after
    ``since``, and the workers' connections, in a few round trips."""
    queues = queue_names(lambda match: redis.scan_iter(match=match, count=1000), prefix)
    pipe = redis.pipeline(transaction=False)
    after = "-inf" if since is None else int(since * 1000)
    for queue in queues:
        base = f"{prefix}:{queue}:"
        pipe.lrange(base + "active", 0, SHOWN - 1)
        for name in WAITING:
            pipe.lrange(base + name, 0, SHOWN - 1)
        for name in HELD:
            pipe.zrange(base + name, 0, SHOWN - 1)
        pipe.zrange(base + "delayed", 0, SHOWN - 1, withscores=True)
        for name in ("completed", "failed"):
            pipe.zrevrangebyscore(base + name, "+inf", after, start=0, num=SHOWN)
        pipe.hget(base + "meta", "paused")
    got = iter(pipe.execute(raise_on_error=False))
    listed: list[tuple[str, str, str, float | None]] = []
    paused: set[str] = set()
    for queue in queues:
        for where in ("active", *WAITING, *HELD):
            listed.extend((queue, where, job_id, None) for job_id in _ids(next(got)))
        delayed = next(got)
        for member, score in delayed if isinstance(delayed, list) else ():
            due = float(score) // DELAY_SHIFT / 1000
            listed.append((queue, "delayed", text(member) or "", due))
        for where in ("completed", "failed"):
            listed.extend((queue, where, job_id, None) for job_id in _ids(next(got)))
        if text(next(got)) in ("1", "true"):
            paused.add(queue)
    return BullReads(
        read_at=now,
        jobs=tuple(_jobs(redis, prefix, listed)),
        paused=frozenset(paused),
        workers=tuple(workers(redis.client_list(), prefix)),
        queues=tuple(queues),
    )


def _ids(found: Any) -> list[str]:
    """The job ids of one list or set; none for a key of another type (Redis's error)."""
    if not isinstance(found, list):
        return []
    return [job_id for job_id in map(text, found) if job_id]


def _jobs(
    redis: Any, prefix: str, listed: Sequence[tuple[str, str, str, float | None]]
) -> list[Job]:
    """Each listed job's hash, and an active job's lock, in one round trip."""
    pipe = redis.pipeline(transaction=False)
    for queue, where, job_id, _ in listed:
        key = f"{prefix}:{queue}:{job_id}"
        pipe.hmget(key, JOB_FIELDS)
        if where == "active":
            pipe.pttl(key + ":lock")
    got = iter(pipe.execute(raise_on_error=False))
    found: list[Job] = []
    for queue, where, job_id, due in listed:
        values = next(got)
        lock = next(got) if where == "active" else None
        if not isinstance(values, list) or all(value is None for value in values):
            continue  # its hash is gone, or is not a hash: BullMQ removed it meanwhile
        lock_ms = lock if isinstance(lock, int) and lock != -2 else None
        found.append(
            Job(
                queue=queue,
                job_id=job_id,
                where=where,
                fields=dict(zip(JOB_FIELDS, map(text, values), strict=True)),
                lock_ms=lock_ms,
                due=due,
            )
        )
    return found


def workers(clients: Sequence[Mapping[str, Any]], prefix: str) -> list[Client]:
    """The connections BullMQ named for a queue's worker under ``prefix``."""
    found: list[Client] = []
    head = f"{prefix}:"
    for client in clients:
        name = text(client.get("name")) or ""
        if not name.startswith(head):
            continue
        encoded, marker, worker = name[len(head) :].partition(":w:")
        if not marker and ":" in encoded:
            continue  # a QueueEvents connection (``:qe``) or another's
        try:
            queue = base64.b64decode(encoded, validate=True).decode()
        except (binascii.Error, ValueError):
            continue
        found.append(
            Client(
                queue=queue,
                worker=worker if marker else None,
                addr=text(client.get("addr")) or "",
            )
        )
    return found


def failed_reason(value: str | None) -> str | None:
    """BullMQ's ``failedReason`` (the error's message): its first line, printable and short."""
    lines = [line.strip() for line in (value or "").splitlines() if line.strip()]
    if not lines:
        return None
    line = printable(lines[0])
    if len(line) > REASON_SHOWN:
        line = line[: REASON_SHOWN - 3] + "..."
    return line
