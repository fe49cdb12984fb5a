"""BullMQ on Redis as a read-only source.

Each poll reads, and never writes, BullMQ's keys (``zombietop.sources.bullmq_reads``) and the
workers' connections in Redis's ``CLIENT LIST``.

- The id is ``QUEUE/NAME/JOB_ID``; the step type and the job are the job's name.
- An active job is running from its ``processedOn``. Its lease is its lock: held while the lock
  key lives (expiring with it), expired once the key is gone. The lock proves that the worker
  lives, not that the job moves: a beat of the worker (``HeartbeatSource.SUPERVISOR``) when it
  last renewed the lock, which is as long ago as the lock has lost of its duration.
- A job whose lock is gone is what BullMQ calls stalled. Only a worker's stalled check moves it
  back to wait, so with no worker on its queue it stays active for ever: its reason says so.
- The worker process: on this host, the process that holds the socket of the queue's worker
  connection (the one named after the job's ``processedBy`` when the worker has a name), when
  exactly one process does. It is remembered, so a worker killed mid-job leaves its job
  ``dead`` at the next poll, long before its lock expires.
- Jobs in ``wait``, ``paused`` and ``prioritized`` are queued; delayed jobs and jobs waiting for
  their children are queued but wait for a known moment or for other jobs, not for a worker.
- Jobs in ``completed`` and ``failed`` that ended since the finished window are succeeded or
  failed runs (with BullMQ's ``failedReason``), paged as any failed run.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from zombietop.clock import Clock
from zombietop.errors import SourceError
from zombietop.model import Lease, Task, TaskRecord, TaskState
from zombietop.procs import read_start
from zombietop.sources.base import Engine, EngineWorker, Origin, SourceRecord, proof_of_life
from zombietop.sources.bullmq_reads import (
    BullReads,
    Client,
    Job,
    failed_reason,
    millis,
    read_queues,
    workers,
)
from zombietop.sources.engine_text import bounded_id
from zombietop.sources.kernel_sockets import process_sockets, socket_owners, split_addr
from zombietop.sources.redis_source import RedisSource, check_redis_url
from zombietop.sources.worker_processes import running
from zombietop.start_identity import ProcessStart

if TYPE_CHECKING:
    # Only for annotations: the config imports the sources to check their URLs.
    from zombietop.thresholds import Limits

SCHEMES = ("bullmq+redis",)
FORMS = ("bullmq+redis://HOST:PORT/DB",)
BULLMQ_HEARTBEAT_TIMEOUT = 60.0
"""Seconds without a lock seen alive before an active job is stalled: two of BullMQ's default
lock durations (30 s), which its worker renews at half of it."""
BULLMQ_LOCK = 30.0
"""BullMQ's default ``lockDuration``: how long a lock lives unless renewed."""
RUNTIMES = ("node", "nodejs", "bun", "deno")
"""The programs a BullMQ worker runs in."""


def check_url(url: str) -> str:
    """Return ``url`` if it names BullMQ's Redis, else raise saying how to write one."""
    return check_redis_url(
        url, engine="BullMQ's Redis", form=FORMS[0], option="prefix", default="bull"
    )


def bull_task_id(queue: str, name: str, job_id: str) -> str:
    """zombietop's id for a BullMQ job: ``QUEUE/NAME/JOB_ID``, each part bounded."""
    return f"{bounded_id(queue)}/{bounded_id(name)}/{bounded_id(job_id)}"


def stalled_words(queue: str, workers_on: int) -> str:
    """What BullMQ does with a job whose lock is gone, in its own words."""
    if workers_on:
        many = "a worker" if workers_on == 1 else f"{workers_on} workers"
        return (
            f"stalled in BullMQ's words; {many} on queue {queue}: the next stalled check moves "
            "it back to wait"
        )
    return (
        f"stalled in BullMQ's words, no worker on queue {queue}; BullMQ moves it back only "
        "when a worker starts"
    )


