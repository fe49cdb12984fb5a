"""The store's logic once, over SQL: each backend supplies a connection and a few adapter methods.

A backend (``sqlite``, ``postgres``) opens its connection, migrates its schema,
translates its driver's errors, and answers the adapter: run a named query (``_run``, ``_row``,
``_rows``, ``_run_many``, ``_insert``), give a read context and a write transaction (``_read``,
``_write``), and hold a task's row and read the store's clock (``_hold``, ``_now_in``). Every
write holds the task's row before it reads the clock, so a lease's expiry is judged by a time
taken after any writer ahead of it finished.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, TypeVar

from zombietop.durations import format_age, format_duration
from zombietop.errors import ActionRefused, LeaseHeld, LeaseLost, StoreError, TaskNotFound
from zombietop.fleet import AgentPresence, HostRequest, StoredSample, WatchdogLease
from zombietop.heartbeat_line import BeatLine
from zombietop.identity import real_user
from zombietop.model import (
    Ack,
    Event,
    EventKind,
    Heartbeat,
    HistoryPoint,
    Lease,
    PendingKill,
    PollChanges,
    ProcessSample,
    Silence,
    StepRuns,
    StoredPage,
    Task,
    TaskRecord,
    TaskState,
    WatchdogMemory,
)
from zombietop.start_identity import StartIdentity
from zombietop.store.interface import HISTORY_LIMIT, FinishedKey, PruneBatch, Store
from zombietop.store.poll_cache import (
    _COLUMNS,
    _KILL_COLUMNS,
    HEARTBEAT_COLUMNS,
    REQUEST_COLUMNS,
    TASK_COLUMNS,
    PollCache,
    already_requested,
    record_from_row,
    sample_params,
)

Conn = TypeVar("Conn")
"""The backend's connection (``zombietop.store.sqlite.Connection`` or an asyncpg connection)."""


PRUNED_WITH_A_TASK = (
    "prune_events",
    "prune_heartbeat_history",
    "prune_heartbeats",
    "prune_leases",
    "prune_acks",
    "prune_process_samples",
    "prune_pending_kills",
    "prune_host_requests",
    "prune_tasks",
)
"""What a pruned task takes with it, each a named statement over the batch's ids (the tasks
last, so nothing is left pointing at a task that is gone)."""


class Duplicate(Exception):
    """An insert hit a unique constraint; raised by ``SQLStore._insert``, turned into a refusal."""


# Every task with its lease, latest beat and latest kill: what the poll and record reads select.
TASK_RECORDS = """SELECT {columns}
FROM tasks t
LEFT JOIN leases l ON l.task_id = t.task_id
LEFT JOIN heartbeats h ON h.task_id = t.task_id
LEFT JOIN pending_kills k ON k.kill_id =
    (SELECT max(kill_id) FROM pending_kills WHERE task_id = t.task_id)"""


def fill_columns(sql: str) -> str:
    """Put the shared column lists and joins into a named block's ``{columns}``-style
    placeholders (``{task_records}`` is the joined read of whole task records)."""
    return (
        sql.replace("{task_records}", TASK_RECORDS)
        .replace("{columns}", _COLUMNS)
        .replace("{kill_columns}", _KILL_COLUMNS)
        .replace("{task_columns}", ", ".join(TASK_COLUMNS))
        .replace("{heartbeat_columns}", ", ".join(HEARTBEAT_COLUMNS))
        .replace("{request_columns}", ", ".join(REQUEST_COLUMNS))
    )


def _identity_params(identity: StartIdentity | None) -> dict[str, Any]:
    """The two columns that keep a process's start identity (both NULL without one)."""
    return {
        "pid_boot_id": None if identity is None else identity.boot_id,
        "pid_start_ticks": None if identity is None else identity.ticks,
    }


def _on_store_clock(moment: float | None, reported_at: float | None, now: float) -> float | None:
    """A moment the worker read off its own clock (``req_at``), moved onto the store's by the
    skew its beat shows (``at`` against ``now``), and never after ``now``: a worker whose
    clock is an hour behind must not look an hour into a request, nor one ahead not at all."""
    if moment is None:
        return None
    if reported_at is not None:
        moment -= reported_at - now
    return min(moment, now)


