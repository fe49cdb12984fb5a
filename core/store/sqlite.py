"""The SQLite store: WAL, busy timeout, ``BEGIN IMMEDIATE`` for each write, migrated on open.

The store's logic is ``sql_store``'s; this module opens the file, translates sqlite3's errors
and runs the named queries of ``sql/common/`` and ``sql/sqlite/`` (its schema is
``sql/sqlite/migrations.sql``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Generator, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol
from urllib.parse import quote

import aiosqlite

from zombietop.clock import AnchoredClock, Clock, SystemClock, boot_identity, host_boottime
from zombietop.errors import ReadOnlyStore, StoreBusy, StoreError, StoreMissing, StoreReplaced
from zombietop.locations import default_store_path, file_identity
from zombietop.model import Task
from zombietop.store import queries
from zombietop.store.columns import fill_columns
from zombietop.store.lock_holders import lock_holders
from zombietop.store.sql_base import Duplicate
from zombietop.store.sql_store import SQLStore
from zombietop.store.sqlite_inline import InlineConnection

SQL = queries.load("sqlite")
APPLICATION_ID = 0x5A4F4D42  # "ZOMB": marks a SQLite file as a zombietop store.
MIGRATIONS = queries.migrations(SQL)
SCHEMA_VERSION = len(MIGRATIONS)
BUSY_TIMEOUT_MS = 5000
BEGIN_RETRIES = 4

QUERIES = {
    name: fill_columns(sql) for name, sql in SQL.items() if not name.startswith(queries.MIGRATION)
}
POLL_SQL = QUERIES["select_tasks_for_poll"]


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


class Cursor(Protocol):
    """What the store reads of a cursor (aiosqlite's, or ``InlineCursor``)."""

    @property
    def rowcount(self) -> int: ...

    async def fetchone(self) -> sqlite3.Row | None: ...

    async def close(self) -> None: ...


class Statement(Protocol):
    """A statement to await for its cursor, or to enter with ``async with`` (closing it after)."""

    def __await__(self) -> Generator[Any, None, Cursor]: ...

    async def __aenter__(self) -> Cursor: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class Connection(Protocol):
    """The store's connection: an ``aiosqlite.Connection``, whose statements run on a thread of
    its own, or an ``InlineConnection``, whose statements run on the caller's."""

    @property
    def row_factory(self) -> Any: ...

    @row_factory.setter
    def row_factory(self, factory: Any) -> None: ...

    def execute(self, sql: str, parameters: Any = ...) -> Statement: ...

    def executemany(self, sql: str, parameters: Iterable[Any]) -> Statement: ...

    def execute_fetchall(
        self, sql: str, parameters: Any = ...
    ) -> Awaitable[Iterable[sqlite3.Row]]: ...

    async def close(self) -> None: ...


class SQLiteStore(SQLStore[Connection]):
    """A store in one SQLite file (created 0600), shared by every process on the host."""

    def __init__(self, db: Connection, path: Path, clock: Clock, read_only: bool) -> None:
        super().__init__()
        self._db = db
        self.path = path
        self._clock = clock
        self.read_only = read_only
        self._file = file_identity(path)
        """The file opened: a store deleted or replaced under an open connection still reads
        (the old inode), so each statement first checks the path still names it."""
        # One connection, one transaction at a time: coroutines sharing this store queue here.
        self._lock = asyncio.Lock()

    # Opening -------------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        read_only: bool = False,
        create: bool = False,
        clock: Clock | None = None,
        inline: bool = False,
    ) -> SQLiteStore:
        """Open the store at ``path``; with ``inline``, run its statements on the calling
        thread (see ``sqlite_inline``): only for a caller whose event loop has a thread of its
        own, since a statement then blocks that loop."""
        path = path.expanduser()
        if not path.exists():
            if not create or read_only:
                raise StoreMissing(
                    f"no store at {path}: start a job with `zombietop run`, create one with "
                    "`zombietop init`, or point --db / ZOMBIETOP_DB at an existing store"
                )
            created = _create_private_file(path)
        else:
            created = False
        if path.is_dir():
            raise StoreError(f"{path} is a directory, not a store file; pass the file with --db")
        if read_only:
            target = _read_only_uri(path)
        elif _on_read_only_filesystem(path):
            raise ReadOnlyStore(
                f"store {path} is on a read-only filesystem, so it can only be read: "
                "`zombietop --read-only`, `zombietop status` and `zombietop silences` read it; "
                "remount it read-write to run jobs or act on them"
            )
        else:
            target = str(path)
        db: Connection
        try:
            if inline:
                db = InlineConnection(sqlite3.connect(target, uri=read_only, isolation_level=None))
            else:
                db = await aiosqlite.connect(target, uri=read_only, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {path}: {exc}") from None
        db.row_factory = sqlite3.Row
        store = cls(db, path, clock or SystemClock(), read_only)
        store.created = created
        try:
            await store._prepare()
            if clock is None:
                store._clock = await store._anchored_clock()
        except BaseException:
            await db.close()
            raise
        return store

    async def _prepare(self) -> None:
        with self._translate():
            await self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # Reading the header is what notices a file that is not a database at all. One
            # statement reads all three at once: read apart, another process creating the store
            # in between would show tables under a header not yet marked as ours.
            async with self._db.execute(
                "SELECT (SELECT application_id FROM pragma_application_id),"
                " (SELECT user_version FROM pragma_user_version),"
                " (SELECT count(*) FROM sqlite_master)"
            ) as cursor:
                row = await cursor.fetchone()
            app_id, version, tables = row if row else (0, 0, 0)
            has_tables = bool(tables)
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

    def check_path(self) -> None:
        self._check_file()

    @property
    def local_clock(self) -> bool:
        return isinstance(self._clock, AnchoredClock)

    async def _anchored_clock(self) -> Clock:
        """The store's clock: this boot's anchor (made now if this boot has none yet).

        Without a boot clock, or read-only before any writer of this boot anchored the store,
        it is the wall clock.
        """
        boot = boot_identity()
        since_boot = host_boottime()
        if boot is None or since_boot is None:
            return SystemClock()
        boot_id = boot[0]
        params = {"boot_id": boot_id, "wall": time.time(), "boot": since_boot}
        if not self.read_only:
            async with self._write() as db:
                await self._run(db, "insert_clock_anchor", params)
                await self._run(db, "prune_clock_anchors", params)
        async with self._read() as db:
            row = await self._row(db, "select_clock_anchor", params)
        if row is None:
            return SystemClock()
        return AnchoredClock(wall=float(row["wall"]), boot=float(row["boot"]))

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
                holders = lock_holders(self.path)
                by = f" ({', '.join(holders)})" if holders else ""
                raise StoreBusy(
                    f"store {self.path} stayed locked by another writer{by} for over "
                    f"{BUSY_TIMEOUT_MS / 1000:g}s; retry, or find the process holding it "
                    f"(fuser {self.path})"
                ) from None
            if "readonly" in str(exc):
                raise ReadOnlyStore(f"store {self.describe()} cannot be written: {exc}") from None
            raise StoreError(f"store {self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.ProgrammingError) and "closed database" in str(exc):
                # sqlite3's own word for a closed connection (an inline store's).
                raise StoreError(f"store {self.path} is closed") from None
            raise StoreError(
                f"{self.path} is not a readable zombietop store ({exc}); "
                "move it aside and let zombietop create a new one, or pass --db"
            ) from None
        except ValueError as exc:
            # aiosqlite raises a bare ValueError once its connection is closed.
            if "closed" in str(exc) or "no active connection" in str(exc):
                raise StoreError(f"store {self.path} is closed") from None
            raise

    def _check_file(self) -> None:
        now = file_identity(self.path)
        if now == self._file:
            return
        what = "deleted or moved" if now is None else "replaced by another file"
        raise StoreReplaced(
            f"store {self.path} was {what} while open; restore it, or restart zombietop "
            "on the store the jobs now use"
        )

    @contextlib.asynccontextmanager
    async def _read(self) -> AsyncIterator[Connection]:
        async with self._lock:
            self._check_file()
            with self._translate():
                yield self._db

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: the write lock is taken up front, so
        busy_timeout applies (a deferred transaction that upgrades fails at once)."""
        if self.read_only:
            raise ReadOnlyStore(
                f"store {self.describe()} is open read-only; this needs a writable store"
            )
        async with self._lock:
            self._check_file()
            with self._translate():
                for attempt in range(BEGIN_RETRIES):
                    asked = time.monotonic()
                    try:
                        await self._db.execute("BEGIN IMMEDIATE")
                        break
                    except sqlite3.OperationalError as exc:
                        # busy_timeout already waited its full time: waiting again only makes a
                        # command hang longer. Retry the quick refusals SQLite gives without it.
                        waited = time.monotonic() - asked >= BUSY_TIMEOUT_MS / 1000 * 0.9
                        if not _is_busy(exc) or waited or attempt == BEGIN_RETRIES - 1:
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

    async def _now_in(self, db: Connection) -> float:
        return self._clock.now()

    async def _damage(self, db: Connection, task_id: str) -> str | None:
        # The lookup went through the tasks' index; the table itself, read past the index (a
        # scan of the tasks alone, paid only when a task is missing), tells a damaged index.
        # Both in one statement, so one snapshot: a task created since the lookup is in both.
        rows = await db.execute_fetchall(
            "SELECT (SELECT count(*) FROM tasks WHERE task_id = :id),"
            " (SELECT count(*) FROM tasks NOT INDEXED WHERE task_id = :id)",
            {"id": task_id},
        )
        indexed, scanned = next(iter(rows))
        if scanned and not indexed:
            return "its index of tasks lacks a task its table holds"
        return None

    async def _revision(self, db: Connection) -> tuple[int, int] | None:
        row = await self._row(db, "select_revision", {})
        return None if row is None else (row[0], row[1])

    async def _hold(self, db: Connection, task_id: str) -> Task | None:
        # BEGIN IMMEDIATE already holds the whole file: there is no row to lock.
        return None

    def _where(self) -> str:
        return str(self.path)

    async def _run(self, db: Connection, name: str, params: Mapping[str, Any]) -> int:
        async with db.execute(QUERIES[name], params) as cursor:
            return cursor.rowcount

    async def _row(
        self, db: Connection, name: str, params: Mapping[str, Any]
    ) -> sqlite3.Row | None:
        # One trip to aiosqlite's thread, not three (execute, fetch, close): every named
        # single-row query reads one row by key, or returns the one row it wrote.
        rows = list(await db.execute_fetchall(QUERIES[name], params))
        return rows[0] if rows else None

    async def _rows(
        self, db: Connection, name: str, params: Mapping[str, Any]
    ) -> Sequence[sqlite3.Row]:
        return list(await db.execute_fetchall(QUERIES[name], params))

    async def _run_many(
        self, db: Connection, name: str, params: Iterable[Mapping[str, Any]]
    ) -> None:
        await db.executemany(QUERIES[name], params)

    async def _insert(
        self, db: Connection, name: str, params: Mapping[str, Any]
    ) -> sqlite3.Row | None:
        try:
            return await self._row(db, name, params)
        except sqlite3.IntegrityError:
            raise Duplicate(name) from None


def _on_read_only_filesystem(path: Path) -> bool:
    """True when the store's folder is mounted read-only (``errors=remount-ro``, a snapshot
    mounted for a post-mortem, a ``mount --bind -o ro``)."""
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _read_only_uri(path: Path) -> str:
    """How to open the store read-only without creating a file beside it.

    A reader of a WAL database needs the ``-wal`` and ``-shm`` files, and makes them when they
    are missing: on a read-only filesystem it cannot. With both there (the writers were cut
    off by the remount), SQLite reads them as they are. With no write-ahead log, or an empty
    one, the main file holds every commit and nothing can change it: ``immutable=1`` reads it
    exactly, with no locks and no files.
    """
    uri = f"file:{quote(str(path))}"
    if not _on_read_only_filesystem(path):
        return uri + "?mode=ro"
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    if wal.exists() and shm.exists():
        return uri + "?mode=ro"
    if not wal.exists() or wal.stat().st_size == 0:
        return uri + "?immutable=1"
    raise ReadOnlyStore(
        f"store {path} is on a read-only filesystem, and its write-ahead log {wal} holds "
        f"changes that SQLite reads only with {shm}, which is missing and cannot be created "
        f"there; copy {path} and {wal} to a writable folder and pass that copy with --db, or "
        "remount the filesystem read-write"
    )


def _create_private_file(path: Path) -> bool:
    """Create the store file readable by its owner only (SQLite gives -wal and -shm its mode);
    True when this call created it.

    Only the default store's folder is made when it is missing. Any other missing folder is
    most likely a typo in ``--db``: a store made there would be one that no dashboard watches.
    """
    if not path.parent.is_dir() and path.parent != default_store_path().parent:
        raise StoreMissing(
            f"cannot create store {path}: the folder {path.parent} does not exist; check "
            "--db / ZOMBIETOP_DB for a typo, or create the folder first"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    except OSError as exc:
        raise StoreError(f"cannot create store {path}: {exc.strerror}") from None
    os.close(fd)
    return True


def _statements(script: str) -> list[str]:
    """Split a migration into statements; a trigger's body keeps its own semicolons."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines():
        if line.strip().startswith("--"):
            continue
        pending += line + "\n"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        raise ValueError(f"unfinished statement in a migration: {pending.strip()[:60]}")
    return statements
