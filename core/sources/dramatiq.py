"""Dramatiq on Redis as a read-only source.

Each poll reads, and never writes, the keys of Dramatiq's Redis broker
(``zombietop.sources.dramatiq_reads``).

- The id is ``QUEUE/ACTOR/MESSAGE_ID`` (Dramatiq's ``message_id``, which a retry keeps); the
  step type and the job are the actor's name.
- A message in a worker's acks set is held by that worker: running, or prefetched and about to
  run (Redis does not tell the two apart). Dramatiq does not record when a worker took it: its
  run counts from the first poll that saw it held. Its lease is held by the worker and expires
  when Dramatiq would call the worker dead: its last beat plus the broker's heartbeat timeout
  (60 s by default). The beat proves that the worker lives, not that the message moves
  (``HeartbeatSource.SUPERVISOR``).
- Dramatiq moves a dead worker's messages back to their queue only in a maintenance pass that
  a call to the broker starts at random (one in a thousand by default), so a held message can
  stay with a dead worker for many minutes: its reason says so, in Dramatiq's words.
- The worker process: on this host, the process that holds the sockets of the connections that
  name the worker's id in their calls (read from ``MONITOR`` once per worker, then
  remembered). So a worker killed mid-message leaves the message ``dead`` at the next poll,
  long before Dramatiq calls the worker dead.
- Messages in a queue are queued; delayed ones (``.DQ``) wait for a set time, not for a worker.
- Dead-lettered messages (``.XQ``) that failed since the finished window are failed runs,
  paged as any failed run. Dramatiq keeps nothing of a message that succeeded: a held message
  that is gone from every key at the next poll was acknowledged, and is a succeeded run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from zombietop.clock import Clock
from zombietop.durations import format_age
from zombietop.errors import SourceError
from zombietop.model import Lease, Task, TaskRecord, TaskState
from zombietop.procs import read_start
from zombietop.sources.base import Engine, Origin, SourceRecord, proof_of_life
from zombietop.sources.dramatiq_reads import (
    SHOWN,
    DramatiqReads,
    Message,
    beating_connections,
    read_broker,
)
from zombietop.sources.engine_text import bounded_id
from zombietop.sources.kernel_sockets import process_sockets, socket_owners, split_addr
from zombietop.sources.redis_source import RedisSource, check_redis_url
from zombietop.sources.worker_processes import DRAMATIQ_WORKER, engine_child
from zombietop.start_identity import ProcessStart

if TYPE_CHECKING:
    # Only for annotations: the config imports the sources to check their URLs.
    from zombietop.thresholds import Limits

SCHEMES = ("dramatiq+redis",)
FORMS = ("dramatiq+redis://HOST:PORT/DB",)
DRAMATIQ_HEARTBEAT_TIMEOUT = 60.0
"""The broker's default ``heartbeat_timeout``: a worker silent this long is dead to Dramatiq."""
DRAMATIQ_BEAT_EVERY = 1.0
"""A worker's consumers call the broker (and so beat) at least this often, in seconds: the
longest wait between two fetches, Dramatiq's default ``worker_timeout``."""
BEAT_FRESH = 5.0
"""Seconds since its last beat within which a worker is looked for among this host's
processes: a live worker calls Redis at least once a second."""
LOOK_AGAIN = 60.0
"""Seconds before a worker not found on this host is looked for again."""
REQUEUED_ONLY = "Dramatiq requeues it only in a random maintenance pass"
ACKNOWLEDGED = "acknowledged by its worker (Dramatiq keeps nothing of a message that succeeded)"


def check_url(url: str) -> str:
    """Return ``url`` if it names Dramatiq's Redis, else raise saying how to write one."""
    return check_redis_url(
        url, engine="Dramatiq's Redis", form=FORMS[0], option="namespace", default="dramatiq"
    )


def dramatiq_task_id(queue: str, actor: str, message_id: str) -> str:
    """zombietop's id for a Dramatiq message: ``QUEUE/ACTOR/MESSAGE_ID``, each part bounded."""
    return f"{bounded_id(queue)}/{bounded_id(actor)}/{bounded_id(message_id)}"