class SQLStore(Store, Generic[Conn]):
    """Every store method, written against the adapter methods each backend implements."""

    def __init__(self) -> None:
        self._poll_cache = PollCache()

    # Adapter -------------------------------------------------------------------------------

    @abc.abstractmethod
    def _read(self) -> AbstractAsyncContextManager[Conn]:
        """Give the connection for reads, one coroutine at a time, errors translated."""

    @abc.abstractmethod
    def _write(self) -> AbstractAsyncContextManager[Conn]:
        """Give the connection inside a write transaction that commits on a clean exit."""

    @abc.abstractmethod
    def _where(self) -> str:
        """Say where the store is (no credentials), for messages."""

    @abc.abstractmethod
    async def _now_in(self, db: Conn) -> float:
        """The store's clock, read inside the current transaction."""

    async def _revision(self, db: Conn) -> tuple[int, int] | None:
        """``(changes, removals)`` when the backend stamps tasks in commit order, so a poll can
        read only what changed; None to read every polled row each time."""
        return None

    @abc.abstractmethod
    async def _hold(self, db: Conn, task_id: str) -> Task | None:
        """Hold the task's row for the rest of the transaction; return it if holding read it."""

    @abc.abstractmethod
    async def _run(self, db: Conn, name: str, params: Mapping[str, Any]) -> int:
        """Run a named statement; return how many rows it changed."""

    @abc.abstractmethod
    async def _row(self, db: Conn, name: str, params: Mapping[str, Any]) -> Any:
        """Run a named query; return its first row or None."""

    @abc.abstractmethod
    async def _rows(self, db: Conn, name: str, params: Mapping[str, Any]) -> Sequence[Any]:
        """Run a named query; return every row."""

    @abc.abstractmethod
    async def _run_many(self, db: Conn, name: str, params: Iterable[Mapping[str, Any]]) -> None:
        """Run a named statement once per set of parameters."""

    @abc.abstractmethod
    async def _insert(self, db: Conn, name: str, params: Mapping[str, Any]) -> Any:
        """Run a named insert, return its RETURNING row (None without one); raise
        ``Duplicate`` on a unique violation and leave the transaction usable."""

    # Shared plumbing -----------------------------------------------------------------------

    def _missing(self, task_id: str) -> TaskNotFound:
        return TaskNotFound(
            f"no task {task_id!r} in store {self._where()}; `zombietop status --all` lists them"
        )

    async def _locked(self, db: Conn, task_id: str) -> tuple[Task, float]:
        """Hold the task's row, then read the store's clock: the order matters (see module)."""
        task = await self._hold(db, task_id) or await self._task_in(db, task_id)
        return task, await self._now_in(db)

    async def _task_in(self, db: Conn, task_id: str) -> Task:
        row = await self._row(db, "select_task", {"task_id": task_id})
        if row is None:
            raise await self._missing_in(db, task_id)
        return Task.from_row(row)

    async def _missing_in(self, db: Conn, task_id: str) -> StoreError:
        """``TaskNotFound``, unless the store is corrupt: then a missing row proves nothing,
        and saying "no task" would send the operator looking in the wrong place."""
        damage = await self._damage(db, task_id)
        if damage is None:
            return self._missing(task_id)
        return StoreError(
            f"store {self._where()} is corrupt ({damage}), so it cannot say whether task "
            f"{task_id!r} exists; restore it from a backup, or move it aside and start afresh"
        )

    async def _damage(self, db: Conn, task_id: str) -> str | None:
        """What is found wrong with the store when ``task_id`` was not found; None if nothing."""
        return None

    async def _lease_in(self, db: Conn, task_id: str) -> Lease | None:
        row = await self._row(db, "select_lease", {"task_id": task_id})
        return None if row is None else Lease.from_row(row)

    async def _event(
        self,
        db: Conn,
        now: float,
        *,
        kind: str,
        actor: str,
        message: str,
        task_id: str | None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        await self._run(
            db,
            "insert_event",
            {
                "now": now,
                "task_id": task_id,
                "kind": str(kind),
                "actor": actor,
                "message": message,
                "data": json.dumps(dict(data or {}), sort_keys=True, default=str),
            },
        )

    async def _fence(self, db: Conn, now: float, task_id: str, owner: str, token: int) -> Lease:
        lease = await self._lease_in(db, task_id)
        if lease is None or lease.owner != owner or lease.token != token:
            holder = (
                "nobody"
                if lease is None or lease.owner is None
                else f"{lease.owner} (token {lease.token})"
            )
            raise LeaseLost(
                f"{owner} (token {token}) no longer owns {task_id}; the lease is held by {holder}"
            )
        if lease.expires_at is None or now > lease.expires_at:
            ago = format_age(now - (lease.expires_at or now))
            raise LeaseLost(f"{owner}'s lease on {task_id} expired {ago} ago; it may be reclaimed")
        return lease

    # Tasks ---------------------------------------------------------------------------------

    async def create_task(
        self,
        *,
        task_id: str,
        run_id: str,
        step: str,
        step_type: str,
        actor: str,
        upstream: Sequence[str] = (),
        command: Sequence[str] = (),
        cwd: str | None = None,
        host: str | None = None,
    ) -> Task:
        if not task_id or not task_id.strip():
            raise StoreError("a task id must not be empty")
        async with self._write() as db:
            now = await self._now_in(db)
            try:
                await self._insert(
                    db,
                    "insert_task",
                    {
                        "task_id": task_id,
                        "run_id": run_id,
                        "step": step,
                        "step_type": step_type,
                        "state": TaskState.QUEUED.value,
                        "upstream": json.dumps(list(upstream)),
                        "host": host,
                        "command": json.dumps(list(command)) if command else None,
                        "cwd": cwd,
                        "now": now,
                    },
                )
            except Duplicate:
                raise StoreError(f"task {task_id!r} already exists in {self._where()}") from None
            await self._event(
                db,
                now,
                kind=EventKind.TASK_CREATED,
                actor=actor,
                task_id=task_id,
                message=f"created {task_id} (run {run_id}, step {step}, type {step_type})",
                data={"upstream": list(upstream)},
            )
            return await self._task_in(db, task_id)

    async def get_task(self, task_id: str) -> Task:
        async with self._read() as db:
            return await self._task_in(db, task_id)

    async def get_record(self, task_id: str) -> TaskRecord:
        async with self._read() as db:
            row = await self._row(db, "select_task_record", {"task_id": task_id})
            if row is None:
                raise await self._missing_in(db, task_id)
        return record_from_row(row)

    async def poll(self, finished_since: float | None) -> list[TaskRecord]:
        cache = self._poll_cache
        async with self._read() as db:
            # The revision is read before the rows: a change committed in between is read
            # again next poll (if not already now), never missed.
            revision = await self._revision(db)
            if finished_since is not None and cache.can_follow(revision, finished_since):
                rows = await self._rows(db, "select_tasks_changed", {"rev": cache.changes})
                return cache.follow(rows, revision, finished_since)
            if finished_since is None:
                rows = await self._rows(db, "select_all_tasks", {})
            else:
                rows = await self._rows(
                    db, "select_tasks_for_poll", {"finished_since": finished_since}
                )
        return cache.reload(rows, revision, finished_since)

    def poll_changes(self) -> PollChanges | None:
        return self._poll_cache.last

    async def set_process(
        self,
        task_id: str,
        *,
        owner: str,
        token: int,
        pid: int,
        pid_start_time: float,
        host: str,
        pid_start_identity: StartIdentity | None = None,
    ) -> None:
        async with self._write() as db:
            await self._hold(db, task_id)
            now = await self._now_in(db)
            await self._fence(db, now, task_id, owner, token)
            await self._run(
                db,
                "set_process",
                {
                    "task_id": task_id,
                    "pid": pid,
                    "pid_start_time": pid_start_time,
                    **_identity_params(pid_start_identity),
                    "host": host,
                    "now": now,
                },
            )

    async def finish_task(
        self,
        task_id: str,
        *,
        owner: str,
        token: int,
        state: TaskState,
        exit_code: int | None = None,
        reason: str | None = None,
        stopped_by: str | None = None,
    ) -> Task:
        if state not in (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.INTERRUPTED):
            raise ValueError(f"finish_task ends in succeeded, failed or interrupted, not {state}")
        async with self._write() as db:
            held = await self._hold(db, task_id)
            now = await self._now_in(db)
            lease = await self._lease_in(db, task_id)
            # Finishing is allowed just past expiry as long as nobody took the lease over:
            # the work is done, and recording that beats leaving a zombie behind.
            if lease is None or lease.owner != owner or lease.token != token:
                raise LeaseLost(
                    f"{owner} (token {token}) no longer owns {task_id}; not recording its end"
                )
            before = held or await self._task_in(db, task_id)
            await self._run(
                db,
                "finish_task",
                {
                    "task_id": task_id,
                    "state": state.value,
                    "exit_code": exit_code,
                    "reason": reason,
                    "finished_at": None if state is TaskState.INTERRUPTED else now,
                    "now": now,
                },
            )
            await self._run(
                db,
                "release_lease",
                {"task_id": task_id, "owner": owner, "token": token, "now": now},
            )
            exit_text = "" if exit_code is None else f" (exit {exit_code})"
            await self._event(
                db,
                now,
                kind=EventKind.STATE_CHANGED,
                actor=owner,
                task_id=task_id,
                message=f"{before.state} -> {state}{exit_text}" + (f": {reason}" if reason else ""),
                data={
                    "from": before.state.value,
                    "to": state.value,
                    "exit_code": exit_code,
                    "stopped_by": stopped_by,
                    "token": token,
                },
            )
            await self._event(
                db,
                now,
                kind=EventKind.LEASE_RELEASED,
                actor=owner,
                task_id=task_id,
                message=f"{owner} released token {token}",
                data={"owner": owner, "token": token},
            )
            return await self._task_in(db, task_id)

    async def set_quarantine(
        self, task_id: str, *, quarantined: bool, actor: str, reason: str | None = None
    ) -> Task:
        async with self._write() as db:
            before, now = await self._locked(db, task_id)
            if before.quarantined == quarantined:
                return before
            await self._run(
                db,
                "set_quarantine",
                {
                    "task_id": task_id,
                    "quarantined_at": now if quarantined else None,
                    "actor": actor if quarantined else None,
                    "reason": reason if quarantined else None,
                    "now": now,
                },
            )
            why = f": {reason}" if reason else ""
            await self._event(
                db,
                now,
                kind=EventKind.QUARANTINED if quarantined else EventKind.UNQUARANTINED,
                actor=actor,
                task_id=task_id,
                message=("quarantined" if quarantined else "released from quarantine") + why,
            )
            return await self._task_in(db, task_id)

    # Leases --------------------------------------------------------------------------------

    async def get_lease(self, task_id: str) -> Lease | None:
        async with self._read() as db:
            return await self._lease_in(db, task_id)

    async def acquire_lease(self, task_id: str, *, owner: str, ttl: float) -> Lease:
        async with self._write() as db:
            task, now = await self._locked(db, task_id)
            if task.state.finished:
                raise LeaseHeld(f"{task_id} is {task.state}; a finished task cannot be leased")
            current = await self._lease_in(db, task_id)
            if current is not None and current.held:
                if current.expired(now):
                    raise LeaseHeld(
                        f"{task_id} is leased to {current.owner} (token {current.token}), expired "
                        f"{format_age(now - (current.expires_at or now))} ago: reclaim it instead"
                    )
                raise LeaseHeld(
                    f"{task_id} is leased to {current.owner} (token {current.token}) for another "
                    f"{format_age((current.expires_at or now) - now)}"
                )
            token = (current.token if current else 0) + 1
            return await self._grant(
                db, now, task_id, owner, token, ttl, EventKind.LEASE_ACQUIRED, None
            )

    async def reclaim_lease(self, task_id: str, *, owner: str, ttl: float) -> Lease:
        async with self._write() as db:
            task, now = await self._locked(db, task_id)
            if task.state.finished:
                raise LeaseHeld(f"{task_id} is {task.state}; a finished task cannot be reclaimed")
            current = await self._lease_in(db, task_id)
            if current is None or not current.held:
                raise LeaseHeld(f"{task_id} has no lease to reclaim: acquire it instead")
            if not current.expired(now):
                raise LeaseHeld(
                    f"{task_id}'s lease (held by {current.owner}, token {current.token}) is "
                    f"live for another {format_age((current.expires_at or now) - now)}; "
                    "it cannot be reclaimed yet"
                )
            return await self._grant(
                db, now, task_id, owner, current.token + 1, ttl, EventKind.LEASE_RECLAIMED, current
            )

    async def _grant(
        self,
        db: Conn,
        now: float,
        task_id: str,
        owner: str,
        token: int,
        ttl: float,
        kind: EventKind,
        previous: Lease | None,
    ) -> Lease:
        expires_at = now + ttl
        await self._run(
            db,
            "upsert_lease",
            {
                "task_id": task_id,
                "owner": owner,
                "token": token,
                "now": now,
                "expires_at": expires_at,
            },
        )
        await self._run(
            db,
            "claim_task",
            {"task_id": task_id, "now": now, "attempt_bump": 1 if previous is not None else 0},
        )
        taken = "" if previous is None else f" from {previous.owner} (token {previous.token})"
        await self._event(
            db,
            now,
            kind=kind,
            actor=owner,
            task_id=task_id,
            message=f"{owner} took token {token}{taken}, expires in {format_age(ttl)}",
            data={
                "owner": owner,
                "token": token,
                "expires_at": expires_at,
                "previous_owner": previous.owner if previous else None,
                "previous_token": previous.token if previous else None,
                "previous_expires_at": previous.expires_at if previous else None,
            },
        )
        return Lease(
            task_id=task_id,
            owner=owner,
            token=token,
            acquired_at=now,
            renewed_at=now,
            expires_at=expires_at,
        )

    async def renew_lease(self, task_id: str, *, owner: str, token: int, ttl: float) -> Lease:
        async with self._write() as db:
            await self._hold(db, task_id)
            now = await self._now_in(db)
            expires_at = now + ttl
            changed = await self._run(
                db,
                "renew_lease",
                {
                    "task_id": task_id,
                    "owner": owner,
                    "token": token,
                    "now": now,
                    "expires_at": expires_at,
                },
            )
            if changed != 1:
                await self._fence(db, now, task_id, owner, token)  # raises with the precise reason
                raise LeaseLost(f"{owner} could not renew {task_id}")
            lease = await self._lease_in(db, task_id)
            assert lease is not None
            await self._event(
                db,
                now,
                kind=EventKind.LEASE_RENEWED,
                actor=owner,
                task_id=task_id,
                message=f"{owner} renewed token {token} until +{format_age(ttl)}",
                data={"owner": owner, "token": token, "expires_at": expires_at},
            )
            return lease

    async def release_lease(self, task_id: str, *, owner: str, token: int) -> None:
        async with self._write() as db:
            await self._hold(db, task_id)
            now = await self._now_in(db)
            changed = await self._run(
                db,
                "release_lease",
                {"task_id": task_id, "owner": owner, "token": token, "now": now},
            )
            if changed != 1:
                raise LeaseLost(
                    f"{owner} (token {token}) does not hold {task_id}; nothing to release"
                )
            await self._event(
                db,
                now,
                kind=EventKind.LEASE_RELEASED,
                actor=owner,
                task_id=task_id,
                message=f"{owner} released token {token}",
                data={"owner": owner, "token": token},
            )

    async def still_owner(self, task_id: str, *, owner: str, token: int) -> bool:
        async with self._read() as db:
            now = await self._now_in(db)
            lease = await self._lease_in(db, task_id)
        return (
            lease is not None
            and lease.owner == owner
            and lease.token == token
            and lease.expires_at is not None
            and now <= lease.expires_at
        )

    # Actions -------------------------------------------------------------------------------

    async def _take_for_action(
        self, db: Conn, task_id: str, expected_token: int | None, verb: str
    ) -> tuple[Task, Lease | None, float]:
        """Hold and re-read the task inside the transaction; refuse if it moved on."""
        task, now = await self._locked(db, task_id)
        lease = await self._lease_in(db, task_id)
        token = None if lease is None else lease.token
        if token != expected_token:
            raise ActionRefused(
                f"task changed since you looked: token {expected_token} is now {token}; "
                f"look again before you {verb} {task_id}"
            )
        if task.state in (TaskState.SUCCEEDED, TaskState.DISCARDED):
            raise ActionRefused(f"{task_id} is {task.state}; there is nothing to {verb}")
        return task, lease, now

    async def _bump_token(
        self, db: Conn, now: float, task_id: str, lease: Lease | None, actor: str
    ) -> Lease:
        token = (0 if lease is None else lease.token) + 1
        await self._run(db, "bump_lease_token", {"task_id": task_id, "token": token, "now": now})
        held = "" if lease is None or lease.owner is None else f" from {lease.owner}"
        await self._event(
            db,
            now,
            kind=EventKind.LEASE_RECLAIMED,
            actor=actor,
            task_id=task_id,
            message=f"{actor} took the lease{held}: token {token - 1} -> {token}, no owner",
            data={
                "token": token,
                "previous_owner": None if lease is None else lease.owner,
                "previous_token": None if lease is None else lease.token,
            },
        )
        return Lease(task_id=task_id, owner=None, token=token, renewed_at=now)

    async def resume_task(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> tuple[Task, Lease]:
        async with self._write() as db:
            before, lease, now = await self._take_for_action(db, task_id, expected_token, "resume")
            new_lease = await self._bump_token(db, now, task_id, lease, actor)
            await self._run(db, "requeue_task", {"task_id": task_id, "reason": reason, "now": now})
            await self._run(db, "delete_heartbeat", {"task_id": task_id})
            why = f": {reason}" if reason else ""
            await self._event(
                db,
                now,
                kind=EventKind.STATE_CHANGED,
                actor=actor,
                task_id=task_id,
                message=f"{before.state} -> queued for attempt {before.attempt + 1}{why}",
                data={
                    "from": before.state.value,
                    "to": TaskState.QUEUED.value,
                    "token": new_lease.token,
                    "checkpoint": before.checkpoint,
                },
            )
            return await self._task_in(db, task_id), new_lease

    async def discard_task(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> tuple[Task, Lease]:
        async with self._write() as db:
            before, lease, now = await self._take_for_action(db, task_id, expected_token, "discard")
            new_lease = await self._bump_token(db, now, task_id, lease, actor)
            await self._run(db, "discard_task", {"task_id": task_id, "reason": reason, "now": now})
            why = f": {reason}" if reason else ""
            await self._event(
                db,
                now,
                kind=EventKind.STATE_CHANGED,
                actor=actor,
                task_id=task_id,
                message=f"{before.state} -> discarded{why}",
                data={
                    "from": before.state.value,
                    "to": TaskState.DISCARDED.value,
                    "token": new_lease.token,
                },
            )
            return await self._task_in(db, task_id), new_lease

    async def open_kill(
        self,
        task_id: str,
        *,
        pid: int,
        pid_start_time: float | None,
        pgid: int | None,
        host: str | None,
        requested_by: str,
        grace: float,
        source: str | None = None,
        pid_start_identity: StartIdentity | None = None,
    ) -> PendingKill:
        async with self._write() as db:
            # A source's task has no row here to hold: the open-kill index alone keeps it to one.
            now = await self._now_in(db) if source else (await self._locked(db, task_id))[1]
            try:
                await self._insert(
                    db,
                    "insert_pending_kill",
                    {
                        "task_id": task_id,
                        "pid": pid,
                        "pid_start_time": pid_start_time,
                        **_identity_params(pid_start_identity),
                        "pgid": pgid,
                        "host": host,
                        "requested_by": requested_by,
                        "now": now,
                        "deadline": now + grace,
                        "source": source,
                    },
                )
            except Duplicate:
                raise ActionRefused(
                    f"{task_id} already has a kill in progress; wait for it or watch it with "
                    f"`zombietop kill {task_id}`"
                ) from None
            row = await self._row(db, "select_open_kill", {"task_id": task_id})
            assert row is not None
            return PendingKill.from_row(row)

    async def get_open_kill(self, task_id: str) -> PendingKill | None:
        async with self._read() as db:
            row = await self._row(db, "select_open_kill", {"task_id": task_id})
        return None if row is None else PendingKill.from_row(row)

    async def open_kills(self, host: str | None) -> list[PendingKill]:
        async with self._read() as db:
            rows = await self._rows(db, "select_open_kills_for_host", {"host": host})
        return [PendingKill.from_row(row) for row in rows]

    async def source_kills(self, since: float | None) -> dict[str, PendingKill]:
        async with self._read() as db:
            rows = await self._rows(db, "select_source_kills", {"since": since})
        return {row["task_id"]: PendingKill.from_row(row) for row in rows}

    async def close_kill(
        self,
        task_id: str,
        *,
        outcome: str,
        actor: str,
        message: str,
        data: Mapping[str, Any] | None = None,
    ) -> PendingKill | None:
        async with self._write() as db:
            await self._hold(db, task_id)
            now = await self._now_in(db)
            # No task, no open kill: another zombietop that closed it first also returns None.
            row = await self._row(db, "select_open_kill", {"task_id": task_id})
            if row is None:
                return None
            await self._run(
                db, "close_pending_kill", {"task_id": task_id, "outcome": outcome, "now": now}
            )
            kill = PendingKill.from_row(row)
            await self._event(
                db,
                now,
                kind=EventKind.ACTION,
                actor=actor,
                task_id=task_id,
                message=message,
                data={
                    "action": "kill",
                    "outcome": outcome,
                    "requested_by": kill.requested_by,
                    "pid": kill.pid,
                    "pgid": kill.pgid,
                    **dict(data or {}),
                },
            )
            return dataclasses.replace(kill, outcome=outcome, finished_at=now)

    # Heartbeats ----------------------------------------------------------------------------

    async def record_heartbeat(
        self,
        task_id: str,
        beat: BeatLine,
        *,
        owner: str | None = None,
        token: int | None = None,
    ) -> Heartbeat:
        async with self._write() as db:
            task, now = await self._locked(db, task_id)
            if task.state.finished:
                raise LeaseLost(f"{task_id} is {task.state}; its heartbeats are no longer recorded")
            if owner is not None and token is not None:
                await self._fence(db, now, task_id, owner, token)
            params = {
                "task_id": task_id,
                "stage": beat.stage,
                "progress": beat.progress,
                "counters": json.dumps(dict(beat.counters), sort_keys=True),
                "checkpoint": beat.checkpoint,
                "eta_s": beat.eta_s,
                "request_name": beat.request,
                "request_at": _on_store_clock(beat.request_at, beat.at, now),
                "trace_id": beat.trace,
                "reported_at": beat.at,
                "now": now,
            }
            row = await self._row(db, "upsert_heartbeat", params)
            seq = int(row[0]) if row else 1
            await self._run(
                db,
                "insert_heartbeat_history",
                {
                    "task_id": task_id,
                    "seq": seq,
                    "now": now,
                    "stage": beat.stage,
                    "progress": beat.progress,
                },
            )
            if seq > HISTORY_LIMIT:
                await self._run(
                    db,
                    "trim_heartbeat_history",
                    {"task_id": task_id, "oldest_dropped": seq - HISTORY_LIMIT},
                )
            await self._run(
                db, "mark_running", {"task_id": task_id, "checkpoint": beat.checkpoint, "now": now}
            )
            stored = await self._row(db, "select_heartbeat", {"task_id": task_id})
            assert stored is not None
            return Heartbeat.from_row(stored)

    async def record_observed_heartbeat(
        self, task_id: str, counters: Mapping[str, float], *, owner: str, token: int
    ) -> Heartbeat:
        async with self._write() as db:
            task, now = await self._locked(db, task_id)
            if task.state.finished:
                raise LeaseLost(f"{task_id} is {task.state}; its heartbeats are no longer recorded")
            await self._fence(db, now, task_id, owner, token)
            params = {
                "task_id": task_id,
                "counters": json.dumps(dict(counters), sort_keys=True),
                "now": now,
            }
            row = await self._row(db, "observe_heartbeat", params)
            assert row is not None
            seq = int(row[0])
            await self._run(
                db,
                "insert_heartbeat_history",
                {"task_id": task_id, "seq": seq, "now": now, "stage": row[1], "progress": row[2]},
            )
            if seq > HISTORY_LIMIT:
                await self._run(
                    db,
                    "trim_heartbeat_history",
                    {"task_id": task_id, "oldest_dropped": seq - HISTORY_LIMIT},
                )
            await self._run(db, "mark_running_observed", {"task_id": task_id, "now": now})
            stored = await self._row(db, "select_heartbeat", {"task_id": task_id})
            assert stored is not None
            return Heartbeat.from_row(stored)

    async def record_heartbeat_error(self, task_id: str, message: str) -> None:
        async with self._write() as db:
            _, now = await self._locked(db, task_id)
            await self._run(
                db, "set_heartbeat_error", {"task_id": task_id, "message": message, "now": now}
            )
            await self._event(
                db,
                now,
                kind=EventKind.HEARTBEAT_REJECTED,
                actor="zombietop",
                task_id=task_id,
                message=message,
            )

    async def heartbeat_history(
        self, task_id: str, limit: int = HISTORY_LIMIT
    ) -> list[HistoryPoint]:
        async with self._read() as db:
            rows = await self._rows(
                db, "select_heartbeat_history", {"task_id": task_id, "limit": limit}
            )
        return [
            HistoryPoint(written_at=row["written_at"], stage=row["stage"], progress=row["progress"])
            for row in reversed(rows)
        ]

    # Events --------------------------------------------------------------------------------

    async def record_event(
        self,
        *,
        kind: str,
        actor: str,
        message: str,
        task_id: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        async with self._write() as db:
            now = await self._now_in(db)
            await self._event(
                db, now, kind=kind, actor=actor, message=message, task_id=task_id, data=data
            )

    async def events(
        self,
        *,
        task_id: str | None = None,
        limit: int = 100,
        before_id: int | None = None,
        kind: str | None = None,
        skip_kind: str | None = None,
    ) -> list[Event]:
        async with self._read() as db:
            rows = await self._rows(
                db,
                "select_events",
                {
                    "task_id": task_id,
                    "limit": limit,
                    "before_id": before_id,
                    "kind": None if kind is None else str(kind),
                    "skip_kind": None if skip_kind is None else str(skip_kind),
                },
            )
        return [Event.from_row(row) for row in rows]

    # The on-call loop ----------------------------------------------------------------------

    async def ack_task(self, task_id: str, *, by: str, reason: str | None, duration: float) -> Ack:
        async with self._write() as db:
            _, now = await self._locked(db, task_id)
            until = now + duration
            await self._run(
                db,
                "upsert_ack",
                {"task_id": task_id, "actor": by, "reason": reason, "now": now, "until_at": until},
            )
            why = f": {reason}" if reason else ""
            await self._event(
                db,
                now,
                kind=EventKind.ACK,
                actor=by,
                task_id=task_id,
                message=f"acked by {by} for {format_age(duration)}{why}",
                data={"action": "ack", "by": by, "reason": reason, "until": until},
            )
            row = await self._row(db, "select_ack", {"task_id": task_id})
        assert row is not None
        return Ack.from_row(row)

    async def unack_task(self, task_id: str, *, by: str, reason: str) -> Ack | None:
        async with self._write() as db:
            _, now = await self._locked(db, task_id)
            row = await self._row(db, "select_ack", {"task_id": task_id})
            if row is None:
                return None
            await self._run(db, "delete_ack", {"task_id": task_id})
            ended = Ack.from_row(row)
            await self._event(
                db,
                now,
                kind=EventKind.ACK,
                actor=by,
                task_id=task_id,
                message=f"ack by {ended.by} ended by {by}: {reason}",
                data={"action": "unack", "by": by, "reason": reason, "acked_by": ended.by},
            )
        return ended

    async def acks(self) -> list[Ack]:
        async with self._read() as db:
            now = await self._now_in(db)
            rows = await self._rows(db, "select_acks", {"now": now})
        return [Ack.from_row(row) for row in rows]

    async def add_silence(
        self, *, matcher: str, pattern: str, by: str, reason: str, duration: float
    ) -> Silence:
        async with self._write() as db:
            now = await self._now_in(db)
            until = now + duration
            row = await self._insert(
                db,
                "insert_silence",
                {
                    "matcher": matcher,
                    "pattern": pattern,
                    "actor": by,
                    "reason": reason,
                    "now": now,
                    "until_at": until,
                },
            )
            assert row is not None
            silence_id = int(row[0])
            await self._event(
                db,
                now,
                kind=EventKind.SILENCE,
                actor=by,
                task_id=None,
                message=f"silence {silence_id} ({matcher} {pattern}) by {by} for "
                f"{format_duration(duration)}: {reason}",
                data={
                    "action": "silence",
                    "silence_id": silence_id,
                    "matcher": matcher,
                    "pattern": pattern,
                    "by": by,
                    "reason": reason,
                    "until": until,
                },
            )
            stored = await self._row(db, "select_silence", {"silence_id": silence_id})
        assert stored is not None
        return Silence.from_row(stored)

    async def end_silence(self, silence_id: int, *, by: str) -> Silence:
        async with self._write() as db:
            now = await self._now_in(db)
            changed = await self._run(
                db, "end_silence", {"silence_id": silence_id, "actor": by, "now": now}
            )
            row = await self._row(db, "select_silence", {"silence_id": silence_id})
            if row is None:
                raise ActionRefused(
                    f"no silence {silence_id} in store {self._where()}; "
                    "`zombietop silences` lists the active ones"
                )
            ended = Silence.from_row(row)
            if changed != 1:
                raise ActionRefused(
                    f"silence {silence_id} ({ended.rule}) has already ended; "
                    "`zombietop silences` lists the active ones"
                )
            await self._event(
                db,
                now,
                kind=EventKind.SILENCE,
                actor=by,
                task_id=None,
                message=f"silence {silence_id} ({ended.rule}) ended by {by}",
                data={"action": "unsilence", "silence_id": silence_id, "by": by},
            )
        return ended

    async def silences(self) -> list[Silence]:
        async with self._read() as db:
            now = await self._now_in(db)
            rows = await self._rows(db, "select_active_silences", {"now": now})
        return [Silence.from_row(row) for row in rows]

    async def step_runs(self, step: str) -> StepRuns:
        async with self._read() as db:
            row = await self._row(db, "select_step_runs", {"step": step})
        if row is None:
            return StepRuns()
        return StepRuns(last_started=row["last_started"], running_since=row["running_since"])

    async def see_schedule(self, *, name: str, step: str, cron: str, tz: str, at: float) -> float:
        key = {"name": name, "step": step, "cron": cron, "tz": tz}
        async with self._write() as db:
            await self._run(db, "insert_schedule_seen", {**key, "first_seen": at})
            row = await self._row(db, "select_schedule_seen", key)
        assert row is not None
        return float(row["first_seen"])

    async def schedule_seen(self, *, name: str, step: str, cron: str, tz: str) -> float | None:
        key = {"name": name, "step": step, "cron": cron, "tz": tz}
        async with self._read() as db:
            row = await self._row(db, "select_schedule_seen", key)
        return None if row is None else float(row["first_seen"])

    # Fleets --------------------------------------------------------------------------------

    async def record_agent_beat(
        self, host: str, *, agent_id: str, pid: int, interval: float, reported_at: float
    ) -> AgentPresence:
        async with self._write() as db:
            now = await self._now_in(db)
            await self._run(
                db,
                "upsert_agent",
                {
                    "host": host,
                    "agent_id": agent_id,
                    "pid": pid,
                    "interval_s": float(interval),
                    "now": now,
                    "reported_at": float(reported_at),
                },
            )
            rows = await self._rows(db, "select_agents", {})
        return next(AgentPresence.from_row(r) for r in rows if r["host"] == host)

    async def stop_agent(self, host: str, *, agent_id: str) -> None:
        async with self._write() as db:
            now = await self._now_in(db)
            await self._run(db, "stop_agent", {"host": host, "agent_id": agent_id, "now": now})

    async def agents(self) -> list[AgentPresence]:
        async with self._read() as db:
            rows = await self._rows(db, "select_agents", {})
        return [AgentPresence.from_row(row) for row in rows]

    async def active_tasks_on(self, host: str) -> list[Task]:
        async with self._read() as db:
            rows = await self._rows(db, "select_active_tasks_on_host", {"host": host})
        return [Task.from_row(row) for row in rows]

    async def record_process_samples(
        self, host: str, samples: Mapping[str, ProcessSample], *, source: str | None = None
    ) -> None:
        if not samples and source is None:
            return
        async with self._write() as db:
            now = await self._now_in(db)
            await self._run_many(
                db,
                "upsert_process_sample",
                [
                    sample_params(task_id, host, sample, now, source)
                    for task_id, sample in samples.items()
                ],
            )
            if source is not None:
                params = {"host": host, "source": source, "now": now}
                await self._run(db, "prune_source_samples", params)

    async def process_samples(self) -> dict[str, StoredSample]:
        async with self._read() as db:
            rows = await self._rows(db, "select_process_samples", {})
        return {row["task_id"]: StoredSample.from_row(row) for row in rows}

    async def request_host_action(
        self,
        *,
        task_id: str,
        host: str,
        kind: str,
        expected_token: int | None,
        actor: str,
        reason: str | None = None,
        source: str | None = None,
    ) -> HostRequest:
        async with self._write() as db:
            now = await self._now_in(db) if source else (await self._locked(db, task_id))[1]
            try:
                row = await self._insert(
                    db,
                    "insert_host_request",
                    {
                        "task_id": task_id,
                        "host": host,
                        "kind": str(kind),
                        "expected_token": expected_token,
                        "actor": actor,
                        "reason": reason,
                        "now": now,
                        # This process's own real uid: the agent decides on it, not on actor.
                        "requester_uid": os.getuid(),
                        "requester": real_user(),
                        "source": source,
                    },
                )
            except Duplicate:
                raise ActionRefused(already_requested(str(kind), task_id, host)) from None
            assert row is not None
            request_id = int(row[0])
            await self._event(
                db,
                now,
                kind=EventKind.ACTION,
                actor=actor,
                task_id=task_id,
                message=f"{kind} requested for the agent on {host}",
                data={
                    "action": str(kind),
                    "outcome": "requested",
                    "host": host,
                    "request_id": request_id,
                    "reason": reason,
                },
            )
            stored = await self._row(db, "select_host_request", {"request_id": request_id})
        assert stored is not None
        return HostRequest.from_row(stored)

    async def get_host_request(self, request_id: int) -> HostRequest:
        async with self._read() as db:
            row = await self._row(db, "select_host_request", {"request_id": request_id})
        if row is None:
            raise StoreError(f"no host request {request_id} in store {self._where()}")
        return HostRequest.from_row(row)

    async def open_host_requests(self, host: str | None = None) -> list[HostRequest]:
        async with self._read() as db:
            rows = await self._rows(db, "select_open_host_requests", {"host": host})
        return [HostRequest.from_row(row) for row in rows]

    async def claim_host_request(self, request_id: int, *, agent_id: str) -> HostRequest | None:
        async with self._write() as db:
            now = await self._now_in(db)
            changed = await self._run(
                db,
                "claim_host_request",
                {"request_id": request_id, "agent_id": agent_id, "now": now},
            )
            if changed != 1:
                return None
            row = await self._row(db, "select_host_request", {"request_id": request_id})
        assert row is not None
        return HostRequest.from_row(row)

    async def finish_host_request(
        self, request_id: int, *, outcome: str, message: str, actor: str
    ) -> HostRequest | None:
        async with self._write() as db:
            now = await self._now_in(db)
            changed = await self._run(
                db,
                "finish_host_request",
                {"request_id": request_id, "outcome": outcome, "message": message, "now": now},
            )
            if changed != 1:
                return None
            row = await self._row(db, "select_host_request", {"request_id": request_id})
            assert row is not None
            done = HostRequest.from_row(row)
            await self._event(
                db,
                now,
                kind=EventKind.ACTION,
                actor=actor,
                task_id=done.task_id,
                message=f"{done.kind} carried out on {done.host}: {outcome}: {message}",
                data={
                    "action": done.kind,
                    "outcome": outcome,
                    "host": done.host,
                    "request_id": request_id,
                    "requested_by": done.actor,
                },
            )
        return done

    # Retention -----------------------------------------------------------------------------

    async def prune_finished(
        self, before: float, *, limit: int, after: FinishedKey | None = None
    ) -> PruneBatch:
        after_at, after_id = after if after is not None else (float("-inf"), "")
        async with self._write() as db:
            now = await self._now_in(db)
            rows = await self._rows(
                db,
                "select_prunable_tasks",
                {
                    "before": before,
                    "after_at": after_at,
                    "after_id": after_id,
                    "now": now,
                    "limit": limit,
                },
            )
            if not rows:
                return PruneBatch(task_ids=(), last=None)
            ids = {"ids": json.dumps([row[0] for row in rows])}
            for name in PRUNED_WITH_A_TASK:
                await self._run(db, name, ids)
        return PruneBatch(
            task_ids=tuple(row[0] for row in rows), last=(float(rows[-1][1]), rows[-1][0])
        )

    async def finished_counts(self, before: float) -> dict[TaskState, int]:
        async with self._read() as db:
            rows = await self._rows(db, "count_finished_before", {"before": before})
        return {TaskState(row[0]): int(row[1]) for row in rows}

    async def finished_page(self, after: FinishedKey, *, limit: int) -> list[TaskRecord]:
        async with self._read() as db:
            rows = await self._rows(
                db,
                "select_finished_page",
                {"after_at": after[0], "after_id": after[1], "limit": limit},
            )
        return [record_from_row(row) for row in rows]

    # The watchdog's own lease and its undelivered pages ------------------------------------

    async def hold_watchdog_lease(
        self, *, owner: str, host: str, pid: int, ttl: float
    ) -> WatchdogLease:
        async with self._write() as db:
            now = await self._now_in(db)
            params = {
                "owner": owner,
                "host": host,
                "pid": pid,
                "now": now,
                "expires_at": now + ttl,
            }
            await self._run(db, "insert_watchdog_lease", params)
            row = await self._row(db, "hold_watchdog_lease_row", {})
            assert row is not None
            held = WatchdogLease.from_row(row)
            if held.owner == owner:
                await self._run(db, "renew_watchdog_lease", params)
            elif held.owner != owner and held.expires_at < now:
                await self._run(db, "take_watchdog_lease", params)
            else:
                return held
            row = await self._row(db, "select_watchdog_lease", {})
            assert row is not None
            return WatchdogLease.from_row(row)

    async def release_watchdog_lease(self, *, owner: str) -> None:
        async with self._write() as db:
            await self._run(db, "release_watchdog_lease", {"owner": owner})

    async def watchdog_lease(self) -> WatchdogLease | None:
        async with self._read() as db:
            row = await self._row(db, "select_watchdog_lease", {})
        return None if row is None else WatchdogLease.from_row(row)

    async def keep_page(
        self,
        *,
        notifier: str,
        kind: str,
        line: str,
        task_id: str | None,
        health: str | None,
        page_at: float,
        attempts: int,
        next_at: float,
    ) -> int:
        async with self._write() as db:
            row = await self._row(
                db,
                "insert_pending_page",
                {
                    "notifier": notifier,
                    "kind": kind,
                    "line": line,
                    "task_id": task_id,
                    "health": health,
                    "page_at": page_at,
                    "attempts": attempts,
                    "next_at": next_at,
                },
            )
        assert row is not None
        return int(row[0])

    async def pending_pages(self) -> list[StoredPage]:
        async with self._read() as db:
            rows = await self._rows(db, "select_pending_pages", {})
        return [StoredPage.from_row(row) for row in rows]

    async def retry_page(self, page_id: int, *, attempts: int, next_at: float) -> None:
        async with self._write() as db:
            await self._run(
                db,
                "update_pending_page",
                {"page_id": page_id, "attempts": attempts, "next_at": next_at},
            )

    async def drop_page(self, page_id: int) -> None:
        async with self._write() as db:
            await self._run(db, "delete_pending_page", {"page_id": page_id})

    async def watchdog_memory(self) -> WatchdogMemory:
        async with self._read() as db:
            events = await self._rows(db, "select_open_incident_events", {})
            keys = await self._rows(db, "select_watchdog_keys", {})
            digest = await self._row(db, "select_last_watchdog_digest", {})
        return WatchdogMemory(
            open_events=[Event.from_row(row) for row in events],
            keys=frozenset(str(row["key"]) for row in keys),
            last_digest_at=None if digest is None or digest["at"] is None else float(digest["at"]),
        )
