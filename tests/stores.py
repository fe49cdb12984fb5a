"""Open a test store on either backend with one fake clock.

SQLite keeps time by the clock it is given. PostgreSQL keeps time by its server, so for the
shared suite the server's clock is pinned to the same fake clock (``pinned_clock``): the SQL that
reads the server's time is the production SQL, only its answer is fixed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from zombietop.clock import Clock
from zombietop.locations import is_postgres_url
from zombietop.store import Store, open_store


async def open_for_test(
    location: Path | str,
    clock: Clock | None = None,
    *,
    read_only: bool = False,
    create: bool = False,
) -> Store:
    if is_postgres_url(location):
        from zombietop.store.postgres import PostgresStore

        return await PostgresStore.open(
            str(location), read_only=read_only, create=create, pinned_clock=clock
        )
    return await open_store(location, read_only=read_only, create=create, clock=clock)


async def count_rows(store: Store, table: str) -> int:
    """Count a table's rows behind the store's back (a test looking at what is really kept)."""
    from zombietop.store.postgres import PostgresStore
    from zombietop.store.sqlite import SQLiteStore

    if isinstance(store, PostgresStore):
        assert store._conn is not None
        return int(await store._conn.fetchval(f"SELECT count(*) FROM {table}"))
    assert isinstance(store, SQLiteStore)
    rows = await store._db.execute_fetchall(f"SELECT count(*) FROM {table}")
    return int(next(iter(rows))[0])


Reopen = Callable[..., Awaitable[Store]]
"""The ``reopen`` fixture: open the test's store again (``read_only=True`` and so on)."""


async def open_kill_for_test(store: Store, task_id: str) -> None:
    """Open a kill of ``task_id`` in its grace, as the random store scripts do (a made-up pid,
    no process identity, no host)."""
    await store.open_kill(
        task_id, pid=4121, pid_start_time=None, pgid=None, host=None, requested_by="t", grace=5
    )