def died_words(ago: float | None, *, process_lives: bool = False) -> str:
    """What became of a message whose worker is dead to Dramatiq (silent for ``ago`` seconds,
    None: never heard), or whose process is gone, in Dramatiq's terms."""
    if ago is None:
        return f"its worker has no heartbeat in Dramatiq; {REQUEUED_ONLY}"
    if process_lives:
        return (
            f"its worker has been silent for {format_age(ago)}, dead to Dramatiq though its "
            f"process lives; {REQUEUED_ONLY}"
        )
    return f"its worker died {format_age(ago)} ago; {REQUEUED_ONLY}"


class DramatiqSource(RedisSource):
    """Dramatiq's Redis, read-only."""

    extra = "dramatiq"
    needs = "a Dramatiq source"
    clock = "this host's clock (Dramatiq's workers write their own times into Redis)"

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(url, heartbeat_timeout=heartbeat_timeout, clock=clock)
        self.namespace = parse_qs(urlsplit(url).query).get("namespace", ["dramatiq"])[0]
        self._workers: dict[str, tuple[int, ProcessStart]] = {}
        """By worker id, its process on this host."""
        self._looked: dict[str, float] = {}
        """By worker id, when it was last looked for on this host and not found."""
        self._first_held: dict[str, float] = {}
        """By task id, when a poll first saw it held by a worker."""
        self._held: dict[str, SourceRecord] = {}
        """By task id, the held messages of the last poll."""
        self._ended: dict[str, SourceRecord] = {}
        """By task id, the held messages that were acknowledged: succeeded runs."""
        self._dead: dict[str, str | None] = {}
        """By worker id, as this poll found it: see ``_worker_dead``."""
        self._lock = asyncio.Lock()

    def limit_overrides(self, base: Limits) -> dict[str, tuple[float, str]]:
        return {
            **super().limit_overrides(base),
            # How long a process that is gone may wait for the engine to record its end: a
            # Dramatiq worker records nothing once it is gone, and beats at least every second.
            "heartbeat_interval": (
                DRAMATIQ_BEAT_EVERY,
                "Dramatiq: a worker calls its broker at least once a second (worker_timeout)",
            ),
            "lease_ttl": (
                DRAMATIQ_HEARTBEAT_TIMEOUT,
                "Dramatiq: the broker's heartbeat_timeout, after which a worker is dead",
            ),
        }

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        if self._redis is None:
            await self.open()
        async with self._lock:
            try:
                return await self.in_thread(lambda: self._read(since, host))
            except self._errors as exc:
                raise SourceError(f"source {self.name}: cannot read Redis ({exc})") from None

    def _read(self, since: float | None, host: str) -> list[SourceRecord]:
        """One poll, in a thread: the keys, the workers' processes, the records."""
        reads = read_broker(self._redis, self.namespace, since, self._clock.now())
        self._find_workers(reads)
        return self._records(reads, since, host)

    def _find_workers(self, reads: DramatiqReads) -> None:
        """Find on this host the process of each worker that holds a message and beats, once:
        the process that holds the sockets of the connections naming the worker's id."""
        holding = {m.worker for m in reads.messages if m.worker is not None}
        self._workers = {w: p for w, p in self._workers.items() if w in holding}
        self._looked = {w: at for w, at in self._looked.items() if w in holding}
        now = reads.read_at
        wanted = {
            worker
            for worker in holding
            if worker not in self._workers
            and now - reads.beats.get(worker, float("-inf")) < BEAT_FRESH
            and now - self._looked.get(worker, float("-inf")) >= LOOK_AGAIN
        }
        if not wanted:
            return
        mine = os.getpid()
        owners = {a: p for a, p in socket_owners(self.redis_port).items() if p != mine}
        found: dict[str, set[str]] = {}
        if owners:
            try:
                found = beating_connections(self._redis, self.namespace, self.redis_db, wanted)
            except self._errors:
                # MONITOR refused (an ACL, a managed Redis): the messages keep their worker's
                # beat, without a pid; the next try is LOOK_AGAIN later.
                found = {}
        for worker in wanted:
            pids = {owners.get(split_addr(addr) or ("", 0)) for addr in found.get(worker, ())}
            pid = pids.pop() if len(pids) == 1 else None
            start = None if pid is None else read_start(pid)
            if pid is None or start is None:
                self._looked[worker] = now
            else:
                self._workers[worker] = (pid, start)

    def _records(self, reads: DramatiqReads, since: float | None, host: str) -> list[SourceRecord]:
        out: dict[str, SourceRecord] = {}
        held: dict[str, SourceRecord] = {}
        # One answer for each worker: a thousand messages share a few workers.
        workers = {m.worker for m in reads.messages if m.worker is not None}
        self._dead = {worker: self._worker_dead(worker, reads) for worker in workers}
        # A message found twice (requeued between two reads) is taken where it was found first.
        order = {"held": 0, "queued": 1, "delayed": 2, "failed": 3}
        for message in sorted(reads.messages, key=lambda m: order[m.where]):
            record = self._record(message, reads, host)
            zid = record.record.task.task_id
            if zid in out:
                continue
            out[zid] = record
            if record.record.task.state is TaskState.RUNNING:
                held[zid] = record
        for zid, gone in self._held.items():
            if zid not in out:
                self._ended[zid] = _acknowledged(gone, reads.read_at)
        self._held = held
        self._first_held = {zid: self._first_held.get(zid, reads.read_at) for zid in held}
        ended = sorted(self._ended.items(), key=lambda item: -_finished(item[1]))[:SHOWN]
        self._ended = {
            zid: record
            for zid, record in ended
            if zid not in out and (since is None or _finished(record) >= since)
        }
        return [*out.values(), *self._ended.values()]

    def _record(self, message: Message, reads: DramatiqReads, host: str) -> SourceRecord:
        if message.where == "held" and not message.key_queue.endswith(".DQ"):
            return self._held_record(message, reads, host)
        now = reads.read_at
        actor = bounded_id(message.actor or "?")
        state, reason, in_queue = TaskState.QUEUED, None, True
        finished = None
        if message.where == "failed":
            state, finished = TaskState.FAILED, message.failed_at or now
            reason = "dead-lettered by Dramatiq (its error is in its worker's log)"
        elif message.where == "delayed" or message.where == "held":
            in_queue = False
            reason = "delayed in Dramatiq: due at a set time"
            if message.where == "held" and message.worker is not None:
                died = self._dead.get(message.worker)
                if died is not None:
                    in_queue, reason = True, f"delayed, and {died}"
        task = Task(
            task_id=dramatiq_task_id(message.queue, actor, message.message_id),
            run_id=message.message_id,
            step=actor,
            step_type=actor,
            job=actor,
            state=state,
            attempt=message.retries + 1,
            state_reason=reason,
            waits_in_queue=in_queue,
            created_at=message.enqueued or now,
            claimed_at=finished,
            started_at=finished,
            finished_at=finished,
            updated_at=finished or now,
        )
        return SourceRecord(
            record=TaskRecord(task=task, lease=None, heartbeat=None),
            origin=self._origin(message, actor),
        )

    def _held_record(self, message: Message, reads: DramatiqReads, host: str) -> SourceRecord:
        """A message a worker holds: running under the worker's heartbeat."""
        now = reads.read_at
        worker = message.worker or "?"
        actor = bounded_id(message.actor or "?")
        zid = dramatiq_task_id(message.queue, actor, message.message_id)
        started = self._first_held.get(zid, now)
        beat = reads.beats.get(worker)
        died = self._dead.get(worker)
        pid, pid_start = self._workers.get(worker, (None, None))
        task = Task(
            task_id=zid,
            run_id=message.message_id,
            step=actor,
            step_type=actor,
            job=actor,
            state=TaskState.RUNNING,
            attempt=message.retries + 1,
            host=host if pid is not None else None,
            pid=pid,
            pid_start_time=None if pid_start is None else pid_start.time,
            pid_start_identity=None if pid_start is None else pid_start.identity,
            state_reason=died,
            created_at=min(message.enqueued or started, started),
            claimed_at=started,
            started_at=started,
            updated_at=now,
        )
        owner = bounded_id(worker)
        lease = Lease(
            task_id=zid,
            owner=owner,
            token=1,
            acquired_at=started,
            expires_at=now if beat is None else beat + DRAMATIQ_HEARTBEAT_TIMEOUT,
        )
        heartbeat = proof_of_life(zid, beat, started)
        return SourceRecord(
            record=TaskRecord(task=task, lease=lease, heartbeat=heartbeat),
            origin=self._origin(message, actor),
        )

    def _worker_dead(self, worker: str, reads: DramatiqReads) -> str | None:
        """None while the worker lives; else what became of its messages, in words. It is
        dead when Dramatiq would say so (silent past the heartbeat timeout), or when its
        process on this host is gone."""
        beat = reads.beats.get(worker)
        if beat is None:
            return died_words(None)
        ago = max(reads.read_at - beat, 0.0)
        process = self._workers.get(worker)
        lives = process is not None and read_start(process[0]) == process[1]
        if process is not None and not lives:
            return died_words(ago)
        if ago > DRAMATIQ_HEARTBEAT_TIMEOUT:
            return died_words(ago, process_lives=lives)
        return None

    def _origin(self, message: Message, actor: str) -> Origin:
        return self.origin(
            {
                "queue": bounded_id(message.queue),
                "actor": actor,
                "message_id": bounded_id(message.message_id),
                "redis_message_id": bounded_id(message.redis_id),
                "key_queue": bounded_id(message.key_queue),
                "worker": None if message.worker is None else bounded_id(message.worker),
                "state": message.where,
                "namespace": self.namespace,
                "redis": f"{self.redis_host}:{self.redis_port}/{self.redis_db}",
            }
        )

    def kill_check(self, pid: int) -> str | None:
        """None when ``pid`` is a Dramatiq worker process (under the ``dramatiq`` command)
        that holds, right now, a connection to this source's Redis; else what it is."""
        said = engine_child(pid, DRAMATIQ_WORKER)
        if said is not None:
            return said
        try:
            clients = self._redis.client_list() if self._redis is not None else []
        except self._errors as exc:
            return f"cannot read Redis's CLIENT LIST ({exc}): pid {pid} is not shown to be a worker"
        held = process_sockets(pid)
        if any(split_addr(str(client.get("addr") or "")) in held for client in clients):
            return None
        return f"pid {pid} holds no connection to the Redis of {self.name}; nothing signalled"


