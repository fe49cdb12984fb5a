"""The store: zombietop's own record of tasks, leases, heartbeats, events and pages.

- ``interface``: the async API every backend implements (``Store``), put together from the
  part each concern declares beside its implementation;
- ``sql_store``: the logic both backends share, composed from one module per concern
  (``tasks``, ``leases``, ``beats``, ``events``, ``kills``, ``agents``, ``oncall``, ``paging``,
  ``retention``) over ``sql_base``;
- ``sqlite`` (the default, one file per host) and ``postgres`` (for fleets);
- ``columns``: the columns of a joined task row, which the SQL and the reader share;
- ``poll_cache``: what a poll has already read, so the next one reads only what changed;
- ``queries``: the named SQL blocks of ``sql/``: ``sql/common/<concern>.sql`` for the blocks both
  backends share, ``sql/<backend>/<concern>.sql`` for the ones each writes its own way;
- ``sqlite_inline``: SQLite statements on the caller's thread, for a loop of its own;
- ``pruner``: who prunes finished tasks, and when (``[store] keep_finished``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zombietop.extras import require
from zombietop.locations import is_postgres_url, store_location
from zombietop.store.interface import HISTORY_LIMIT, Store

__all__ = ["HISTORY_LIMIT", "Store", "location_of", "open_store"]


def location_of(store: Store) -> Path | str | None:
    """The location a store was opened at, to hand to processes it starts."""
    where = getattr(store, "path", None) or getattr(store, "url", None)
    return None if where is None else store_location(where)


async def open_store(
    location: str | Path,
    *,
    read_only: bool = False,
    create: bool = False,
    clock: Any = None,
    inline: bool = False,
) -> Store:
    """Open the store at ``location``: a SQLite file path or a ``postgresql://`` URL.

    ``clock`` is this host's clock. A SQLite store keeps time by it; a PostgreSQL store keeps
    time by the server and uses it only to measure this host's skew.

    ``inline`` runs a SQLite store's statements on the calling thread rather than aiosqlite's,
    for a caller whose event loop has a thread of its own (PostgreSQL's are network waits).
    """
    if is_postgres_url(location):
        require("a PostgreSQL store", "asyncpg", extra="postgres")
        from zombietop.store.postgres import PostgresStore

        return await PostgresStore.open(
            str(location), read_only=read_only, create=create, clock=clock
        )
    from zombietop.store.sqlite import SQLiteStore

    return await SQLiteStore.open(
        Path(location), read_only=read_only, create=create, clock=clock, inline=inline
    )
