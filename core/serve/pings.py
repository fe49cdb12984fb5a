"""What a ping does to the store: a start opens a run of the job, a beat records a heartbeat
of it, an end (success, fail, an exit status) finishes it, a log adds to its output.

A run reported over HTTP has no process to probe: its lease is held by ``http@<host>`` for the
job's ``lease_ttl`` and renewed by each beat, so a job that stops pinging is found as a run
whose lease expired, exactly as a run whose wrapper died. ``?rid=`` names the run (its task id
is ``<job>/<rid>``) so overlapping runs are told apart; without it a ping speaks for the job's
newest open run. The lease's owner and token are read back from the store at each ping, so a
restart of ``serve`` loses nothing. A ping touches only the runs pings opened (their lease is
held by ``http@...``): any other run, a ``zombietop run --job`` one above all, is answered as
an unknown job.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, cast

from zombietop.config import Config
from zombietop.errors import LeaseError, StoreError, TaskNotFound, ZombietopError
from zombietop.heartbeat_line import BeatLine, format_timestamp
from zombietop.model import HTTP_OWNER, EventKind, Task, TaskState
from zombietop.output import private_output_path
from zombietop.private import open_read, replace_file
from zombietop.run.claim import Claim, owner_name
from zombietop.run.job_runs import claim_run
from zombietop.serve.rate import RateLimit
from zombietop.store import Store, location_of

REPORTED_OVER_HTTP = "reported over HTTP"
RID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
"""A run id a ping may name: a UUID, or any short word of letters, digits, ``.``, ``_``, ``-``."""
VIA = "http"
"""The ``via`` of a ping event and of ``status --json``'s ``pings``."""
PINGS_READ = 1000
"""How many of the latest ping events ``last_pings`` reads to find each job's latest."""
NEW_JOBS_PER_MINUTE = 60
"""Jobs that pings may create (``?create=1``) in any minute, every job together: a leaked key
cannot fill the store with names."""
OPEN_RUNS_LOOKED_AT = 50
"""How many of a job's newest runs are searched for its open one."""
SAME_START = 30.0
"""Seconds after a start in which another start of the job (no ``rid``) is the same start sent
again, by a client that timed out waiting for the answer and retried: it opens no new run.
Shorter than the shortest cron interval, one minute."""


class Ping(StrEnum):
    """What one ping says of its job's run."""

    START = "start"
    """A run begins: it opens a new run of the job (the same start sent again opens none)."""
    SUCCESS = "success"
    """The run succeeded (a run opened now if none was open)."""
    FAIL = "fail"
    """The run failed."""
    LOG = "log"
    """The body is added to the open run's output; nothing else changes."""
    BEAT = "beat"
    """A heartbeat of the open run: the body's last line, or the query's fields; renews its
    lease."""
    EXIT = "exit"
    """The run ended with this exit status: 0 succeeded, any other failed."""


class UnknownJob(ZombietopError):
    """The job has never run and the ping did not ask to create it."""


class TooLate(ZombietopError):
    """The ping was given up before it changed anything: its client left, or its time to
    answer was running out (the store was locked or busy)."""


class TooManyJobs(ZombietopError):
    """Over ``NEW_JOBS_PER_MINUTE`` jobs were created by pings in the last minute."""


@dataclass(frozen=True, slots=True)
class Gate:
    """When a ping may still start to write: before ``write_by`` (the loop's time) and while
    its client is still there (``gone`` not set). Past that it changes nothing. A ping whose
    first write still waits for the store at ``answer_by``, or when its client leaves, is
    cancelled: the store rolls that write back."""

    write_by: float | None = None
    answer_by: float | None = None
    gone: asyncio.Event | None = None

    def check(self) -> None:
        if self.gone is not None and self.gone.is_set():
            raise TooLate("the client left before the ping was applied")
        if self.write_by is not None and asyncio.get_running_loop().time() >= self.write_by:
            raise TooLate("the store was too slow to apply the ping in time")


@dataclass(frozen=True, slots=True, kw_only=True)
class PingResult:
    task_id: str
    state: TaskState


@dataclass(frozen=True, slots=True, kw_only=True)
class _Said:
    """What one ping says: its job, its kind and what came with it."""

    job: str
    kind: Ping
    rid: str | None
    create: bool
    body: bytes
    exit_code: int | None
    beat: BeatLine | None