def _finished(record: SourceRecord) -> float:
    return record.record.task.finished_at or 0.0


def _acknowledged(record: SourceRecord, at: float) -> SourceRecord:
    """A held message gone from every key: its worker acknowledged it, so it succeeded."""
    task = record.record.task
    ended = Task(
        task_id=task.task_id,
        run_id=task.run_id,
        step=task.step,
        step_type=task.step_type,
        job=task.job,
        state=TaskState.SUCCEEDED,
        attempt=task.attempt,
        state_reason=ACKNOWLEDGED,
        created_at=task.created_at,
        claimed_at=task.claimed_at,
        started_at=task.started_at,
        finished_at=at,
        updated_at=at,
    )
    ids = {**record.origin.ids, "state": "acknowledged"}
    origin = Origin(
        source=record.origin.source,
        kind=record.origin.kind,
        capability=record.origin.capability,
        ids=ids,
    )
    return SourceRecord(record=TaskRecord(task=ended, lease=None, heartbeat=None), origin=origin)


def _cli(origin: Origin, script: str, *keys: str) -> str:
    """A ``redis-cli`` line that runs ``script`` on ``keys`` and the message's broker id."""
    ns = str(origin.ids["namespace"])
    host, port, db = _where(origin)
    words = ["redis-cli", "-h", host, "-p", port, "-n", db, "EVAL", script, str(len(keys))]
    words += [f"{ns}:{key}" for key in keys]
    words.append(str(origin.ids["redis_message_id"]))
    return shlex.join(words)


