"""The PostgreSQL store: the SQLite store's behaviour over asyncpg, for many hosts and one server.

Time comes from the server. Every write locks the task's row first and only then reads the
server's clock, so a lease's expiry is judged by one clock for the whole fleet: a host whose own
clock is off can neither steal a live lease nor keep an expired one. Events are written in the
same transaction as the change they record; the schema is versioned and migrated on open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from core import queries
from core.clock import Clock
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
    AgentPresence,
    Event,
    EventKind,
    Heartbeat,
    HistoryPoint,
    HostRequest,
    Lease,
    PendingKill,
    ProcessSample,
    StoredSample,
    Task,
    TaskRecord,
    TaskState,
)
from core.rows import (
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
from core.store import HISTORY_LIMIT, Store

APPLICATION = "zombietop"
CONNECT_TIMEOUT_S = 10.0
_SQL = queries.load("postgresql")
MIGRATIONS = (_SQL["schema_v1"], _SQL["schema_v2"], _SQL["schema_v3"])
SCHEMA_VERSION = len(MIGRATIONS)
"""The same numbering as the SQLite store: v3 on either backend holds the same tables."""

_PARAM = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


@dataclass(frozen=True, slots=True)
class _Query:
    """One named block with ``:name`` parameters turned into asyncpg's ``$n``."""

    sql: str
    names: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> _Query:
        # Comments may mention :names; they must not become parameters.
        body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
        names: list[str] = []

        def number(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        return cls(_PARAM.sub(number, body), tuple(names))

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        return [params[name] for name in self.names]


def _filled(name: str) -> _Query:
    text = (
        _SQL[name]
        .replace("{columns}", _COLUMNS)
        .replace("{kill_columns}", _KILL_COLUMNS)
        .replace("{task_columns}", ", ".join(TASK_COLUMNS))
        .replace("{heartbeat_columns}", ", ".join(HEARTBEAT_COLUMNS))
        .replace("{request_columns}", ", ".join(REQUEST_COLUMNS))
    )
    return _Query.parse(text)


Q = {name: _filled(name) for name in _SQL if not name.startswith("schema_v")}


def _rowcount(status: str) -> int:
    """asyncpg returns the command tag (``UPDATE 1``); the count is its last word."""
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def safe_url(url: str) -> str:
    """The URL without its password, for messages and headers."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc}"))


class PostgresStore(Store):
    """A store in one PostgreSQL database, shared by every host of a fleet."""

    def __init__(
        self,
        conn: asyncpg.Connection,
        url: str,
        *,
        read_only: bool,
        pinned_clock: Clock | None,
    ) -> None:
        self._conn = conn
        self.url = url
        self.read_only = read_only
        self._pinned = pinned_clock
        # One connection, one transaction at a time: coroutines sharing this store queue here.
        self._lock = asyncio.Lock()
        self._poll_cache = PollCache()

    # Opening -------------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        read_only: bool = False,
        create: bool = False,
        clock: Clock | None = None,
        pinned_clock: Clock | None = None,
    ) -> PostgresStore:
        """Connect, check the database is a zombietop store (or empty) and migrate it.

        ``clock`` (this host's clock) is accepted for symmetry with SQLite and never decides a
        lease. ``pinned_clock`` replaces the server's clock in the one query that reads it, so
        the shared test suite can drive both backends with one fake clock; never set it in
        production.
        """
        del clock, create  # the server has the clock; the database is created by its admin
        where = safe_url(url)
        settings = {"application_name": f"zombietop:{os.getpid()}"}
        if read_only:
            # The server refuses writes too, not only this class.
            settings["default_transaction_read_only"] = "on"
        try:
            conn = await asyncpg.connect(
                url, timeout=CONNECT_TIMEOUT_S, server_settings=settings, statement_cache_size=200
            )
        except (
            asyncpg.InvalidPasswordError,
            asyncpg.InvalidAuthorizationSpecificationError,
        ) as exc:
            raise StoreError(
                f"PostgreSQL at {where} refused the login ({exc}); check the user and password "
                "in the URL, PGPASSWORD or ~/.pgpass"
            ) from None
        except asyncpg.InvalidCatalogNameError as exc:
            raise StoreMissing(
                f"no database at {where} ({exc}); create it (createdb NAME) and zombietop "
                "will create its tables on first use"
            ) from None
        except (OSError, TimeoutError, asyncpg.CannotConnectNowError) as exc:
            raise StoreError(
                f"cannot reach PostgreSQL at {where} ({exc.__class__.__name__}: {exc}); "
                "is the server running and is --db / ZOMBIETOP_DB right?"
            ) from None
        except (asyncpg.PostgresError, asyncpg.InterfaceError, ValueError) as exc:
            raise StoreError(f"cannot open store {where}: {exc}") from None
        store = cls(conn, url, read_only=read_only, pinned_clock=pinned_clock)
        try:
            await store._prepare()
        except BaseException:
            await conn.close()
            raise
        return store

    async def _prepare(self) -> None:
        where = safe_url(self.url)
        async with self._lock:
            with self._translate():
                version = await self._marker_version(self._conn)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{where} uses store schema v{version}, newer than this zombietop "
                f"(v{SCHEMA_VERSION}); upgrade zombietop"
            )
        if self.read_only:
            if version == 0:
                raise StoreMissing(
                    f"no zombietop store in {where} yet: run `zombietop init --db URL` once"
                )
            if version < SCHEMA_VERSION:
                raise StoreError(
                    f"{where} needs a schema upgrade (v{version} -> v{SCHEMA_VERSION}); "
                    "open it once without --read-only"
                )
            return
        if version < SCHEMA_VERSION:
            async with self._write() as db:
                await db.execute(Q["lock_migrations"].sql)
                # Re-read under the lock: another zombietop may have migrated meanwhile.
                version = await self._marker_version(db)
                for number in range(version, SCHEMA_VERSION):
                    await db.execute(MIGRATIONS[number])
                await db.execute(
                    Q["upsert_store_marker"].sql,
                    *Q["upsert_store_marker"].args(
                        {"application": APPLICATION, "version": SCHEMA_VERSION}
                    ),
                )

    async def _marker_version(self, db: asyncpg.Connection) -> int:
        where = safe_url(self.url)
        if await db.fetchval(Q["has_marker_table"].sql):
            row = await db.fetchrow(Q["select_store_marker"].sql)
            if row is None or row["application"] != APPLICATION:
                raise StoreError(
                    f"{where} is a PostgreSQL database but not a zombietop store; "
                    "point --db at a database of its own"
                )
            return int(row["schema_version"])
        tables = await db.fetchval(Q["count_tables"].sql)
        if tables:
            raise StoreError(
                f"{where} is a PostgreSQL database but not a zombietop store ({tables} other "
                "tables); point --db at a database of its own (createdb zombietop)"
            )
        return 0

    def describe(self) -> str:
        return safe_url(self.url) + (" (read-only)" if self.read_only else "")

    async def close(self) -> None:
        with contextlib.suppress(asyncpg.InterfaceError, OSError):
            await self._conn.close(timeout=5)

    async def now(self) -> float:
        async with self._read() as db:
            return await self._now_in(db)

    # Plumbing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _translate(self) -> Iterator[None]:
        """Turn asyncpg errors into ``StoreError`` subclasses that say what to do."""
        where = safe_url(self.url)
        try:
            yield
        except asyncpg.ReadOnlySQLTransactionError:
            raise ReadOnlyStore(
                f"store {self.describe()} cannot be written: the connection is read-only"
            ) from None
        except (
            asyncpg.DeadlockDetectedError,
            asyncpg.LockNotAvailableError,
            asyncpg.SerializationError,
        ) as exc:
            raise StoreBusy(f"store {where} was too busy ({exc}); retry") from None
        except asyncpg.InterfaceError as exc:
            if "closed" in str(exc):
                raise StoreError(f"store {where} is closed") from None
            raise StoreError(f"store {where}: {exc}") from None
        except (asyncpg.PostgresConnectionError, OSError) as exc:
            raise StoreError(
                f"lost the connection to PostgreSQL at {where} ({exc}); check the server"
            ) from None
        except asyncpg.PostgresError as exc:
            raise StoreError(f"store {where}: {exc}") from None

    @contextlib.asynccontextmanager
    async def _read(self) -> AsyncIterator[asyncpg.Connection]:
        async with self._lock:
            with self._translate():
                yield self._conn

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[asyncpg.Connection]:
        if self.read_only:
            raise ReadOnlyStore(
                f"store {self.describe()} is open read-only; this needs a writable store"
            )
        async with self._lock:
            with self._translate():
                transaction = self._conn.transaction()
                await transaction.start()
                try:
                    yield self._conn
                except BaseException:
                    with contextlib.suppress(
                        asyncpg.PostgresError, asyncpg.InterfaceError, OSError
                    ):
                        await transaction.rollback()
                    raise
                else:
                    await transaction.commit()

    async def _now_in(self, db: asyncpg.Connection) -> float:
        pinned = None if self._pinned is None else float(self._pinned.now())
        value = await db.fetchval(Q["transaction_now"].sql, pinned)
        return float(value)

    async def _run(self, db: asyncpg.Connection, name: str, params: Mapping[str, Any]) -> int:
        query = Q[name]
        return _rowcount(await db.execute(query.sql, *query.args(params)))

    async def _row(
        self, db: asyncpg.Connection, name: str, params: Mapping[str, Any]
    ) -> asyncpg.Record | None:
        query = Q[name]
        return await db.fetchrow(query.sql, *query.args(params))

    async def _rows(
        self, db: asyncpg.Connection, name: str, params: Mapping[str, Any]
    ) -> list[asyncpg.Record]:
        query = Q[name]
        return list(await db.fetch(query.sql, *query.args(params)))

    def _missing(self, task_id: str) -> TaskNotFound:
        return TaskNotFound(
            f"no task {task_id!r} in store {safe_url(self.url)}; "
            "`zombietop status --all` lists them"
        )

    async def _lock_task(self, db: asyncpg.Connection, task_id: str) -> Task | None:
        """Hold the task's row for the rest of the transaction (None: no such task)."""
        row = await self._row(db, "lock_task", {"task_id": task_id})
        return None if row is None else Task.from_row(row)

    async def _locked(self, db: asyncpg.Connection, task_id: str) -> tuple[Task, float]:
        """Lock the task's row, then read the server's clock: the order matters (see module)."""
        task = await self._lock_task(db, task_id)
        if task is None:
            raise self._missing(task_id)
        return task, await self._now_in(db)

    async def _task_in(self, db: asyncpg.Connection, task_id: str) -> Task:
        row = await self._row(db, "select_task", {"task_id": task_id})
        if row is None:
            raise self._missing(task_id)
        return Task.from_row(row)

    async def _lease_in(self, db: asyncpg.Connection, task_id: str) -> Lease | None:
        row = await self._row(db, "select_lease", {"task_id": task_id})
        return None if row is None else Lease.from_row(row)

    async def _event(
        self,
        db: asyncpg.Connection,
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
                async with db.transaction():  # a savepoint, so the duplicate is reported cleanly
                    await self._run(
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
            except asyncpg.UniqueViolationError:
                raise StoreError(
                    f"task {task_id!r} already exists in {safe_url(self.url)}"
                ) from None
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
            raise self._missing(task_id)
        return record_from_row(row)

    async def poll(self, finished_since: float | None) -> list[TaskRecord]:
        async with self._read() as db:
            if finished_since is None:
                rows = await self._rows(db, "select_all_tasks", {})
            else:
                rows = await self._rows(
                    db, "select_tasks_for_poll", {"finished_since": finished_since}
                )
        return self._poll_cache.records(rows)

    async def _fence(
        self, db: asyncpg.Connection, now: float, task_id: str, owner: str, token: int
    ) -> Lease:
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

    async def set_process(
        self, task_id: str, *, owner: str, token: int, pid: int, pid_start_time: float, host: str
    ) -> None:
        async with self._write() as db:
            await self._lock_task(db, task_id)
            now = await self._now_in(db)
            await self._fence(db, now, task_id, owner, token)
            await self._run(
                db,
                "set_process",
                {
                    "task_id": task_id,
                    "pid": pid,
                    "pid_start_time": pid_start_time,
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
    ) -> Task:
        if state not in (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.INTERRUPTED):
            raise ValueError(f"finish_task ends in succeeded, failed or interrupted, not {state}")
        async with self._write() as db:
            before_locked = await self._lock_task(db, task_id)
            now = await self._now_in(db)
            lease = await self._lease_in(db, task_id)
            # As in SQLite: finishing just past expiry is allowed while nobody took the lease.
            if lease is None or lease.owner != owner or lease.token != token:
                raise LeaseLost(
                    f"{owner} (token {token}) no longer owns {task_id}; not recording its end"
                )
            before = before_locked or await self._task_in(db, task_id)
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
                    f"{task_id}'s lease (held by {current.owner}, token {current.token}) is live "
                    f"for another {format_age((current.expires_at or now) - now)}; "
                    "it cannot be reclaimed yet"
                )
            return await self._grant(
                db, now, task_id, owner, current.token + 1, ttl, EventKind.LEASE_RECLAIMED, current
            )

    async def _grant(
        self,
        db: asyncpg.Connection,
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
            await self._lock_task(db, task_id)
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
                await self._fence(db, now, task_id, owner, token)  # raises with the reason
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
            await self._lock_task(db, task_id)
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
        self, db: asyncpg.Connection, task_id: str, expected_token: int | None, verb: str
    ) -> tuple[Task, Lease | None, float]:
        """Lock and re-read the task inside the transaction; refuse if it moved on."""
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
        self, db: asyncpg.Connection, now: float, task_id: str, lease: Lease | None, actor: str
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
    ) -> PendingKill:
        async with self._write() as db:
            _, now = await self._locked(db, task_id)
            try:
                async with db.transaction():
                    await self._run(
                        db,
                        "insert_pending_kill",
                        {
                            "task_id": task_id,
                            "pid": pid,
                            "pid_start_time": pid_start_time,
                            "pgid": pgid,
                            "host": host,
                            "requested_by": requested_by,
                            "now": now,
                            "deadline": now + grace,
                        },
                    )
            except asyncpg.UniqueViolationError:
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
            task = await self._lock_task(db, task_id)
            now = await self._now_in(db)
            if task is None:
                return None
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
            return PendingKill(
                task_id=kill.task_id,
                pid=kill.pid,
                pid_start_time=kill.pid_start_time,
                host=kill.host,
                requested_by=kill.requested_by,
                term_sent_at=kill.term_sent_at,
                deadline=kill.deadline,
                outcome=outcome,
                finished_at=now,
                pgid=kill.pgid,
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
                "request_at": beat.request_at,
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
                },
            )
        return [Event.from_row(row) for row in rows]

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

    async def record_process_samples(self, host: str, samples: Mapping[str, ProcessSample]) -> None:
        if not samples:
            return
        async with self._write() as db:
            now = await self._now_in(db)
            query = Q["upsert_process_sample"]
            await db.executemany(
                query.sql,
                [
                    query.args(sample_params(task_id, host, sample, now))
                    for task_id, sample in samples.items()
                ],
            )

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
    ) -> HostRequest:
        async with self._write() as db:
            _, now = await self._locked(db, task_id)
            try:
                async with db.transaction():
                    row = await self._row(
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
                        },
                    )
            except asyncpg.UniqueViolationError:
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
            raise StoreError(f"no host request {request_id} in store {safe_url(self.url)}")
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
