"""RQ on Redis as a read-only source.

Each poll reads, and never writes, RQ's own keys: the queues (``rq:queues``, each queue's
list), each queue's StartedJobRegistry (``rq:wip:QUEUE``, a sorted set whose score is the
entry's expiry: RQ's own lease), the workers (``rq:workers`` and each ``rq:worker:NAME`` hash,
with its ``pid``, ``hostname``, ``state`` and ``last_heartbeat``) and the started jobs' hashes
(``rq:job:ID``). A job's pickled ``data`` is never loaded: its name is read from its
``description``.

- The id is ``QUEUE/FUNCTION/JOB_ID``; the step type is the function's name.
- A started job is running, its lease the registry's expiry, its heartbeat its worker's
  ``last_heartbeat`` (proof of life: ``HeartbeatSource.SUPERVISOR``). RQ does not record the
  work horse's pid: on this host it is the worker's child, found through /proc and remembered,
  so a horse that dies with its worker reads ``dead``, before RQ's own cleanup finds the job.
  A worker whose hash is gone leaves its job ``dead`` too.
- Queued jobs are queued, and so are the jobs deferred behind the jobs they depend on (RQ's
  DeferredJobRegistry, ``rq:deferred:QUEUE``, for ``depends_on``): their upstream is the ids
  the job's hash lists in ``dependency_ids``, so the watchdog pages a stalled dependency once,
  naming the jobs it blocks. A job deferred behind one that failed waits for ever in RQ: its
  reason says so.
- The jobs that ended since the finished window are read from RQ's failed and finished
  registries (``zombietop.sources.rq_ends``): a failed job is a failed run with its error,
  paged as any failed run.
- A key of another type than RQ's (a string where a sorted set should be) is skipped and named
  in ``notes``; the rest is read. A job whose start time does not read as a time is taken as
  starting when RQ enqueued it (else when zombietop first saw it), with no heartbeat:
  ``stalled`` after the start grace.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import psutil

from zombietop.clock import Clock
from zombietop.errors import SourceError
from zombietop.locations import printable_url
from zombietop.model import Lease, Task, TaskRecord, TaskState
from zombietop.printable import printable
from zombietop.procs import read_start
from zombietop.sources.base import Engine, EngineWorker, Origin, SourceRecord, proof_of_life
from zombietop.sources.engine_text import bounded_id
from zombietop.sources.redis_source import RedisSource
from zombietop.sources.rq_ends import (
    ENDED_FIELDS,
    ENDED_SHOWN,
    REGISTRIES,
    Ended,
    Keys,
    failures,
    notes,
)
from zombietop.sources.worker_processes import RQ_HORSE, engine_child
from zombietop.start_identity import ProcessStart

SCHEMES = ("rq+redis",)
FORMS = ("rq+redis://HOST:PORT/DB",)
RQ_HEARTBEAT_TIMEOUT = 90.0
"""Seconds without a worker heartbeat before its job is stalled, unless the config says:
three of RQ's default job monitoring intervals (30 s), at which the worker beats."""
QUEUED_SHOWN = 1000
"""Jobs read from the head of each queue's list."""
JOB_FIELDS = ("description", "started_at", "enqueued_at", "worker_name", "status")
DEFERRED_FIELDS = ("description", "dependency_ids", "dependency_id", "enqueued_at")
ENDED_WITHOUT_SUCCESS = {"failed": "failed", "stopped": "was stopped", "canceled": "was canceled"}
"""RQ's statuses of a job that ended without success, in words: a job deferred behind one
waits for ever."""