REQUEUE = (
    'if redis.call("srem", KEYS[1], ARGV[1]) == 1 then '
    'return redis.call("rpush", KEYS[2], ARGV[1]) end'
)
"""What Dramatiq's maintenance pass does to one message of a dead worker."""
ACK = (
    'if redis.call("srem", KEYS[1], ARGV[1]) == 1 then '
    'return redis.call("hdel", KEYS[2], ARGV[1]) end'
)
"""What a worker's acknowledgement does."""
DROP_QUEUED = (
    'if redis.call("lrem", KEYS[1], 0, ARGV[1]) > 0 then '
    'return redis.call("hdel", KEYS[2], ARGV[1]) end'
)
DROP_FAILED = 'redis.call("zrem", KEYS[1], ARGV[1]); return redis.call("hdel", KEYS[2], ARGV[1])'


def _resume(origin: Origin) -> str:
    state, queue = origin.ids.get("state"), str(origin.ids["queue"])
    key_queue, worker = str(origin.ids["key_queue"]), str(origin.ids.get("worker"))
    if state == "held":
        acks = f"__acks__.{worker}.{key_queue}"
        return (
            "To run it again once its worker is dead, put it back on its queue as Dramatiq's "
            f"maintenance pass would: {_cli(origin, REQUEUE, acks, key_queue)}"
        )
    if state == "failed":
        ns, url = origin.ids["namespace"], f"redis://{origin.ids['redis']}"
        data = (f"{ns}:{queue}.XQ.msgs", origin.ids["redis_message_id"])
        line = (
            "import dramatiq, redis; from dramatiq.brokers.redis import RedisBroker; "
            f"r = redis.Redis.from_url({_literal(url)}); "
            f"RedisBroker(client=r, namespace={_literal(ns)}).enqueue(dramatiq.Message.decode("
            f"r.hget({_literal(data[0])}, {_literal(data[1])})))"
        )
        return (
            "To run it again, enqueue it again with Dramatiq's broker: "
            f"python -c {shlex.quote(line)}"
        )
    return f"It waits on Dramatiq's queue {queue}: a worker on that queue runs it."


