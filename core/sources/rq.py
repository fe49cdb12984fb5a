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
  naming the jobs it blocks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import psutil

from zombietop.actions import ActionKind
from zombietop.clock import Clock, SystemClock
from zombietop.errors import MissingExtra, SourceError
from zombietop.extras import require
from zombietop.locations import printable_url
from zombietop.model import Heartbeat, HeartbeatSource, Lease, Task, TaskRecord, TaskState
from zombietop.procs import read_start, this_host
from zombietop.sources.base import Capability, Engine, Origin, SourceRecord, engine_limits
from zombietop.sources.celery_reports import local_hostnames
from zombietop.sources.engine_text import bounded_id
from zombietop.start_identity import ProcessStart

if TYPE_CHECKING:
    from zombietop.config import Limits

SCHEMES = ("rq+redis",)
FORMS = ("rq+redis://HOST:PORT/DB",)
RQ_HEARTBEAT_TIMEOUT = 90.0
"""Seconds without a worker heartbeat before its job is stalled, unless the config says:
three of RQ's default job monitoring intervals (30 s), at which the worker beats."""
QUEUED_SHOWN = 1000
"""Jobs read from the head of each queue's list."""
JOB_FIELDS = ("description", "started_at", "enqueued_at", "worker_name", "status")
DEFERRED_FIELDS = ("description", "dependency_ids", "dependency_id")


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
    status: str
    """RQ's word for where it waits: ``queued`` or ``deferred``."""
    upstream: tuple[str, ...] = ()
    """zombietop's ids of the jobs it depends on (a deferred job's ``dependency_ids``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RQReads:
    read_at: float
    started: tuple[Started, ...]
    queued: tuple[Waiting, ...]
    """Each job waiting in a queue's list, then each deferred one."""
    workers: Mapping[str, Worker]


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