class BullMQSource(RedisSource):
    """BullMQ's Redis, read-only."""

    extra = "bullmq"
    needs = "a BullMQ source"
    clock = "this host's clock (BullMQ's workers write their own times into Redis)"

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(url, heartbeat_timeout=heartbeat_timeout, clock=clock)
        self.prefix = parse_qs(urlsplit(url).query).get("prefix", ["bull"])[0]
        self._workers: dict[str, tuple[int, ProcessStart]] = {}
        """By job id, the worker process last found for it on this host."""
        self._lock_seen: dict[str, float] = {}
        """By job id, when its lock was last seen alive."""
        self._lock_ends: dict[str, float] = {}
        """By job id, when its lock was due to expire as last seen alive."""
        self._lock_lost: dict[str, float] = {}
        """By job id, when its lock expired (or was first seen gone)."""
        self._lock_longest: dict[str, int] = {}
        """By queue, the most milliseconds left seen on a lock: its lock duration, nearly."""
        self._lock = asyncio.Lock()
        self._workers_seen: tuple[EngineWorker, ...] = ()

    def limit_overrides(self, base: Limits) -> dict[str, tuple[float, str]]:
        return {
            **super().limit_overrides(base),
            "lease_ttl": (BULLMQ_LOCK, "BullMQ: a worker's default lockDuration"),
        }

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        if self._redis is None:
            await self.open()
        async with self._lock:
            try:
                reads = await asyncio.to_thread(
                    read_queues, self._redis, self.prefix, since, self._clock.now()
                )
            except self._errors as exc:
                raise SourceError(f"source {self.name}: cannot read Redis ({exc})") from None
            return await asyncio.to_thread(self._records, reads, host)

    def _records(self, reads: BullReads, host: str) -> list[SourceRecord]:
        active = [job for job in reads.jobs if job.where == "active"]
        owners = socket_owners(self.redis_port) if active and reads.workers else {}
        processes: dict[tuple[str, str | None], tuple[int, ProcessStart] | None] = {}
        found: dict[str, tuple[int, ProcessStart]] = {}
        seen: dict[str, float] = {}
        ends: dict[str, float] = {}
        lost: dict[str, float] = {}
        out: list[SourceRecord] = []
        for job in reads.jobs:
            if job.where != "active":
                out.append(self._waiting_or_ended(job, reads))
                continue
            # One answer for each queue and worker name: a thousand jobs share a few workers.
            worker = (job.queue, job.fields.get("pb"))
            if worker not in processes:
                processes[worker] = worker_process(*worker, reads.workers, owners)
            process = processes[worker] or self._workers.get(job.job_id)
            if process is not None:
                found[job.job_id] = process
            out.append(self._active(job, reads, process, host, (seen, ends, lost)))
        self._workers, self._lock_seen = found, seen
        self._lock_ends, self._lock_lost = ends, lost
        self._workers_seen = self._seen(active, reads.workers, owners)
        return out

    def workers(self) -> Sequence[EngineWorker]:
        """BullMQ's worker connections as the last poll read them (``ListsWorkers``), and a
        worker that active jobs name (their ``processedBy``) with no connection left: gone."""
        return self._workers_seen

    def _seen(
        self,
        active: Sequence[Job],
        clients: Sequence[Client],
        owners: Mapping[tuple[str, int], int],
    ) -> tuple[EngineWorker, ...]:
        held = Counter((job.queue, job.fields.get("pb") or None) for job in active)
        seen: dict[tuple[str, str | None], EngineWorker] = {}
        for client in clients:
            key = (client.queue, client.worker)
            where = split_addr(client.addr)
            seen.setdefault(key, self._worker(key, held.pop(key, 0), where, owners))
        for key, holds in held.items():
            seen[key] = replace(
                self._worker(key, holds, None, owners),
                gone=True,
                why=(
                    "no connection of it in Redis's CLIENT LIST: its lock runs out, and only "
                    "another worker's stalled check moves its jobs back"
                ),
            )
        return tuple(seen.values())

    def _worker(
        self,
        key: tuple[str, str | None],
        holds: int,
        where: tuple[str, int] | None,
        owners: Mapping[tuple[str, int], int],
    ) -> EngineWorker:
        queue, name = key
        return EngineWorker(
            name=bounded_id(name or f"a worker of queue {queue}"),
            kind=self.kind,
            source=self.name,
            host=None if where is None else where[0],
            pid=None if where is None else owners.get(where),
            last_beat=None,  # a BullMQ worker beats by renewing its jobs' locks, not itself
            holds=holds,
            gone=False,
        )

    def _active(
        self,
        job: Job,
        reads: BullReads,
        process: tuple[int, ProcessStart] | None,
        host: str,
        kept: tuple[dict[str, float], dict[str, float], dict[str, float]],
    ) -> SourceRecord:
        """An active job: running under its lock, or stalled (in BullMQ's word) once the lock
        is gone; ``kept`` gathers what this poll saw of its lock for the next one."""
        seen, ends, lost = kept
        now = reads.read_at
        fields = job.fields
        name = bounded_id(fields.get("name") or "?")
        zid = bull_task_id(job.queue, name, job.job_id)
        added = millis(fields.get("timestamp"))
        started = millis(fields.get("processedOn")) or added or now
        owner = bounded_id(fields.get("pb") or "") or "a BullMQ worker"
        reason = None
        if job.lock_ms is None:
            expired = lost[job.job_id] = self._lock_lost.get(
                job.job_id, min(self._lock_ends.get(job.job_id, now), now)
            )
            on_queue = sum(1 for client in reads.workers if client.queue == job.queue)
            reason = stalled_words(bounded_id(job.queue), on_queue)
            lease = Lease(
                task_id=zid, owner=owner, token=1, acquired_at=started, expires_at=expired
            )
            beat = self._lock_seen.get(job.job_id)
            if beat is not None:
                seen[job.job_id] = beat
        else:
            expires = None if job.lock_ms < 0 else now + job.lock_ms / 1000
            if expires is not None:
                ends[job.job_id] = expires
            lease = Lease(
                task_id=zid, owner=owner, token=1, acquired_at=started, expires_at=expires
            )
            beat = seen[job.job_id] = self._renewed(job, now)
        pid, pid_start = process if process is not None else (None, None)
        stc = fields.get("stc")
        task = Task(
            task_id=zid,
            run_id=job.job_id,
            step=name,
            step_type=name,
            job=name,
            state=TaskState.RUNNING,
            attempt=_count(fields.get("ats")) or 1,
            host=host if pid is not None else None,
            pid=pid,
            pid_start_time=None if pid_start is None else pid_start.time,
            pid_start_identity=None if pid_start is None else pid_start.identity,
            state_reason=reason,
            redelivered=bool(_count(stc)),
            created_at=added or started,
            claimed_at=started,
            started_at=started,
            updated_at=now,
        )
        if task.redelivered:
            task = _with_reason(task, f"BullMQ found it stalled {stc} time(s) and ran it again")
        heartbeat = proof_of_life(zid, beat, started)
        return SourceRecord(
            record=TaskRecord(task=task, lease=lease, heartbeat=heartbeat),
            origin=self._origin(job, name),
        )

    def _renewed(self, job: Job, now: float) -> float:
        """When the worker last renewed a live lock, at the latest: as long before ``now`` as
        the lock has lost of its duration. The duration is the longest time left seen on any
        lock of the queue (a worker sets it; Redis does not keep it)."""
        left = max(job.lock_ms or 0, 0)
        longest = self._lock_longest[job.queue] = max(self._lock_longest.get(job.queue, 0), left)
        return now - (longest - left) / 1000

    def _waiting_or_ended(self, job: Job, reads: BullReads) -> SourceRecord:
        now = reads.read_at
        fields = job.fields
        name = bounded_id(fields.get("name") or "?")
        added = millis(fields.get("timestamp")) or now
        started = millis(fields.get("processedOn"))
        finished = millis(fields.get("finishedOn"))
        state, reason, in_queue = TaskState.QUEUED, None, True
        if job.where == "completed":
            state = TaskState.SUCCEEDED
        elif job.where == "failed":
            state = TaskState.FAILED
            reason = failed_reason(fields.get("failedReason")) or "bullmq failed, no reason"
        elif job.where == "delayed":
            in_queue = False
            reason = "bullmq delayed: due at a set time"
        elif job.where == "waiting-children":
            in_queue = False
            reason = "bullmq waiting-children: runs when its children have completed"
        elif job.queue in reads.paused:
            reason = f"queue {bounded_id(job.queue)} is paused in BullMQ"
        task = Task(
            task_id=bull_task_id(job.queue, name, job.job_id),
            run_id=job.job_id,
            step=name,
            step_type=name,
            job=name,
            state=state,
            attempt=_count(fields.get("ats")) or 1,
            state_reason=reason,
            waits_in_queue=in_queue,
            created_at=added,
            claimed_at=started if state.finished else None,
            started_at=started if state.finished else None,
            finished_at=(finished or now) if state.finished else None,
            updated_at=(finished or now) if state.finished else now,
        )
        return SourceRecord(
            record=TaskRecord(task=task, lease=None, heartbeat=None),
            origin=self._origin(job, name),
        )

    def _origin(self, job: Job, name: str) -> Origin:
        worker = job.fields.get("pb")
        return self.origin(
            {
                "queue": bounded_id(job.queue),
                "name": name,
                "job_id": bounded_id(job.job_id),
                "worker": None if worker is None else bounded_id(worker),
                "state": job.where,
                "prefix": self.prefix,
            }
        )

    def kill_check(self, pid: int) -> str | None:
        """None when ``pid`` runs Node (or Bun, or Deno) and holds, right now, a connection
        that Redis lists as a BullMQ worker's under this source's prefix; else what it is."""
        said = running(pid, RUNTIMES, "a BullMQ worker (node)")
        if said is not None:
            return said
        try:
            clients = self._redis.client_list() if self._redis is not None else []
        except self._errors as exc:
            return f"cannot read Redis's CLIENT LIST ({exc}): pid {pid} is not shown to be a worker"
        held = process_sockets(pid)
        for client in workers(clients, self.prefix):
            if split_addr(client.addr) in held:
                return None
        return (
            f"pid {pid} holds no connection that Redis lists as a BullMQ worker's "
            f"(prefix {self.prefix}); nothing signalled"
        )


