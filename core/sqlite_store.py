"""The SQLite store: WAL, busy timeout, ``BEGIN IMMEDIATE`` for every write, schema migrated on open."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiosqlite

from core import queries
from core.clock import Clock, SystemClock
from core.durations import format_age
from core.errors import (
    ActionRefused,
    LeaseHeld,
    LeaseLost,
    ReadOnlyStore,
    StoreBusy,
    StoreError,
    StoreMissing,
    TaskNotFound,
)
from core.heartbeat_line import BeatLine
from core.model import (
    Event,
    EventKind,
    Heartbeat,
    HistoryPoint,
    Lease,
    PendingKill,
    Task,
    TaskRecord,
    TaskState,
)
from core.store import HISTORY_LIMIT, Store

SQL = queries.load("sqlite")
APPLICATION_ID = 0x5A4F4D42  # "ZOMB": marks a SQLite file as a zombietop store.
MIGRATIONS = (SQL["schema_v1"], SQL["schema_v2"])
SCHEMA_VERSION = len(MIGRATIONS)
BUSY_TIMEOUT_MS = 5000
BEGIN_RETRIES = 4

TASK_COLUMNS = (
    "task_id run_id step step_type state attempt upstream host pid pid_start_time command cwd "
    "checkpoint exit_code state_reason heartbeat_error heartbeat_error_at quarantined_at "
    "quarantined_by quarantine_reason created_at claimed_at started_at finished_at updated_at"
).split()
LEASE_COLUMNS = "task_id owner token acquired_at renewed_at expires_at".split()
HEARTBEAT_COLUMNS = (
    "task_id stage progress counters checkpoint eta_s request_name request_started_at trace_id "
    "reported_at written_at progress_changed_at stage_started_at seq"
).split()
KILL_COLUMNS = (
    "task_id pid pid_start_time pgid host requested_by term_sent_at deadline outcome finished_at"
).split()
_COLUMNS = ", ".join(
    [f"t.{c}" for c in TASK_COLUMNS]
    + [f"l.{c} AS l_{c}" for c in LEASE_COLUMNS]
    + [f"h.{c} AS h_{c}" for c in HEARTBEAT_COLUMNS]
    + [f"k.{c} AS k_{c}" for c in KILL_COLUMNS]
)
_KILL_COLUMNS = ", ".join(f"k.{c}" for c in KILL_COLUMNS)
POLL_SQL = SQL["select_tasks_for_poll"].replace("{columns}", _COLUMNS)
ALL_SQL = SQL["select_all_tasks"].replace("{columns}", _COLUMNS)
RECORD_SQL = SQL["select_task_record"].replace("{columns}", _COLUMNS)
OPEN_KILL_SQL = SQL["select_open_kill"].replace("{kill_columns}", _KILL_COLUMNS)
HOST_KILLS_SQL = SQL["select_open_kills_for_host"].replace("{kill_columns}", _KILL_COLUMNS)


_T = len(TASK_COLUMNS)
_L = _T + len(LEASE_COLUMNS)
_H = _L + len(HEARTBEAT_COLUMNS)


def record_from_row(row: sqlite3.Row) -> TaskRecord:
    """Split one joined poll row into its task, lease, heartbeat and pending kill."""
    return record_from_values(tuple(row))


def record_from_values(values: tuple[Any, ...]) -> TaskRecord:
    # Slicing and zipping names run in C; this runs for every changed row of every poll.
    lease = beat = kill = None
    if values[_T] is not None:
        lease = Lease.from_row(dict(zip(LEASE_COLUMNS, values[_T:_L], strict=True)))
    if values[_L] is not None:
        beat = Heartbeat.from_row(dict(zip(HEARTBEAT_COLUMNS, values[_L:_H], strict=True)))
    if values[_H] is not None:
        kill = PendingKill.from_row(dict(zip(KILL_COLUMNS, values[_H:], strict=True)))
    task = Task.from_row(dict(zip(TASK_COLUMNS, values[:_T], strict=True)))
    return TaskRecord(task=task, lease=lease, heartbeat=beat, pending_kill=kill)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


class SQLiteStore(Store):
    """A store in one SQLite file (created 0600), shared by every process on the host."""

    def __init__(self, db: aiosqlite.Connection, path: Path, clock: Clock, read_only: bool) -> None:
        self._db = db
        self.path = path
        self._clock = clock
        self.read_only = read_only
        # One connection, one transaction at a time: coroutines sharing this store queue here.
        self._lock = asyncio.Lock()
        # Poll rows by task id as last read: an unchanged row reuses its records (most rows,
        # most polls), so a poll costs what changed rather than what exists.
        self._poll_cache: dict[str, tuple[tuple[Any, ...], TaskRecord]] = {}

    # Opening -------------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        read_only: bool = False,
        create: bool = False,
        clock: Clock | None = None,
    ) -> SQLiteStore:
        path = path.expanduser()
        if not path.exists():
            if not create or read_only:
                raise StoreMissing(
                    f"no store at {path}: start a job with `zombietop run`, create one with "
                    "`zombietop init`, or point --db / ZOMBIETOP_DB at an existing store"
                )
            _create_private_file(path)
        if path.is_dir():
            raise StoreError(f"{path} is a directory, not a store file; pass the file with --db")
        target = f"file:{quote(str(path))}?mode=ro" if read_only else str(path)
        try:
            db = await aiosqlite.connect(target, uri=read_only, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {path}: {exc}") from None
        db.row_factory = sqlite3.Row
        store = cls(db, path, clock or SystemClock(), read_only)
        try:
            await store._prepare()
        except BaseException:
            await db.close()
            raise
        return store

    async def _prepare(self) -> None:
        with self._translate():
            await self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # Reading the header is what notices a file that is not a database at all.
            async with self._db.execute("PRAGMA application_id") as cursor:
                row = await cursor.fetchone()
            app_id = row[0] if row else 0
            async with self._db.execute("PRAGMA user_version") as cursor:
                row = await cursor.fetchone()
            version = row[0] if row else 0
            async with self._db.execute("SELECT count(*) FROM sqlite_master") as cursor:
                row = await cursor.fetchone()
            has_tables = bool(row and row[0])
        if app_id != APPLICATION_ID and (has_tables or app_id != 0):
            raise StoreError(
                f"{self.path} is a SQLite database but not a zombietop store; "
                "pass the right file with --db or move this one aside"
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} uses store schema v{version}, newer than this zombietop "
                f"(v{SCHEMA_VERSION}); upgrade zombietop"
            )
        if self.read_only:
            if version < SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} needs a schema upgrade (v{version} -> v{SCHEMA_VERSION}); "
                    "open it once without --read-only"
                )
            return
        with self._translate():
            await self._db.execute("PRAGMA journal_mode = WAL")
            await self._db.execute("PRAGMA synchronous = NORMAL")
            await self._db.execute("PRAGMA foreign_keys = ON")
        if version < SCHEMA_VERSION:
            await self._migrate()

    async def _migrate(self) -> None:
        async with self._write() as db:
            async with db.execute("PRAGMA user_version") as cursor:
                row = await cursor.fetchone()
            version = row[0] if row else 0
            for number in range(version, SCHEMA_VERSION):
                for statement in _statements(MIGRATIONS[number]):
                    await db.execute(statement)
            await db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            await db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def describe(self) -> str:
        return str(self.path) + (" (read-only)" if self.read_only else "")

    async def close(self) -> None:
        with contextlib.suppress(ValueError, sqlite3.Error):
            await self._db.close()

    async def now(self) -> float:
        return self._clock.now()

    # Plumbing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _translate(self) -> Any:
        """Turn sqlite3 and aiosqlite errors into ``StoreError`` subclasses that say what to do."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise StoreBusy(
                    f"store {self.path} stayed locked by another writer for over "
                    f"{BUSY_TIMEOUT_MS // 1000}s; retry, or find the process holding it "
                    f"(fuser {self.path})"
                ) from None
            if "readonly" in str(exc):
                raise ReadOnlyStore(f"store {self.describe()} cannot be written: {exc}") from None
            raise StoreError(f"store {self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path} is not a readable zombietop store ({exc}); "
                "move it aside and let zombietop create a new one, or pass --db"
            ) from None
        except ValueError as exc:
            # aiosqlite raises a bare ValueError once its connection is closed.
            if "closed" in str(exc) or "no active connection" in str(exc):
                raise StoreError(f"store {self.path} is closed") from None
            raise

    @contextlib.asynccontextmanager
    async def _read(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            with self._translate():
                yield self._db

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: the write lock is taken up front, so
        busy_timeout applies (a deferred transaction that upgrades fails at once)."""
        if self.read_only:
            raise ReadOnlyStore(
                f"store {self.describe()} is open read-only; this needs a writable store"
            )
        async with self._lock:
            with self._translate():
                for attempt in range(BEGIN_RETRIES):
                    try:
                        await self._db.execute("BEGIN IMMEDIATE")
                        break
                    except sqlite3.OperationalError as exc:
                        if not _is_busy(exc) or attempt == BEGIN_RETRIES - 1:
                            raise
                        await asyncio.sleep(0.05 * 2**attempt)
                    except BaseException:
                        # Cancelled while BEGIN ran on aiosqlite's thread: it may have started
                        # a transaction that would poison every later write on this connection.
                        with contextlib.suppress(sqlite3.Error, ValueError):
                            await self._db.execute("ROLLBACK")
                        raise
                try:
                    yield self._db
                except BaseException:
                    with contextlib.suppress(sqlite3.Error, ValueError):
                        await self._db.execute("ROLLBACK")
                    raise
                else:
                    await self._db.execute("COMMIT")

    async def _event(
        self,
        db: aiosqlite.Connection,
        now: float,
        *,
        kind: str,
        actor: str,
        message: str,
        task_id: str | None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        await db.execute(
            SQL["insert_event"],
            {
                "now": now,
                "task_id": task_id,
                "kind": str(kind),
                "actor": actor,
                "message": message,
                "data": json.dumps(dict(data or {}), sort_keys=True, default=str),
            },
        )

    async def _task_in(self, db: aiosqlite.Connection, task_id: str) -> Task:
        async with db.execute(
            f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks WHERE task_id = ?", (task_id,)
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            raise TaskNotFound(f"no task {task_id!r} in store {self.path}; `zombietop status --all` lists them")
        return Task.from_row(row)

    async def _lease_in(self, db: aiosqlite.Connection, task_id: str) -> Lease | None:
        async with db.execute(SQL["select_lease"], {"task_id": task_id}) as cursor:
            row = await cursor.fetchone()
        return None if row is None else Lease.from_row(row)

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
            now = self._clock.now()
            try:
                await db.execute(
                    SQL["insert_task"],
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
            except sqlite3.IntegrityError:
                raise StoreError(f"task {task_id!r} already exists in {self.path}") from None
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
            async with db.execute(RECORD_SQL, {"task_id": task_id}) as cursor:
                row = await cursor.fetchone()
        if row is None:
            raise TaskNotFound(f"no task {task_id!r} in store {self.path}; `zombietop status --all` lists them")
        return record_from_row(row)

    async def poll(self, finished_since: float | None) -> list[TaskRecord]:
        async with self._read() as db:
            if finished_since is None:
                rows = await db.execute_fetchall(ALL_SQL)
            else:
                rows = await db.execute_fetchall(POLL_SQL, {"finished_since": finished_since})
        cache = self._poll_cache
        fresh: dict[str, tuple[tuple[Any, ...], TaskRecord]] = {}
        records = []
        for row in rows:
            values = tuple(row)
            seen = cache.get(values[0])
            record = seen[1] if seen is not None and seen[0] == values else record_from_values(values)
            fresh[values[0]] = (values, record)
            records.append(record)
        self._poll_cache = fresh
        return records

    async def _fence(
        self, db: aiosqlite.Connection, now: float, task_id: str, owner: str, token: int
    ) -> Lease:
        lease = await self._lease_in(db, task_id)
        if lease is None or lease.owner != owner or lease.token != token:
            holder = "nobody" if lease is None or lease.owner is None else f"{lease.owner} (token {lease.token})"
            raise LeaseLost(
                f"{owner} (token {token}) no longer owns {task_id}; the lease is held by {holder}"
            )
        if lease.expires_at is None or now > lease.expires_at:
            ago = format_age(now - (lease.expires_at or now))
            raise LeaseLost(f"{owner}'s lease on {task_id} expired {ago} ago; it may be reclaimed")
        return lease

    async def set_process(
        self, task_id: str, *, owner: str, token: int, pid: int, pid_start_time: float, host: str
    ) -> None:
        async with self._write() as db:
            now = self._clock.now()
            await self._fence(db, now, task_id, owner, token)
            await db.execute(
                SQL["set_process"],
                {"task_id": task_id, "pid": pid, "pid_start_time": pid_start_time, "host": host, "now": now},
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
    ) -> Task:
        if state not in (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.INTERRUPTED):
            raise ValueError(f"finish_task ends in succeeded, failed or interrupted, not {state}")
        async with self._write() as db:
            now = self._clock.now()
            lease = await self._lease_in(db, task_id)
            # Finishing is allowed just past expiry as long as nobody took the lease over:
            # the work is done, and recording that beats leaving a zombie behind.
            if lease is None or lease.owner != owner or lease.token != token:
                raise LeaseLost(
                    f"{owner} (token {token}) no longer owns {task_id}; not recording its end"
                )
            before = await self._task_in(db, task_id)
            await db.execute(
                SQL["finish_task"],
                {
                    "task_id": task_id,
                    "state": state.value,
                    "exit_code": exit_code,
                    "reason": reason,
                    "finished_at": None if state is TaskState.INTERRUPTED else now,
                    "now": now,
                },
            )
            await db.execute(SQL["release_lease"], {"task_id": task_id, "owner": owner, "token": token, "now": now})
            exit_text = "" if exit_code is None else f" (exit {exit_code})"
            await self._event(
                db, now, kind=EventKind.STATE_CHANGED, actor=owner, task_id=task_id,
                message=f"{before.state} -> {state}{exit_text}" + (f": {reason}" if reason else ""),
                data={"from": before.state.value, "to": state.value, "exit_code": exit_code, "token": token},
            )
            await self._event(
                db, now, kind=EventKind.LEASE_RELEASED, actor=owner, task_id=task_id,
                message=f"{owner} released token {token}", data={"owner": owner, "token": token},
            )
            return await self._task_in(db, task_id)

    async def set_quarantine(
        self, task_id: str, *, quarantined: bool, actor: str, reason: str | None = None
    ) -> Task:
        async with self._write() as db:
            now = self._clock.now()
            before = await self._task_in(db, task_id)
            if before.quarantined == quarantined:
                return before
            await db.execute(
                SQL["set_quarantine"],
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
                db, now,
                kind=EventKind.QUARANTINED if quarantined else EventKind.UNQUARANTINED,
                actor=actor, task_id=task_id,
                message=("quarantined" if quarantined else "released from quarantine") + why,
            )
            return await self._task_in(db, task_id)

    # Leases --------------------------------------------------------------------------------

    async def get_lease(self, task_id: str) -> Lease | None:
        async with self._read() as db:
            return await self._lease_in(db, task_id)

    async def acquire_lease(self, task_id: str, *, owner: str, ttl: float) -> Lease:
        async with self._write() as db:
            now = self._clock.now()
            task = await self._task_in(db, task_id)
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
            return await self._grant(db, now, task_id, owner, token, ttl, EventKind.LEASE_ACQUIRED, None)

    async def reclaim_lease(self, task_id: str, *, owner: str, ttl: float) -> Lease:
        async with self._write() as db:
            now = self._clock.now()
            task = await self._task_in(db, task_id)
            if task.state.finished:
                raise LeaseHeld(f"{task_id} is {task.state}; a finished task cannot be reclaimed")
            current = await self._lease_in(db, task_id)
            if current is None or not current.held:
                raise LeaseHeld(f"{task_id} has no lease to reclaim: acquire it instead")
            if not current.expired(now):
                raise LeaseHeld(
                    f"{task_id}'s lease (held by {current.owner}, token {current.token}) is live for "
                    f"another {format_age((current.expires_at or now) - now)}; it cannot be reclaimed yet"
                )
            return await self._grant(
                db, now, task_id, owner, current.token + 1, ttl, EventKind.LEASE_RECLAIMED, current
            )

    async def _grant(
        self,
        db: aiosqlite.Connection,
        now: float,
        task_id: str,
        owner: str,
        token: int,
        ttl: float,
        kind: EventKind,
        previous: Lease | None,
    ) -> Lease:
        expires_at = now + ttl
        await db.execute(
            SQL["upsert_lease"],
            {"task_id": task_id, "owner": owner, "token": token, "now": now, "expires_at": expires_at},
        )
        await db.execute(
            SQL["claim_task"],
            {"task_id": task_id, "now": now, "attempt_bump": 1 if previous is not None else 0},
        )
        taken = "" if previous is None else f" from {previous.owner} (token {previous.token})"
        await self._event(
            db, now, kind=kind, actor=owner, task_id=task_id,
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
        return Lease(task_id=task_id, owner=owner, token=token, acquired_at=now, renewed_at=now, expires_at=expires_at)

    async def renew_lease(self, task_id: str, *, owner: str, token: int, ttl: float) -> Lease:
        async with self._write() as db:
            now = self._clock.now()
            expires_at = now + ttl
            cursor = await db.execute(
                SQL["renew_lease"],
                {"task_id": task_id, "owner": owner, "token": token, "now": now, "expires_at": expires_at},
            )
            if cursor.rowcount != 1:
                await self._fence(db, now, task_id, owner, token)  # raises with the precise reason
                raise LeaseLost(f"{owner} could not renew {task_id}")
            lease = await self._lease_in(db, task_id)
            assert lease is not None
            await self._event(
                db, now, kind=EventKind.LEASE_RENEWED, actor=owner, task_id=task_id,
                message=f"{owner} renewed token {token} until +{format_age(ttl)}",
                data={"owner": owner, "token": token, "expires_at": expires_at},
            )
            return lease

    async def release_lease(self, task_id: str, *, owner: str, token: int) -> None:
        async with self._write() as db:
            now = self._clock.now()
            cursor = await db.execute(
                SQL["release_lease"], {"task_id": task_id, "owner": owner, "token": token, "now": now}
            )
            if cursor.rowcount != 1:
                raise LeaseLost(f"{owner} (token {token}) does not hold {task_id}; nothing to release")
            await self._event(
                db, now, kind=EventKind.LEASE_RELEASED, actor=owner, task_id=task_id,
                message=f"{owner} released token {token}", data={"owner": owner, "token": token},
            )

    async def still_owner(self, task_id: str, *, owner: str, token: int) -> bool:
        async with self._read() as db:
            now = self._clock.now()
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
        self, db: aiosqlite.Connection, task_id: str, expected_token: int | None, verb: str
    ) -> tuple[Task, Lease | None]:
        """Re-read the task inside the write transaction and refuse if it moved on."""
        task = await self._task_in(db, task_id)
        lease = await self._lease_in(db, task_id)
        token = None if lease is None else lease.token
        if token != expected_token:
            raise ActionRefused(
                f"task changed since you looked: token {expected_token} is now {token}; "
                f"look again before you {verb} {task_id}"
            )
        if task.state in (TaskState.SUCCEEDED, TaskState.DISCARDED):
            raise ActionRefused(f"{task_id} is {task.state}; there is nothing to {verb}")
        return task, lease

    async def _bump_token(
        self, db: aiosqlite.Connection, now: float, task_id: str, lease: Lease | None, actor: str
    ) -> Lease:
        token = (0 if lease is None else lease.token) + 1
        await db.execute(SQL["bump_lease_token"], {"task_id": task_id, "token": token, "now": now})
        held = "" if lease is None or lease.owner is None else f" from {lease.owner}"
        await self._event(
            db, now, kind=EventKind.LEASE_RECLAIMED, actor=actor, task_id=task_id,
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
            now = self._clock.now()
            before, lease = await self._take_for_action(db, task_id, expected_token, "resume")
            new_lease = await self._bump_token(db, now, task_id, lease, actor)
            params = {"task_id": task_id, "reason": reason, "now": now}
            await db.execute(SQL["requeue_task"], params)
            await db.execute(SQL["delete_heartbeat"], {"task_id": task_id})
            why = f": {reason}" if reason else ""
            await self._event(
                db, now, kind=EventKind.STATE_CHANGED, actor=actor, task_id=task_id,
                message=f"{before.state} -> queued for attempt {before.attempt + 1}{why}",
                data={"from": before.state.value, "to": TaskState.QUEUED.value,
                      "token": new_lease.token, "checkpoint": before.checkpoint},
            )
            return await self._task_in(db, task_id), new_lease

    async def discard_task(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> tuple[Task, Lease]:
        async with self._write() as db:
            now = self._clock.now()
            before, lease = await self._take_for_action(db, task_id, expected_token, "discard")
            new_lease = await self._bump_token(db, now, task_id, lease, actor)
            params = {"task_id": task_id, "reason": reason, "now": now}
            await db.execute(SQL["discard_task"], params)
            why = f": {reason}" if reason else ""
            await self._event(
                db, now, kind=EventKind.STATE_CHANGED, actor=actor, task_id=task_id,
                message=f"{before.state} -> discarded{why}",
                data={"from": before.state.value, "to": TaskState.DISCARDED.value,
                      "token": new_lease.token},
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
    ) -> PendingKill:
        async with self._write() as db:
            now = self._clock.now()
            await self._task_in(db, task_id)
            try:
                await db.execute(
                    SQL["insert_pending_kill"],
                    {
                        "task_id": task_id, "pid": pid, "pid_start_time": pid_start_time,
                        "pgid": pgid, "host": host, "requested_by": requested_by,
                        "now": now, "deadline": now + grace,
                    },
                )
            except sqlite3.IntegrityError:
                raise ActionRefused(
                    f"{task_id} already has a kill in progress; wait for it or watch it with "
                    f"`zombietop kill {task_id}`"
                ) from None
            async with db.execute(OPEN_KILL_SQL, {"task_id": task_id}) as cursor:
                row = await cursor.fetchone()
            assert row is not None
            return PendingKill.from_row(row)

    async def get_open_kill(self, task_id: str) -> PendingKill | None:
        async with self._read() as db:
            async with db.execute(OPEN_KILL_SQL, {"task_id": task_id}) as cursor:
                row = await cursor.fetchone()
        return None if row is None else PendingKill.from_row(row)

    async def open_kills(self, host: str | None) -> list[PendingKill]:
        async with self._read() as db:
            rows = await db.execute_fetchall(HOST_KILLS_SQL, {"host": host})
        return [PendingKill.from_row(row) for row in rows]

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
            now = self._clock.now()
            async with db.execute(OPEN_KILL_SQL, {"task_id": task_id}) as cursor:
                row = await cursor.fetchone()
            if row is None:
                return None
            await db.execute(
                SQL["close_pending_kill"], {"task_id": task_id, "outcome": outcome, "now": now}
            )
            kill = PendingKill.from_row(row)
            await self._event(
                db, now, kind=EventKind.ACTION, actor=actor, task_id=task_id, message=message,
                data={"action": "kill", "outcome": outcome, "requested_by": kill.requested_by,
                      "pid": kill.pid, "pgid": kill.pgid, **dict(data or {})},
            )
            return PendingKill(
                task_id=kill.task_id, pid=kill.pid, pid_start_time=kill.pid_start_time,
                host=kill.host, requested_by=kill.requested_by, term_sent_at=kill.term_sent_at,
                deadline=kill.deadline, outcome=outcome, finished_at=now, pgid=kill.pgid,
            )

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
            now = self._clock.now()
            task = await self._task_in(db, task_id)
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
                "request_at": beat.request_at,
                "trace_id": beat.trace,
                "reported_at": beat.at,
                "now": now,
            }
            async with db.execute(SQL["upsert_heartbeat"], params) as cursor:
                row = await cursor.fetchone()
            seq = row[0] if row else 1
            await db.execute(
                SQL["insert_heartbeat_history"],
                {"task_id": task_id, "seq": seq, "now": now, "stage": beat.stage, "progress": beat.progress},
            )
            if seq > HISTORY_LIMIT:
                await db.execute(
                    SQL["trim_heartbeat_history"],
                    {"task_id": task_id, "oldest_dropped": seq - HISTORY_LIMIT},
                )
            await db.execute(SQL["mark_running"], {"task_id": task_id, "checkpoint": beat.checkpoint, "now": now})
            async with db.execute(
                f"SELECT {', '.join(HEARTBEAT_COLUMNS)} FROM heartbeats WHERE task_id = ?", (task_id,)
            ) as cursor:
                stored = await cursor.fetchone()
            assert stored is not None
            return Heartbeat.from_row(stored)

    async def record_heartbeat_error(self, task_id: str, message: str) -> None:
        async with self._write() as db:
            now = self._clock.now()
            await self._task_in(db, task_id)
            await db.execute(SQL["set_heartbeat_error"], {"task_id": task_id, "message": message, "now": now})
            await self._event(
                db, now, kind=EventKind.HEARTBEAT_REJECTED, actor="zombietop", task_id=task_id, message=message
            )

    async def heartbeat_history(self, task_id: str, limit: int = HISTORY_LIMIT) -> list[HistoryPoint]:
        async with self._read() as db:
            rows = await db.execute_fetchall(
                SQL["select_heartbeat_history"], {"task_id": task_id, "limit": limit}
            )
        return [
            HistoryPoint(written_at=row["written_at"], stage=row["stage"], progress=row["progress"])
            for row in reversed(list(rows))
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
            await self._event(
                db, self._clock.now(), kind=kind, actor=actor, message=message, task_id=task_id, data=data
            )

    async def events(
        self,
        *,
        task_id: str | None = None,
        limit: int = 100,
        before_id: int | None = None,
        kind: str | None = None,
    ) -> list[Event]:
        async with self._read() as db:
            rows = await db.execute_fetchall(
                SQL["select_events"],
                {"task_id": task_id, "limit": limit, "before_id": before_id, "kind": kind},
            )
        return [Event.from_row(row) for row in rows]


def _create_private_file(path: Path) -> None:
    """Create the store file readable by its owner only; SQLite gives -wal and -shm the same mode."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise StoreError(f"cannot create store {path}: {exc.strerror}") from None
    os.close(fd)


def _statements(script: str) -> list[str]:
    """Split a migration into statements (our schema has no ';' inside literals)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [stmt.strip() for stmt in "\n".join(lines).split(";") if stmt.strip()]
