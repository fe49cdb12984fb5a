"""Open a test store on either backend with one fake clock.

SQLite keeps time by the clock it is given. PostgreSQL keeps time by its server, so for the
shared suite the server's clock is pinned to the same fake clock (``pinned_clock``): the SQL that
reads the server's time is the production SQL, only its answer is fixed.
"""

from __future__ import annotations

from pathlib import Path

from core.clock import Clock
from core.store import Store, is_postgres_url, open_store


async def open_for_test(
    location: Path | str,
    clock: Clock | None = None,
    *,
    read_only: bool = False,
    create: bool = False,
) -> Store:
    if is_postgres_url(location):
        from core.pg_store import PostgresStore

        return await PostgresStore.open(
            str(location), read_only=read_only, create=create, pinned_clock=clock
        )
    return await open_store(location, read_only=read_only, create=create, clock=clock)
