"""Celery on Redis as a read-only source.

Each poll asks the workers what they hold (``inspect active``, ``reserved`` and ``scheduled``,
with a short timeout, in a thread so the caller's event loop never waits on the network) and
reads the Redis transport's ``unacked`` hash and ``unacked_index``, where a delivered message
waits until it is acknowledged or its visibility timeout passes. Nothing is written to task
state: the keys of the queues and of the transport's bookkeeping are only read. The questions
go over the pidbox with plain Redis commands (``celery_pidbox``), not through kombu: a kombu
channel moves the messages unacknowledged past their visibility timeout back into their queue
whenever it waits for a message, which would hide a lost task. (Like ``celery inspect``, a
question makes its own reply queue on the pidbox exchange for the length of the call.)

- The id is ``QUEUE/TASKNAME/TASK_ID``; the step type is the task name, so
  ``[step_types."tasks.export"]`` sets a task's thresholds.
- An active task is running. Its heartbeat is its worker's last answer: proof that the worker
  lives, not that the task moves (``HeartbeatSource.SUPERVISOR``). A worker that stops
  answering keeps its tasks on screen, as it last listed them, so its heartbeat goes stale
  (stalled); the process probe reads the child (``worker_pid``, checked against
  ``time_start``): gone or reused is dead, stopped by SIGSTOP is stalled, though the worker
  still answers ping. Once the worker has been silent past the heartbeat timeout, a task whose
  child on this host is gone leaves: nothing in Celery holds it (a lost message of
  ``acks_late`` is still read, as below).
- Reserved and scheduled tasks are queued.
- A task id active twice, or active and waiting at once, or marked by Celery's own
  ``delivery_info.redelivered``, is flagged ``redelivered``, with how many deliveries the
  polls saw; its clock runs from its first delivery's start.
- An unacked message that no worker reports is lost: its visibility timeout is its lease, so
  past it the task is reclaimable (the transport gives it to the next worker that asks).

The module declares its engine (``ENGINE``, at the end) for the table in ``registry.py``; the
mapping from the reports to tasks is in ``celery_reports``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import parse_qsl, urlsplit

from zombietop.clock import Clock
from zombietop.durations import format_age
from zombietop.errors import SourceError
from zombietop.locations import printable_url
from zombietop.sources.base import Engine, EngineWorker, Origin, SourceRecord
from zombietop.sources.celery_pidbox import UnreadableReply, ask
from zombietop.sources.celery_reports import (
    ACTIVE,
    RESERVED,
    SCHEDULED,
    Reads,
    Sighting,
    WorkerMemory,
    WorkerSeen,
    celery_task_id,
    records,
    sightings_of,
    unacked_of,
)
from zombietop.sources.engine_text import bounded_id
from zombietop.sources.redis_source import RedisSource
from zombietop.sources.worker_processes import CELERY_CHILD, engine_child

if TYPE_CHECKING:
    from zombietop.thresholds import Limits

T = TypeVar("T")
SCHEMES = ("celery+redis",)
FORMS = ("celery+redis://HOST:PORT/DB",)
OPTIONS = ("visibility_timeout", "inspect_timeout")
"""What the URL's query may set, in seconds (``?visibility_timeout=30``)."""

VISIBILITY_TIMEOUT = 3600.0
"""kombu's default ``visibility_timeout``: set the query to the broker's own when it differs."""
INSPECT_TIMEOUT = 1.0
"""Seconds each poll waits for the workers' answers (``celery inspect`` waits 1 s too)."""
CELERY_HEARTBEAT_TIMEOUT = 30.0
"""Seconds without an answer from a worker before its tasks are stalled, unless the config
says otherwise: many of Celery's 2 s heartbeats, so one slow answer does not page."""
SILENT_WORKER_KEPT = 3600.0
"""Seconds a worker that stopped answering keeps its tasks on screen."""
UNACKED, UNACKED_INDEX = "unacked", "unacked_index"
"""The Redis transport's own key names for delivered, unacknowledged messages."""


