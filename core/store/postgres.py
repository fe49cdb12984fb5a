"""The PostgreSQL store: ``sql_store``'s logic over asyncpg, for many hosts and one server.

Time comes from the server. Every write locks the task's row first (``_hold``) and only then
reads the server's clock (``_now_in``), so a lease's expiry is judged by one clock for the whole
fleet: a host whose own clock is off can neither steal a live lease nor keep an expired one.
Events are written in the same transaction as the change they record; the schema is versioned
and migrated on open.

A connection lost to a restart, an upgrade or a failover is opened again at the next call, with
a backoff while the server cannot be reached; a read that was in flight when it was lost is
tried once more (``IDEMPOTENT``).

Its SQL is in ``sql/common/`` and ``sql/postgresql/`` (the schema in
``sql/postgresql/migrations.sql``); the blocks write parameters as ``:name``, which this module
turns into asyncpg's ``$n``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from zombietop.clock import Clock
from zombietop.errors import ReadOnlyStore, StoreBusy, StoreError, StoreMissing
from zombietop.fleet import AgentPresence
from zombietop.model import ProcessSample, Task
from zombietop.store import pg_partitions, queries
from zombietop.store.beats import sample_params
from zombietop.store.columns import fill_columns
from zombietop.store.interface import RECONNECT_MOST_S
from zombietop.store.retention import DAY_S, PartitionRun, day_start
from zombietop.store.sql_base import Duplicate
from zombietop.store.sql_store import SQLStore

APPLICATION = "zombietop"
CONNECT_TIMEOUT_S = 10.0
LOCK_TIMEOUT_MS = 5000
"""How long a statement waits for a lock another session holds before it fails (StoreBusy),
as SQLite's busy timeout does: a store locked for good must not hang every caller for good
(``zombietop run`` then runs its command unwatched, the watchdog says who to ask)."""
RECONNECT_FIRST_S = 0.25
_SQL = queries.load("postgresql")
MIGRATIONS = queries.migrations(_SQL)
SCHEMA_VERSION = len(MIGRATIONS)
"""Numbered apart from the SQLite store's (which had migrations of its own): each .sql file
says which SQLite version a PostgreSQL one matches."""


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


Q = {
    name: _Query.parse(fill_columns(sql))
    for name, sql in _SQL.items()
    if not name.startswith(queries.MIGRATION)
}


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


async def _connect(url: str, *, read_only: bool) -> asyncpg.Connection:
    """Open one connection, or raise a ``StoreError`` that says what to check."""
    where = safe_url(url)
    settings = {
        "application_name": f"zombietop:{os.getpid()}",
        "lock_timeout": str(LOCK_TIMEOUT_MS),
        # Compiling a query costs more than running any of this store's: a poll of a large
        # store spent 0.6-1.7 s of its 3-4 s in JIT (docs/benchmarks.md #14).
        "jit": "off",
    }
    if read_only:
        # The server refuses writes too, not only this class.
        settings["default_transaction_read_only"] = "on"
    try:
        return await asyncpg.connect(
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


class ConnectionLost(StoreError):
    """The connection to the server was lost (a restart, a failover); the next call reconnects."""


def _lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone, not that a statement was refused."""
    if isinstance(exc, asyncpg.InterfaceError):
        return "closed" in str(exc)
    return isinstance(
        exc,
        (
            asyncpg.PostgresConnectionError,
            asyncpg.AdminShutdownError,
            asyncpg.CrashShutdownError,
            asyncpg.CannotConnectNowError,
            OSError,
        ),
    )