def check_url(url: str) -> str:
    """Return ``url`` if it names RQ's Redis, else raise saying how to write one."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in SCHEMES:
        raise SourceError(f"source {printable_url(url)!r}: not RQ's Redis; use {FORMS[0]}")
    parts = urlsplit(url)
    db = parts.path.strip("/")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise SourceError(f"source {printable_url(url)!r}: the port is not a number") from None
    if not parts.hostname or (db and not db.isdigit()) or parts.query:
        raise SourceError(
            f"source {printable_url(url)!r}: write {FORMS[0]} (DB is a number, 0 by default)"
        )
    return url


@dataclass(frozen=True, slots=True, kw_only=True)
class Worker:
    """One ``rq:worker:NAME`` hash."""

    name: str
    pid: int | None
    hostname: str | None
    state: str | None
    last_heartbeat: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Started:
    """One StartedJobRegistry entry and its job's hash."""

    queue: str
    job_id: str
    expires_at: float
    fields: Mapping[str, str | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Waiting:
    """One job waiting: in its queue's list, or deferred behind the jobs it depends on."""

    queue: str
    job_id: str
    description: str | None
    enqueued_at: str | None = None
    status: str
    """RQ's word for where it waits: ``queued`` or ``deferred``."""
    upstream: tuple[str, ...] = ()
    """zombietop's ids of the jobs it depends on (a deferred job's ``dependency_ids``)."""
    ended_ups: tuple[str, ...] = ()
    """Of those, each that ended without success, in words (``X, which failed``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RQReads:
    read_at: float
    started: tuple[Started, ...]
    queued: tuple[Waiting, ...]
    """Each job waiting in a queue's list, then each deferred one."""
    ended: tuple[Ended, ...]
    """Each job in a failed or finished registry that ended since the window's start."""
    workers: Mapping[str, Worker]
    skipped: tuple[str, ...] = ()
    """Each key that is not of the type RQ writes, with the type it should be."""


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _when(value: str | None) -> float | None:
    """RQ's UTC time text (``utcformat``) as epoch seconds."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _unreadable_start(value: str | None) -> str | None:
    """Why RQ's ``started_at`` of a started job gives no time, in words; None when it does."""
    if not value:
        return "RQ recorded no start time for it"
    if _when(value) is None:
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"RQ's start time {printable(shown)!r} does not read as a time"
    return None


def job_name(description: str | None) -> str:
    """The function an RQ job calls, from its description (``tasks.spin(3)``), bounded:
    RQ sets no limit on a description."""
    return bounded_id((description or "?").split("(", 1)[0] or "?")


def rq_task_id(queue: str, name: str, job_id: str) -> str:
    """zombietop's id for an RQ job: ``QUEUE/FUNCTION/JOB_ID``, each part bounded."""
    return f"{bounded_id(queue)}/{bounded_id(name)}/{bounded_id(job_id)}"


def dependency_ids(many: str | None, one: str | None) -> list[str]:
    """The ids of the jobs a job depends on, as RQ keeps them in its hash: ``dependency_ids``
    (a JSON list), or the older ``dependency_id`` alone; none when they do not read."""
    if not many:
        return [one] if one else []
    try:
        found = json.loads(many)
    except ValueError:
        return []
    return [str(job_id) for job_id in found] if isinstance(found, list) else []


class RQSource(RedisSource):
    """RQ's Redis, read-only."""

    extra = "rq"
    needs = "an RQ source"
    clock = "this host's clock (RQ's workers write UTC times into Redis)"

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(url, heartbeat_timeout=heartbeat_timeout, clock=clock)
        self._wrong_type: type[BaseException] = LookupError
        """Redis's error for a key of another type (``redis.ResponseError`` once open)."""
        self.notes: tuple[str, ...] = ()
        """What the last read skipped, in words (each key of another type than RQ's)."""
        self._first_seen: dict[str, float] = {}
        """By job id, when a job whose time does not read was first seen."""
        self._horses: dict[str, tuple[int, ProcessStart]] = {}
        """By job id, the work horse last found for it on this host."""
        self._lock = asyncio.Lock()
        self._workers_seen: tuple[EngineWorker, ...] = ()

    def _connect(self) -> None:
        import redis

        self._wrong_type = redis.ResponseError
        super()._connect()

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        if self._redis is None:
            await self.open()
        async with self._lock:
            try:
                reads = await asyncio.to_thread(self._read, since)
            except self._errors as exc:
                raise SourceError(f"source {self.name}: cannot read Redis ({exc})") from None
            local = self.local_names(host)
            self._workers_seen = self._seen(reads)
            return await asyncio.to_thread(self._records, reads, host, local)

    def workers(self) -> Sequence[EngineWorker]:
        """RQ's workers as the last poll read them (``ListsWorkers``), and each worker that
        started jobs still name though its hash expired: gone, holding them."""
        return self._workers_seen

    def _seen(self, reads: RQReads) -> tuple[EngineWorker, ...]:
        held = Counter(entry.fields.get("worker_name") or "" for entry in reads.started)
        seen = [
            EngineWorker(
                name=bounded_id(name),
                kind=self.kind,
                source=self.name,
                host=worker.hostname,
                pid=worker.pid,
                last_beat=worker.last_heartbeat,
                holds=held[name],
                gone=False,
            )
            for name, worker in reads.workers.items()
        ]
        gone = (name for name in held if name and name not in reads.workers)
        seen += [
            EngineWorker(
                name=bounded_id(name),
                kind=self.kind,
                source=self.name,
                host=None,
                pid=None,
                last_beat=None,
                holds=held[name],
                gone=True,
                why="its hash rq:worker:NAME expired: it stopped beating",
            )
            for name in gone
        ]
        return tuple(seen)

    def _read(self, since: float | None) -> RQReads:
        r = self._redis
        keys = Keys(self._wrong_type)
        read_at = self._clock.now()
        listed: set[Any] = keys.read("rq:queues", "a set", partial(r.smembers, "rq:queues"), set())
        queues = sorted(name.removeprefix("rq:queue:") for name in (_text(q) or "" for q in listed))
        started: list[Started] = []
        queued: list[Waiting] = []
        deferred: list[Waiting] = []
        ended: list[Ended] = []
        names: dict[str, tuple[str | None, str | None]] = {}
        for queue in queues:
            wip = f"rq:wip:{queue}"
            entries: list[Any] = keys.read(
                wip, "a sorted set", partial(r.zrange, wip, 0, -1, withscores=True), []
            )
            listing = f"rq:queue:{queue}"
            waiting: list[Any] = keys.read(
                listing, "a list", partial(r.lrange, listing, 0, QUEUED_SHOWN - 1), []
            )
            for member, score in entries:
                # RQ 2 writes JOB_ID:EXECUTION_ID; older RQ the job id alone.
                job_id = (_text(member) or "").partition(":")[0]
                values = self._hash(keys, job_id, JOB_FIELDS)
                if values is not None:
                    started.append(
                        Started(queue=queue, job_id=job_id, expires_at=float(score), fields=values)
                    )
            ids = [_text(one) or "" for one in waiting]
            for job_id, fields in zip(
                ids, self._hashes(keys, ids, ("description", "enqueued_at")), strict=True
            ):
                if job_id and fields is not None:
                    queued.append(
                        Waiting(
                            queue=queue,
                            job_id=job_id,
                            description=fields["description"],
                            enqueued_at=fields["enqueued_at"],
                            status="queued",
                        )
                    )
            deferred.extend(self._deferred(keys, queue, names))
            ended.extend(self._ended(keys, queue, since))
        return RQReads(
            read_at=read_at,
            started=tuple(started),
            queued=(*queued, *deferred),
            ended=tuple(ended),
            workers=self._workers(keys),
            skipped=tuple(keys.skipped),
        )

    def _hash(self, keys: Keys, job_id: str, names: Sequence[str]) -> dict[str, str | None] | None:
        """The fields ``names`` of the job's hash; None when its key is of another type."""
        key = f"rq:job:{job_id}"
        values = keys.read(key, "a hash", lambda: self._redis.hmget(key, names), None)
        if values is None:
            return None
        return dict(zip(names, map(_text, values), strict=True))

    def _hashes(
        self, keys: Keys, job_ids: Sequence[str], names: Sequence[str]
    ) -> list[dict[str, str | None] | None]:
        """The fields ``names`` of each job's hash, in one round trip; None for a key of
        another type."""
        found = keys.many(
            self._redis,
            "a hash",
            [f"rq:job:{job_id}" for job_id in job_ids],
            lambda pipe, key: pipe.hmget(key, names),
        )
        return [
            None if values is None else dict(zip(names, map(_text, values), strict=True))
            for values in found
        ]

    def _workers(self, keys: Keys) -> dict[str, Worker]:
        r = self._redis
        workers: dict[str, Worker] = {}
        listed: set[Any] = keys.read(
            "rq:workers", "a set", partial(r.smembers, "rq:workers"), set()
        )
        for key in listed:
            text = _text(key) or ""
            name = text.removeprefix("rq:worker:")
            got: dict[Any, Any] = keys.read(text, "a hash", partial(r.hgetall, key), {})
            raw = {_text(k): _text(v) for k, v in got.items()}
            if not raw:
                continue  # listed, but its hash expired: the worker is gone
            pid = raw.get("pid")
            workers[name] = Worker(
                name=name,
                pid=int(pid) if pid and pid.isdigit() else None,
                hostname=bounded_id(raw.get("hostname") or "") or None,
                state=raw.get("state"),
                last_heartbeat=_when(raw.get("last_heartbeat")),
            )
        return workers

    def _ended(self, keys: Keys, queue: str, since: float | None) -> list[Ended]:
        """The jobs of ``queue`` that RQ records as failed or finished, those that ended at or
        after ``since``; a failed one with its error."""
        found: list[Ended] = []
        for status, template in REGISTRIES:
            key = template.format(queue)
            members: list[Any] = keys.read(
                key, "a sorted set", partial(self._redis.zrevrange, key, 0, ENDED_SHOWN - 1), []
            )
            ids = [(_text(member) or "").partition(":")[0] for member in members]
            kept: list[tuple[str, dict[str, str | None]]] = []
            for job_id, fields in zip(ids, self._hashes(keys, ids, ENDED_FIELDS), strict=True):
                ended_at = None if fields is None else _when(fields["ended_at"])
                if fields is None or (
                    since is not None and ended_at is not None and ended_at < since
                ):
                    continue
                kept.append((job_id, fields))
            failed = [job_id for job_id, _ in kept] if status == "failed" else []
            errors = failures(self._redis, keys, failed)
            found.extend(
                Ended(
                    queue=queue,
                    job_id=job_id,
                    status=status,
                    fields=fields,
                    error=errors.get(job_id),
                )
                for job_id, fields in kept
            )
        return found

    def _deferred(
        self, keys: Keys, queue: str, names: dict[str, tuple[str | None, str | None]]
    ) -> list[Waiting]:
        """The jobs deferred in ``queue`` (its DeferredJobRegistry) and what they depend on;
        ``names`` keeps zombietop's id and RQ's status of each dependency asked in this read."""
        found: list[Waiting] = []
        key = f"rq:deferred:{queue}"
        members: list[Any] = keys.read(
            key, "a sorted set", lambda: self._redis.zrange(key, 0, QUEUED_SHOWN - 1), []
        )
        for member in members:
            job_id = _text(member) or ""
            fields = self._hash(keys, job_id, DEFERRED_FIELDS)
            if fields is None:
                continue
            ups = []
            ended = []
            for dep in dependency_ids(fields["dependency_ids"], fields["dependency_id"]):
                zid, status = self._dependency(keys, dep, names)
                if zid is None:
                    ended.append(f"job {printable(dep[:100])}, which RQ no longer has")
                    continue
                ups.append(zid)
                if status in ENDED_WITHOUT_SUCCESS:
                    ended.append(f"{zid}, which {ENDED_WITHOUT_SUCCESS[status]}")
            found.append(
                Waiting(
                    queue=queue,
                    job_id=job_id,
                    description=fields["description"],
                    enqueued_at=fields["enqueued_at"],
                    status="deferred",
                    upstream=tuple(ups),
                    ended_ups=tuple(ended),
                )
            )
        return found

    def _dependency(
        self, keys: Keys, job_id: str, names: dict[str, tuple[str | None, str | None]]
    ) -> tuple[str | None, str | None]:
        """zombietop's id of the job ``job_id``, from its queue (``origin``) and description,
        and RQ's status of it; (None, None) when its hash is gone."""
        if job_id not in names:
            fields = self._hash(keys, job_id, ("origin", "description", "status")) or {}
            origin = fields.get("origin")
            zid = origin and rq_task_id(origin, job_name(fields.get("description")), job_id)
            names[job_id] = (zid or None, fields.get("status"))
        return names[job_id]

    def _records(self, reads: RQReads, host: str, local: frozenset[str]) -> list[SourceRecord]:
        out: list[SourceRecord] = []
        horses: dict[str, tuple[int, ProcessStart]] = {}
        seen, self._first_seen = self._first_seen, {}
        for entry in reads.started:
            worker = reads.workers.get(entry.fields.get("worker_name") or "")
            found = self._horse(entry.job_id, worker, local)
            if found is not None:
                horses[entry.job_id] = found
            first = self._first(seen, entry.job_id, reads.read_at)
            out.append(self._started(entry, worker, found, first, reads.read_at, host, local))
        self._horses = horses
        for waiting in reads.queued:
            out.append(self._waiting(waiting, self._first(seen, waiting.job_id, reads.read_at)))
        for ended in reads.ended:
            first = self._first(seen, ended.job_id, reads.read_at)
            out.append(self._ended_record(ended, reads, first, host, local))
        self.notes = notes(reads.skipped)
        return out

    def _first(self, seen: Mapping[str, float], job_id: str, now: float) -> float:
        """When this source first saw ``job_id`` (kept while it is seen): the time of a job
        whose own time does not read, so that its age grows instead of being now at every
        poll."""
        first = self._first_seen[job_id] = seen.get(job_id, now)
        return first

    def _waiting(self, waiting: Waiting, first: float) -> SourceRecord:
        name = job_name(waiting.description)
        reason = None if waiting.status == "queued" else f"rq {waiting.status}"
        if waiting.ended_ups:
            reason = f"{reason}: waits for ever on {'; '.join(waiting.ended_ups)}"
        task = Task(
            task_id=rq_task_id(waiting.queue, name, waiting.job_id),
            run_id=waiting.job_id,
            step=name,
            step_type=name,
            job=name,
            state=TaskState.QUEUED,
            upstream=waiting.upstream,
            state_reason=reason,
            created_at=_when(waiting.enqueued_at) or first,
            updated_at=first,
        )
        origin = self._origin(waiting.queue, name, waiting.job_id, None, waiting.status)
        return SourceRecord(record=TaskRecord(task=task, lease=None, heartbeat=None), origin=origin)

    def _ended_record(
        self, ended: Ended, reads: RQReads, first: float, host: str, local: frozenset[str]
    ) -> SourceRecord:
        """A failed or finished job: a failed run (with its error) or a succeeded one."""
        fields = ended.fields
        name = job_name(fields.get("description"))
        worker_name = fields.get("worker_name")
        worker = reads.workers.get(worker_name or "")
        where = None if worker is None else worker.hostname
        failed = ended.status == "failed"
        finished = _when(fields.get("ended_at")) or first
        started = _when(fields.get("started_at"))
        task = Task(
            task_id=rq_task_id(ended.queue, name, ended.job_id),
            run_id=ended.job_id,
            step=name,
            step_type=name,
            job=name,
            state=TaskState.FAILED if failed else TaskState.SUCCEEDED,
            host=host if where in local else where,
            state_reason=(ended.error or "rq failed, with no error recorded") if failed else None,
            created_at=_when(fields.get("enqueued_at")) or started or finished,
            claimed_at=started,
            started_at=started,
            finished_at=finished,
            updated_at=finished,
        )
        origin = self._origin(ended.queue, name, ended.job_id, worker_name, ended.status)
        return SourceRecord(record=TaskRecord(task=task, lease=None, heartbeat=None), origin=origin)

    def _horse(
        self, job_id: str, worker: Worker | None, local: frozenset[str]
    ) -> tuple[int, ProcessStart] | None:
        """The work horse of ``job_id`` on this host: the worker's child, or the one found
        before (which the probe then finds gone, or reused)."""
        if worker is not None and worker.pid is not None and worker.hostname in local:
            try:
                children = psutil.Process(worker.pid).children()
            except psutil.Error:
                children = []
            for child in children:
                start = read_start(child.pid)
                if start is not None:
                    return child.pid, start
        return self._horses.get(job_id)

    def _started(
        self,
        entry: Started,
        worker: Worker | None,
        horse: tuple[int, ProcessStart] | None,
        first: float,
        now: float,
        host: str,
        local: frozenset[str],
    ) -> SourceRecord:
        """A started job: running, with its worker's beat; starting (no beat) from when RQ
        enqueued it when its start time does not read, so the start grace ends."""
        name = job_name(entry.fields.get("description"))
        zid = rq_task_id(entry.queue, name, entry.job_id)
        unread = _unreadable_start(entry.fields.get("started_at"))
        # Unread, it started after RQ enqueued it: the start grace counts from then (else from
        # first sight), so that a one-shot ``status`` sees it late too.
        enqueued = _when(entry.fields.get("enqueued_at"))
        started = (
            (enqueued or first) if unread else (_when(entry.fields.get("started_at")) or first)
        )
        worker_name = bounded_id(entry.fields.get("worker_name") or "") or None
        here = (worker is not None and worker.hostname in local) or horse is not None
        pid: int | None = None
        pid_start: ProcessStart | None = None
        reason = None
        if horse is not None:
            pid, pid_start = horse
        elif worker is not None and worker.pid is not None and here:
            # No horse found: the worker itself, which the probe finds gone when it died.
            pid, pid_start = worker.pid, read_start(worker.pid) or ProcessStart(time=started)
        if worker is None:
            reason = f"its worker {worker_name or '?'} is gone from RQ's workers"
        if unread:
            reason = "; ".join(filter(None, [unread, reason]))
        task = Task(
            task_id=zid,
            run_id=entry.job_id,
            step=name,
            step_type=name,
            job=name,
            state=TaskState.STARTING if unread else TaskState.RUNNING,
            host=host if here else (worker.hostname if worker else None),
            pid=pid,
            pid_start_time=None if pid_start is None else pid_start.time,
            pid_start_identity=None if pid_start is None else pid_start.identity,
            state_reason=reason,
            created_at=_when(entry.fields.get("enqueued_at")) or started,
            claimed_at=started,
            started_at=started,
            updated_at=now,
        )
        lease = Lease(
            task_id=zid,
            owner=worker_name,
            token=1,
            acquired_at=started,
            expires_at=entry.expires_at,
        )
        beat = None if worker is None or unread else worker.last_heartbeat
        heartbeat = proof_of_life(zid, beat, started)
        return SourceRecord(
            record=TaskRecord(task=task, lease=lease, heartbeat=heartbeat),
            origin=self._origin(entry.queue, name, entry.job_id, worker_name, "started"),
        )

    def _origin(
        self, queue: str, name: str, job_id: str, worker: str | None, status: str
    ) -> Origin:
        return self.origin(
            {
                "queue": bounded_id(queue),
                "function": bounded_id(name),
                "job_id": bounded_id(job_id),
                "worker": None if worker is None else bounded_id(worker),
                "status": status,
            }
        )

    def kill_check(self, pid: int) -> str | None:
        """None when ``pid`` is RQ's work horse under its ``rq worker``; else what it is."""
        return engine_child(pid, RQ_HORSE)


def _resume(origin: Origin) -> str:
    return f"To re-run it, use the engine's command: rq requeue -u REDIS_URL {origin.ids['job_id']}"


def _discard(origin: Origin) -> str:
    return (
        "To stop it, use the engine's command: from rq.command import send_stop_job_command; "
        f"send_stop_job_command(redis, {str(origin.ids['job_id'])!r})"
    )


ENGINE = Engine(
    kind="rq",
    name="RQ",
    unit="job",
    schemes=SCHEMES,
    forms=FORMS,
    check_url=check_url,
    make=RQSource,
    heartbeat_timeout=(RQ_HEARTBEAT_TIMEOUT, "RQ: three job monitoring intervals of its worker"),
    actions="requeue it with rq, or kill it",
    task_id=lambda origin: "/".join(
        str(origin.ids[key]) for key in ("queue", "function", "job_id")
    ),
    resume=_resume,
    discard=_discard,
)