def check_url(url: str) -> str:
    """Return ``url`` if it names a Celery broker on Redis, else raise saying how to write one."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in SCHEMES:
        raise SourceError(
            f"source {printable_url(url)!r}: not a Celery broker; use {' or '.join(FORMS)}"
        )
    parts = urlsplit(url)
    db = parts.path.strip("/")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise SourceError(f"source {printable_url(url)!r}: the port is not a number") from None
    if not parts.hostname or (db and not db.isdigit()):
        raise SourceError(
            f"source {printable_url(url)!r}: write {FORMS[0]} (DB is a number, 0 by default)"
        )
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in OPTIONS:
            raise SourceError(
                f"source {printable_url(url)!r}: unknown option {key!r}; "
                f"the options are {', '.join(OPTIONS)} (seconds)"
            )
        try:
            if float(value) <= 0:
                raise ValueError
        except ValueError:
            raise SourceError(
                f"source {printable_url(url)!r}: {key} must be a number of seconds above 0"
            ) from None
    return url


class CelerySource(RedisSource):
    """One Celery broker on Redis, read-only."""

    extra = "celery"
    needs = "a Celery source"
    clock = "this host's clock (Celery's workers write their time() into the reports)"

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(url, heartbeat_timeout=heartbeat_timeout, clock=clock)
        parts = urlsplit(url)
        options = dict(parse_qsl(parts.query))
        self.visibility_timeout = float(options.get("visibility_timeout", VISIBILITY_TIMEOUT))
        self.inspect_timeout = float(options.get("inspect_timeout", INSPECT_TIMEOUT))
        self._memory = WorkerMemory(kept_for=SILENT_WORKER_KEPT)
        self._lock = asyncio.Lock()
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="zombietop-celery")
        self._workers_seen: tuple[EngineWorker, ...] = ()

    async def in_thread(self, call: Callable[[], T]) -> T:
        """Run a blocking call in the source's own threads, where its polls run too."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def close(self) -> None:
        await super().close()
        self._pool.shutdown(wait=False)

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        if self._redis is None:
            await self.open()
        loop = asyncio.get_running_loop()
        async with self._lock:
            reads = await loop.run_in_executor(self._pool, self._read)
            workers = self._memory.update(reads)
            self._workers_seen = tuple(
                self._worker(name, seen, reads.read_at) for name, seen in workers.items()
            )
            local = self.local_names(host)
            return records(
                reads,
                workers,
                visibility_timeout=self.visibility_timeout,
                heartbeat_timeout=self.heartbeat_timeout,
                source=self.name,
                host=host,
                local=local,
                deliveries=self._memory.deliveries,
            )

    def workers(self) -> Sequence[EngineWorker]:
        """The workers that answered in the last hour, as of the last poll (``ListsWorkers``):
        one silent for longer than the heartbeat timeout is gone, with what it last held."""
        return self._workers_seen

    def _worker(self, name: str, seen: WorkerSeen, now: float) -> EngineWorker:
        silent = now - seen.answered_at
        gone = silent > self.heartbeat_timeout
        return EngineWorker(
            name=bounded_id(name),
            kind=self.kind,
            source=self.name,
            # A worker is named NAME@HOST, its host by default.
            host=bounded_id(name.partition("@")[2]) or None,
            pid=None,  # the answers name the pool's children, not the worker's own process
            last_beat=seen.answered_at,
            holds=len(seen.active),
            gone=gone,
            why=f"no answer to zombietop's questions for {format_age(silent)}" if gone else "",
        )

    def _read(self) -> Reads:
        """Ask the workers (the three lists at once), then read the unacked messages.

        Redis is pinged first, so a broker that does not answer fails the poll at once. The
        unacked messages are read after the answers: a task that finishes between the two
        reads is then gone from both, never left as an unacked message that nobody runs.
        """
        read_at = self._clock.now()
        try:
            self._redis.ping()
        except self._errors as exc:
            raise SourceError(f"source {self.name}: cannot read Redis ({exc})") from None
        answered: dict[str, list[Sighting]] = {}
        try:
            asked = ask(
                self._redis,
                self.redis_db,
                (ACTIVE, RESERVED, SCHEDULED),
                timeout=self.inspect_timeout,
            )
        except UnreadableReply as exc:
            raise SourceError(
                f"source {self.name}: cannot read the workers' answers: {exc}"
            ) from None
        except self._errors as exc:
            raise SourceError(
                f"source {self.name}: cannot ask the workers ({type(exc).__name__}: {exc})"
            ) from None
        for listed, answers in asked.items():
            for worker, answer in answers.items():
                answered.setdefault(worker, []).extend(sightings_of(worker, listed, answer))
        try:
            entries = self._redis.hgetall(UNACKED)
            index = dict(self._redis.zrange(UNACKED_INDEX, 0, -1, withscores=True))
        except self._errors as exc:
            raise SourceError(f"source {self.name}: cannot read Redis ({exc})") from None
        return Reads(
            read_at=read_at,
            answered={worker: tuple(found) for worker, found in answered.items()},
            unacked=tuple(unacked_of(entries, index)),
        )

    def limit_overrides(self, base: Limits) -> dict[str, tuple[float, str]]:
        # An unacked message's lease is the transport's visibility timeout.
        lease = (self.visibility_timeout, "Celery: the Redis transport's visibility_timeout")
        return {**super().limit_overrides(base), "lease_ttl": lease}

    def kill_check(self, pid: int) -> str | None:
        """None when ``pid`` is Celery's pool child under its ``celery worker``; else what it
        is (any client of the broker can answer ``inspect active`` with any ``worker_pid``)."""
        return engine_child(pid, CELERY_CHILD)


def _resume(origin: Origin) -> str:
    name = str(origin.ids["task_name"])
    return (
        f"To run it again, use the engine's command: app.send_task({name!r}, ...) "
        "with its arguments"
    )


def _discard(origin: Origin) -> str:
    task_id = origin.ids["task_id"]
    return f"To stop it, use the engine's command: celery -b REDIS_URL control revoke {task_id}"


ENGINE = Engine(
    kind="celery",
    name="Celery",
    schemes=SCHEMES,
    forms=FORMS,
    check_url=check_url,
    make=CelerySource,
    heartbeat_timeout=(
        CELERY_HEARTBEAT_TIMEOUT,
        "Celery: seconds without an answer from the worker",
    ),
    actions="send it again with Celery, revoke it, or kill it",
    task_id=lambda origin: celery_task_id(
        *(str(origin.ids[key]) for key in ("queue", "task_name", "task_id"))
    ),
    resume=_resume,
    discard=_discard,
)