def _discard(origin: Origin) -> str:
    state, queue = origin.ids.get("state"), str(origin.ids["queue"])
    key_queue, worker = str(origin.ids["key_queue"]), str(origin.ids.get("worker"))
    if state == "held":
        acks = f"__acks__.{worker}.{key_queue}"
        line = _cli(origin, ACK, acks, f"{key_queue}.msgs")
        return f"To drop it, acknowledge it as its worker would: {line}"
    if state == "failed":
        line = _cli(origin, DROP_FAILED, f"{queue}.XQ", f"{queue}.XQ.msgs")
        return f"To drop it from the dead letters: {line}"
    line = _cli(origin, DROP_QUEUED, key_queue, f"{key_queue}.msgs")
    return f"To drop it from its queue: {line}"


def _literal(value: object) -> str:
    """A Python string literal in double quotes, so that the shell's single quotes hold it."""
    return json.dumps(str(value))


def _where(origin: Origin) -> tuple[str, str, str]:
    """The host, port and database of the message's Redis (``HOST:PORT/DB``)."""
    address, _, db = str(origin.ids["redis"]).rpartition("/")
    host, _, port = address.rpartition(":")
    return host, port, db


ENGINE = Engine(
    kind="dramatiq",
    name="Dramatiq",
    unit="message",
    schemes=SCHEMES,
    forms=FORMS,
    check_url=check_url,
    make=DramatiqSource,
    heartbeat_timeout=(
        DRAMATIQ_HEARTBEAT_TIMEOUT,
        "Dramatiq: the broker's heartbeat_timeout, after which a worker is dead",
    ),
    actions="requeue or drop it with the redis-cli line shown, or kill its worker",
    task_id=lambda origin: "/".join(
        str(origin.ids[key]) for key in ("queue", "actor", "message_id")
    ),
    resume=_resume,
    discard=_discard,
)