class _CountedWrites:
    """``store`` (as ``.store``), counting the writes done through it: until the first is done,
    cancelling a ping changes nothing (a write cancelled while it waits is rolled back)."""

    WRITES = frozenset(
        {
            *("create_task", "acquire_lease", "reclaim_lease", "renew_lease"),
            *("record_heartbeat", "finish_task", "record_event"),
        }
    )

    def __init__(self, store: Store) -> None:
        self._store = store
        self.done = 0
        self.store = cast(Store, self)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if name not in self.WRITES:
            return found

        async def counted(*args: Any, **kwargs: Any) -> Any:
            result = await found(*args, **kwargs)
            self.done += 1
            return result

        return counted


class PingBook:
    """Apply pings to the store for the jobs of ``config``."""

    def __init__(
        self,
        store: Store,
        config: Config,
        *,
        host: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.config = config
        self.owner = owner_name(HTTP_OWNER, host)
        self.host = host
        self._lock = asyncio.Lock()
        """One ping at a time changes the store: a start and its end never race."""
        self._new_jobs = RateLimit(NEW_JOBS_PER_MINUTE, clock, max_jobs=1)
        self._writes = _CountedWrites(store)
        """The writes of the ping that holds the lock."""

    async def known(self, job: str) -> bool:
        """A job is known once it has a run, a ``[step_types]`` entry or a schedule."""
        if job in self.config.step_types or any(s.step == job for s in self.config.schedules):
            return True
        return bool(await self.store.job_runs(job, 1))

    async def ping(
        self,
        job: str,
        kind: Ping,
        *,
        rid: str | None,
        create: bool,
        body: bytes,
        exit_code: int | None = None,
        beat: BeatLine | None = None,
        gate: Gate = Gate(),
    ) -> PingResult | None:
        """Apply one ping; None for a log with no open run. Raise ``UnknownJob``, or
        ``TooLate`` when ``gate`` closed before the ping's first write was done: once one is
        done, a ping is applied whole."""
        writes = _CountedWrites(self.store)
        said = _Said(
            job=job, kind=kind, rid=rid, create=create, body=body, exit_code=exit_code, beat=beat
        )
        work = asyncio.ensure_future(self._locked(writes, said, gate))
        gone = asyncio.ensure_future(gate.gone.wait()) if gate.gone is not None else None
        try:
            loop = asyncio.get_running_loop()
            timeout = None if gate.answer_by is None else max(0.0, gate.answer_by - loop.time())
            waits: set[asyncio.Future[Any]] = {work} if gone is None else {work, gone}
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if not work.done() and not writes.done:
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work
                if work.cancelled():
                    raise TooLate("the ping was given up while it waited for the store")
            return await work
        finally:
            if gone is not None:
                gone.cancel()

    async def _locked(self, writes: _CountedWrites, said: _Said, gate: Gate) -> PingResult | None:
        try:
            async with asyncio.timeout_at(gate.write_by):
                await self._lock.acquire()
        except TimeoutError:
            raise TooLate("other pings held the store for too long") from None
        self._writes = writes
        try:
            result = await self._apply(said, gate)
            # The event names the job and what it said, never the URL: that holds the key.
            what = f"/{said.exit_code}" if said.kind is Ping.EXIT else str(said.kind)
            await self._writes.store.record_event(
                kind=EventKind.PING,
                actor=self.owner,
                message=f"{what} of {said.job} over HTTP",
                task_id=None if result is None else result.task_id,
                data={"job": said.job, "ping": what, "via": VIA},
            )
            return result
        finally:
            self._lock.release()

    async def _apply(self, said: _Said, gate: Gate) -> PingResult | None:
        job, kind, rid, body = said.job, said.kind, said.rid, said.body
        if not await self.known(job):
            if not said.create:
                raise UnknownJob(job)
            if not self._new_jobs.allow(""):
                raise TooManyJobs(f"over {NEW_JOBS_PER_MINUTE} new jobs a minute")
        task = await self._open_run(job, rid)
        again = False
        if kind is Ping.START and task is not None:
            again = rid is not None or await self._new(task)
        gate.check()  # only reads so far: giving up here changes nothing
        if kind is Ping.LOG:
            if task is None:
                return None
            await self._keep_output(task, body)
            return PingResult(task_id=task.task_id, state=task.state)
        # A start sent again (a client's retry after a timeout) is the same run: no claim.
        if task is None or (kind is Ping.START and not again):
            if task is not None and rid is None:
                # A start without a rid while a run is open: that run ended unreported.
                # The new one takes its place, as healthchecks restarts its timer.
                await self._finish(task, TaskState.FAILED, None, "started again over HTTP")
            claim = await self._claim(job, rid)
            task = claim.task
        if body:
            await self._keep_output(task, body)
        if kind is Ping.START:
            return PingResult(task_id=task.task_id, state=task.state)
        if kind is Ping.BEAT:
            return await self._beat(task, said.beat or BeatLine())
        if kind is Ping.SUCCESS or (kind is Ping.EXIT and said.exit_code == 0):
            ended = await self._finish(task, TaskState.SUCCEEDED, 0, None)
        else:
            reason = f"exit status {said.exit_code}" if said.exit_code is not None else "failed"
            ended = await self._finish(
                task, TaskState.FAILED, said.exit_code, f"{reason} {REPORTED_OVER_HTTP}"
            )
        return PingResult(task_id=ended.task_id, state=ended.state)

    async def _open_run(self, job: str, rid: str | None) -> Task | None:
        if rid is not None:
            try:
                task = await self.store.get_task(f"{job}/{rid}")
            except TaskNotFound:
                return None
            lease = await self.store.get_lease(task.task_id)
            if task.state.executing and lease is not None and lease.over_http:
                return task
            # A run that pings did not open (a `zombietop run --job`, whose id is easy to
            # guess), or one that has ended: a ping may not touch it, and may not learn that
            # it exists either.
            raise UnknownJob(job)
        for task in await self.store.job_runs(job, OPEN_RUNS_LOOKED_AT):
            if task.state.executing:
                lease = await self.store.get_lease(task.task_id)
                if lease is not None and lease.over_http:
                    return task
        return None

    async def _new(self, task: Task) -> bool:
        """True when the run started less than ``SAME_START`` seconds ago."""
        lease = await self.store.get_lease(task.task_id)
        if lease is None or lease.acquired_at is None:
            return False
        return await self.store.now() - lease.acquired_at < SAME_START

    async def _claim(self, job: str, rid: str | None) -> Claim:
        ttl = self.config.limits_for(job).lease_ttl
        try:
            return await claim_run(
                self._writes.store, job=job, owner=self.owner, ttl=ttl, run=rid, host=None
            )
        except LeaseError as exc:
            raise StoreError(f"cannot start a run of {job}: {exc}") from None

    async def _lease(self, task: Task) -> tuple[str, int]:
        lease = await self.store.get_lease(task.task_id)
        if lease is None or not lease.over_http or lease.owner is None:
            raise StoreError(f"{task.task_id} is not a run reported over HTTP")
        return lease.owner, lease.token

    async def _beat(self, task: Task, beat: BeatLine) -> PingResult:
        owner, token = await self._lease(task)
        ttl = self.config.limits_for(task.step_type).lease_ttl
        await self._writes.store.renew_lease(task.task_id, owner=owner, token=token, ttl=ttl)
        await self._writes.store.record_heartbeat(task.task_id, beat, owner=owner, token=token)
        return PingResult(task_id=task.task_id, state=TaskState.RUNNING)

    async def _finish(
        self, task: Task, state: TaskState, exit_code: int | None, reason: str | None
    ) -> Task:
        owner, token = await self._lease(task)
        return await self._writes.store.finish_task(
            task.task_id, owner=owner, token=token, state=state, exit_code=exit_code, reason=reason
        )

    async def _keep_output(self, task: Task, body: bytes) -> None:
        where = location_of(self.store)
        if where is None:
            return
        path = private_output_path(where, task.task_id, task.attempt)
        self._writes.done += 1  # a file written on a thread: no cancelling it half-way
        await asyncio.to_thread(_append_tail, path, body, self.config.serve.body_limit)


def _append_tail(path: Path, body: bytes, limit: int) -> None:
    """Add ``body`` to the output in ``path``, keeping its last ``limit`` bytes."""
    before = b""
    try:
        with open(open_read(path), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - limit))
            before = handle.read(limit)
    except FileNotFoundError:
        pass
    data = before + body
    if before and not before.endswith(b"\n"):
        data = before + b"\n" + body
    replace_file(path, data[-limit:])


async def last_pings(store: Store) -> list[dict[str, Any]]:
    """Each job's latest ping over HTTP, newest first, as ``status --json`` shows it."""
    seen: dict[str, dict[str, Any]] = {}
    for event in await store.events(kind=EventKind.PING, limit=PINGS_READ):
        job = event.data.get("job")
        if isinstance(job, str) and job not in seen:
            seen[job] = {
                "job": job,
                "ping": event.data.get("ping"),
                "task_id": event.task_id,
                "at": format_timestamp(event.at),
                "via": event.data.get("via", VIA),
            }
    return list(seen.values())