def worker_process(
    queue: str, worker: str | None, clients: Sequence[Client], owners: Mapping[tuple[str, int], int]
) -> tuple[int, ProcessStart] | None:
    """The worker process on this host of an active job of ``queue`` run by ``worker`` (its
    ``processedBy``; None when the worker has no name): the one process that holds the
    connections of the workers that may run it; None when there is not exactly one."""
    candidates = [
        client
        for client in clients
        if client.queue == queue and (worker is None or client.worker == worker)
    ]
    pids = {owners.get(split_addr(client.addr) or ("", 0)) for client in candidates}
    if len(pids) != 1 or None in pids:
        return None
    pid = pids.pop()
    assert pid is not None
    start = read_start(pid)
    return None if start is None else (pid, start)


def _count(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 0


def _with_reason(task: Task, words: str) -> Task:
    return replace(task, state_reason="; ".join(filter(None, [task.state_reason, words])))


def _resume(origin: Origin) -> str:
    queue, job_id = origin.ids["queue"], origin.ids["job_id"]
    if origin.ids.get("state") == "active":
        return (
            f"To run it again, start a worker on queue {queue}: its stalled check moves the job "
            f"back to wait once its lock is gone. A job that failed: "
            f"(await Job.fromId(new Queue({str(queue)!r}), {str(job_id)!r})).retry()"
        )
    return (
        "To run it again, use BullMQ's own call: "
        f"(await Job.fromId(new Queue({str(queue)!r}), {str(job_id)!r})).retry()"
    )


def _discard(origin: Origin) -> str:
    queue, job_id = origin.ids["queue"], origin.ids["job_id"]
    return (
        "To drop it, use BullMQ's own call: "
        f"(await Job.fromId(new Queue({str(queue)!r}), {str(job_id)!r})).remove()"
    )


ENGINE = Engine(
    kind="bullmq",
    name="BullMQ",
    unit="job",
    schemes=SCHEMES,
    forms=FORMS,
    check_url=check_url,
    make=BullMQSource,
    heartbeat_timeout=(BULLMQ_HEARTBEAT_TIMEOUT, "BullMQ: two lock durations of its worker"),
    actions="retry or remove it with BullMQ, or kill its worker",
    task_id=lambda origin: "/".join(str(origin.ids[key]) for key in ("queue", "name", "job_id")),
    resume=_resume,
    discard=_discard,
)