class RQSource:
    """RQ's Redis, read-only; implements ``zombietop.sources.Source``."""

    kind = "rq"
    capability = Capability.READ_ONLY

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        self.url = url
        self.name = printable_url(url)
        self.heartbeat_timeout = (
            RQ_HEARTBEAT_TIMEOUT if heartbeat_timeout is None else heartbeat_timeout
        )
        parts = urlsplit(url)
        self.redis_url = "redis://" + parts.netloc + (parts.path or "/0")
        self.clock = "this host's clock (RQ's workers write UTC times into Redis)"
        self._clock = clock or SystemClock()
        self._redis: Any = None
        self._errors: tuple[type[BaseException], ...] = (OSError,)
        self._horses: dict[str, tuple[int, ProcessStart]] = {}
        """By job id, the work horse last found for it on this host."""
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"RQSource({self.name!r})"

    async def open(self) -> None:
        try:
            require("an RQ source", "redis", extra="rq")
        except MissingExtra as exc:
            raise SourceError(f"source {self.name}: {exc}") from None
        await asyncio.to_thread(self._connect)

    def _connect(self) -> None:
        import redis

        self._errors = (OSError, redis.RedisError)
        if self._redis is None:
            # The name shows zombietop's connections in Redis's CLIENT LIST.
            self._redis = redis.Redis.from_url(
                self.redis_url, socket_timeout=5, socket_connect_timeout=5, client_name="zombietop"
            )
        try:
            self._redis.ping()
        except self._errors as exc:
            raise SourceError(f"source {self.name}: cannot connect to Redis ({exc})") from None

    async def close(self) -> None:
        if self._redis is not None:
            await asyncio.to_thread(self._redis.close)
            self._redis = None

    async def now(self) -> float:
        return self._clock.now()

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        if self._redis is None:
            await self.open()
        async with self._lock:
            try:
                reads = await asyncio.to_thread(self._read)
            except self._errors as exc:
                raise SourceError(f"source {self.name}: cannot read Redis ({exc})") from None
            local = local_hostnames(host) if host == this_host() else frozenset({host})
            return await asyncio.to_thread(self._records, reads, host, local)

    def _read(self) -> RQReads:
        r = self._redis
        read_at = self._clock.now()
        queues = sorted(
            name.removeprefix("rq:queue:")
            for name in (_text(q) or "" for q in r.smembers("rq:queues"))
        )
        started: list[Started] = []
        queued: list[Waiting] = []
        deferred: list[Waiting] = []
        names: dict[str, str | None] = {}
        for queue in queues:
            entries = r.zrange(f"rq:wip:{queue}", 0, -1, withscores=True)
            waiting = [_text(j) or "" for j in r.lrange(f"rq:queue:{queue}", 0, QUEUED_SHOWN - 1)]
            for member, score in entries:
                # RQ 2 writes JOB_ID:EXECUTION_ID; older RQ the job id alone.
                job_id = (_text(member) or "").partition(":")[0]
                values = r.hmget(f"rq:job:{job_id}", JOB_FIELDS)
                started.append(
                    Started(
                        queue=queue,
                        job_id=job_id,
                        expires_at=float(score),
                        fields=dict(zip(JOB_FIELDS, map(_text, values), strict=True)),
                    )
                )
            for job_id in waiting:
                description = _text(r.hget(f"rq:job:{job_id}", "description"))
                queued.append(
                    Waiting(queue=queue, job_id=job_id, description=description, status="queued")
                )
            deferred.extend(self._deferred(queue, names))
        workers: dict[str, Worker] = {}
        for key in r.smembers("rq:workers"):
            name = (_text(key) or "").removeprefix("rq:worker:")
            raw = {_text(k): _text(v) for k, v in r.hgetall(key).items()}
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
        return RQReads(
            read_at=read_at,
            started=tuple(started),
            queued=(*queued, *deferred),
            workers=workers,
        )

    def _deferred(self, queue: str, names: dict[str, str | None]) -> list[Waiting]:
        """The jobs deferred in ``queue`` (its DeferredJobRegistry) and what they depend on;
        ``names`` keeps zombietop's id of each dependency asked in this read."""
        found: list[Waiting] = []
        for member in self._redis.zrange(f"rq:deferred:{queue}", 0, QUEUED_SHOWN - 1):
            job_id = _text(member) or ""
            description, many, one = map(
                _text, self._redis.hmget(f"rq:job:{job_id}", DEFERRED_FIELDS)
            )
            ups = [self._job_id(dep, names) for dep in dependency_ids(many, one)]
            found.append(
                Waiting(
                    queue=queue,
                    job_id=job_id,
                    description=description,
                    status="deferred",
                    upstream=tuple(filter(None, ups)),
                )
            )
        return found

    def _job_id(self, job_id: str, names: dict[str, str | None]) -> str | None:
        """zombietop's id of the job ``job_id``, from its queue (``origin``) and description;
        None when its hash is gone."""
        if job_id not in names:
            fields = self._redis.hmget(f"rq:job:{job_id}", ("origin", "description"))
            origin, description = map(_text, fields)
            names[job_id] = origin and rq_task_id(origin, job_name(description), job_id)
        return names[job_id]

    def _records(self, reads: RQReads, host: str, local: frozenset[str]) -> list[SourceRecord]:
        out: list[SourceRecord] = []
        horses: dict[str, tuple[int, ProcessStart]] = {}
        for entry in reads.started:
            worker = reads.workers.get(entry.fields.get("worker_name") or "")
            found = self._horse(entry.job_id, worker, local)
            if found is not None:
                horses[entry.job_id] = found
            out.append(self._started(entry, worker, found, reads.read_at, host, local))
        self._horses = horses
        for waiting in reads.queued:
            name = job_name(waiting.description)
            task = Task(
                task_id=rq_task_id(waiting.queue, name, waiting.job_id),
                run_id=waiting.job_id,
                step=name,
                step_type=name,
                job=name,
                state=TaskState.QUEUED,
                upstream=waiting.upstream,
                state_reason=None if waiting.status == "queued" else f"rq {waiting.status}",
                created_at=reads.read_at,
                updated_at=reads.read_at,
            )
            origin = self._origin(waiting.queue, name, waiting.job_id, None, waiting.status)
            out.append(
                SourceRecord(
                    record=TaskRecord(task=task, lease=None, heartbeat=None), origin=origin
                )
            )
        return out

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
        now: float,
        host: str,
        local: frozenset[str],
    ) -> SourceRecord:
        name = job_name(entry.fields.get("description"))
        zid = rq_task_id(entry.queue, name, entry.job_id)
        started = _when(entry.fields.get("started_at")) or now
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
        task = Task(
            task_id=zid,
            run_id=entry.job_id,
            step=name,
            step_type=name,
            job=name,
            state=TaskState.RUNNING,
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
        beat = None if worker is None else worker.last_heartbeat
        heartbeat = (
            None
            if beat is None
            else Heartbeat(
                task_id=zid,
                written_at=beat,
                progress_changed_at=beat,
                stage_started_at=started,
                source=HeartbeatSource.SUPERVISOR,
            )
        )
        return SourceRecord(
            record=TaskRecord(task=task, lease=lease, heartbeat=heartbeat),
            origin=self._origin(entry.queue, name, entry.job_id, worker_name, "started"),
        )

    def _origin(
        self, queue: str, name: str, job_id: str, worker: str | None, status: str
    ) -> Origin:
        return Origin(
            source=self.name,
            kind="rq",
            capability=Capability.READ_ONLY,
            ids={
                "queue": bounded_id(queue),
                "function": bounded_id(name),
                "job_id": bounded_id(job_id),
                "worker": None if worker is None else bounded_id(worker),
                "status": status,
            },
        )

    def limits(self, base: Limits) -> Limits:
        return engine_limits(
            base,
            engine="RQ",
            actions="requeue it with rq, or kill it",
            overrides={
                "heartbeat_timeout": (
                    self.heartbeat_timeout,
                    "RQ: three job monitoring intervals of its worker",
                ),
                "stage": (base.task, "RQ: one stage per job (the task budget)"),
            },
        )

    def refusal(self, kind: ActionKind, origin: Origin) -> str | None:
        ids = origin.ids
        what = f"{ids['queue']}/{ids['function']}/{ids['job_id']}"
        where = f"{what} is RQ's (read-only source {self.name}); zombietop never writes to it"
        if kind is ActionKind.RESUME:
            return f"{where}: use the engine's command: rq requeue -u REDIS_URL {ids['job_id']}"
        if kind is ActionKind.DISCARD:
            return (
                f"{where}: use the engine's command: from rq.command import send_stop_job_command; "
                f"send_stop_job_command(redis, {str(ids['job_id'])!r})"
            )
        return None


ENGINE = Engine(
    kind=RQSource.kind, schemes=SCHEMES, forms=FORMS, check_url=check_url, make=RQSource
)