class PostgresStore(SQLStore[asyncpg.Connection]):
    """A store in one PostgreSQL database, shared by every host of a fleet."""

    counts_quiet = True  # each poll reads every row it returns: reading fewer is the only saving

    def __init__(
        self,
        conn: asyncpg.Connection,
        url: str,
        *,
        read_only: bool,
        pinned_clock: Clock | None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._conn: asyncpg.Connection | None = conn
        self.url = url
        self.read_only = read_only
        self._pinned = pinned_clock
        # One connection, one transaction at a time: coroutines sharing this store queue here.
        self._lock = asyncio.Lock()
        self._closed = False
        self._monotonic = monotonic
        self._backoff = 0.0
        """Seconds to wait after the last failed attempt to reconnect; 0 while connected."""
        self._next_attempt = 0.0
        """This host's monotonic time before which no new attempt to reconnect is made."""

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
        conn = await _connect(url, read_only=read_only)
        store = cls(conn, url, read_only=read_only, pinned_clock=pinned_clock)
        try:
            await store._prepare()
        except BaseException:
            await conn.close()
            raise
        return store

    async def _prepare(self) -> None:
        where = safe_url(self.url)
        async with self._read() as db:
            version = await self._marker_version(db)
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
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(asyncpg.InterfaceError, OSError, TimeoutError):
                await conn.close(timeout=5)

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
            raise StoreBusy(
                f"store {where} was too busy ({exc}); retry, or find the session that holds "
                "the lock (pg_stat_activity, pg_locks)"
            ) from None
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            if _lost(exc):
                raise ConnectionLost(
                    f"lost the connection to PostgreSQL at {where} ({exc}); zombietop "
                    "connects again at its next call"
                ) from None
            raise StoreError(f"store {where}: {exc}") from None

    async def _connection(self) -> asyncpg.Connection:
        """The open connection, opened again if it was lost; call it holding ``_lock``.

        While the server cannot be reached, attempts are spaced out (doubling up to
        ``RECONNECT_MOST_S``), so that many callers retrying do not hammer a server that is
        starting; a call between two attempts fails at once, saying when the next one is.
        """
        if self._closed:
            raise StoreError(f"store {self._where()} is closed")
        if self._conn is not None and not self._conn.is_closed():
            if not self._conn.is_in_transaction():
                return self._conn
            # A call cancelled halfway (a wrapper's helper, as its command exits) left its
            # transaction open: the next write would become a savepoint in it that never
            # commits. End that connection and start afresh.
            self._conn.terminate()
        self._conn = None
        wait = self._next_attempt - self._monotonic()
        if wait > 0:
            raise ConnectionLost(
                f"lost the connection to PostgreSQL at {self._where()}; trying to connect "
                f"again in {wait:.1f}s"
            )
        try:
            self._conn = await _connect(self.url, read_only=self.read_only)
        except StoreError:
            self._backoff = min(max(self._backoff * 2, RECONNECT_FIRST_S), RECONNECT_MOST_S)
            self._next_attempt = self._monotonic() + self._backoff
            raise
        self._backoff = 0.0
        return self._conn

    @contextlib.asynccontextmanager
    async def _read(self) -> AsyncIterator[asyncpg.Connection]:
        async with self._lock:
            conn = await self._connection()
            with self._translate():
                yield conn

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[asyncpg.Connection]:
        if self.read_only:
            raise ReadOnlyStore(
                f"store {self.describe()} is open read-only; this needs a writable store"
            )
        async with self._lock:
            conn = await self._connection()
            with self._translate():
                transaction = conn.transaction()
                try:
                    await transaction.start()
                    yield conn
                except BaseException:
                    with contextlib.suppress(
                        asyncpg.PostgresError, asyncpg.InterfaceError, OSError
                    ):
                        await transaction.rollback()
                    raise
                else:
                    await transaction.commit()

    @contextlib.asynccontextmanager
    async def _one_statement(self) -> AsyncIterator[asyncpg.Connection]:
        """As ``_write``, for one statement that is its own transaction: no BEGIN, no COMMIT."""
        if self.read_only:
            raise ReadOnlyStore(
                f"store {self.describe()} is open read-only; this needs a writable store"
            )
        async with self._lock:
            conn = await self._connection()
            with self._translate():
                yield conn

    def check_path(self) -> None:
        """A server's store has no file to be deleted under us: its errors say the rest."""

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

    async def _hold(self, db: asyncpg.Connection, task_id: str) -> Task | None:
        row = await self._row(db, "lock_task", {"task_id": task_id})
        return None if row is None else Task.from_row(row)

    def _where(self) -> str:
        return safe_url(self.url)

    async def _run_many(
        self, db: asyncpg.Connection, name: str, params: Iterable[Mapping[str, Any]]
    ) -> None:
        query = Q[name]
        await db.executemany(query.sql, [query.args(each) for each in params])

    async def _run_bulk(
        self, db: asyncpg.Connection, name: str, params: Sequence[Mapping[str, Any]]
    ) -> None:
        # The block NAME_bulk takes each parameter as an array (one element a row) and reads
        # them with unnest: one statement, one plan and one trip for the whole batch, where
        # executemany sends one statement per row.
        if not params:
            return
        query = Q[f"{name}_bulk"]
        await db.execute(query.sql, *([each[n] for each in params] for n in query.names))

    async def record_agent_round(
        self,
        host: str,
        *,
        agent_id: str,
        pid: int,
        interval: float,
        reported_at: float,
        samples: Mapping[str, ProcessSample],
        finished: Collection[str] = (),
    ) -> AgentPresence:
        # One statement in its own implicit transaction (sql/postgresql/agents.sql): the tick
        # is one trip to the server, where BEGIN, the clock, three writes and COMMIT are six.
        columns: dict[str, list[Any]] = {name: [] for name in _ROUND_COLUMNS}
        for task_id, sample in samples.items():
            one = sample_params(task_id, host, sample, 0.0, after_finish=task_id in finished)
            for name, values in columns.items():
                values.append(one[name])
        params = {
            **columns,
            "host": host,
            "agent_id": agent_id,
            "agent_pid": pid,
            "interval_s": float(interval),
            "reported_at": float(reported_at),
            "pinned": None if self._pinned is None else float(self._pinned.now()),
        }
        async with self._one_statement() as db:
            row = await self._row(db, "agent_round", params)
        assert row is not None
        return AgentPresence.from_row(row)

    async def keep_partitions(self, before: float) -> PartitionRun:
        # One short transaction a day made or dropped: dropping takes the log's strongest lock,
        # for as long as a catalog change, not for as long as deleting the day's rows would.
        now = await self.now()
        made: list[str] = []
        dropped: list[str] = []
        waiting: list[str] = []
        for ahead in range(pg_partitions.AHEAD_DAYS + 1):
            start = day_start(now) + ahead * DAY_S
            async with self._write() as db:
                if await pg_partitions.make_partition(db, start):
                    made.append(pg_partitions.partition_name(start))
        async with self._read() as db:
            days = await pg_partitions.day_partitions(db)
        floor = day_start(before)
        for name, start in sorted(days.items(), key=lambda day: day[1]):
            if start + DAY_S > floor:
                continue
            async with self._write() as db:
                gone = await pg_partitions.drop_partition(db, name, floor=floor, now=now)
            (dropped if gone else waiting).append(name)
        return PartitionRun(made=tuple(made), dropped=tuple(dropped), waiting=tuple(waiting))

    async def _insert(
        self, db: asyncpg.Connection, name: str, params: Mapping[str, Any]
    ) -> asyncpg.Record | None:
        try:
            async with db.transaction():  # a savepoint: the duplicate leaves the outer one usable
                return await self._row(db, name, params)
        except asyncpg.UniqueViolationError:
            raise Duplicate(name) from None


_ROUND_COLUMNS = (
    "task_id",
    "pid",
    "alive",
    "identity_ok",
    "status",
    "cpu_percent",
    "rss_bytes",
    "threads",
    "io_idle_s",
    "idle_s",
    "children",
    "create_time",
    "sampled_at",
    "after_finish",
)
"""The parameters of ``agent_round`` that hold one element per sample."""

IDEMPOTENT = (
    "now",
    "get_task",
    "get_record",
    "poll",
    "glance",
    "get_lease",
    "still_owner",
    "renew_lease",
    "get_open_kill",
    "open_kills",
    "source_kills",
    "heartbeat_history",
    "events",
    "job_summaries",
    "job_runs",
    "failed_latest_runs",
    "step_runs",
    "schedule_seen",
    "record_agent_beat",
    "record_agent_round",
    "agents",
    "active_tasks_on",
    "process_samples",
    "get_host_request",
    "open_host_requests",
    "finished_counts",
    "finished_page",
    "watchdog_lease",
    "pending_pages",
    "watchdog_memory",
)
"""The calls that give the same answer when made twice: the reads, and the writes that set a
value (a lease renewed by compare-and-swap, an agent's beat). One that was in flight when the
connection was lost is made once more, on a new connection."""

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _once_more(call: Callable[_P, Awaitable[_T]]) -> Callable[_P, Awaitable[_T]]:
    @functools.wraps(call)
    async def again(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return await call(*args, **kwargs)
        except ConnectionLost:
            return await call(*args, **kwargs)

    return again


for _name in IDEMPOTENT:
    setattr(PostgresStore, _name, _once_more(getattr(PostgresStore, _name)))
