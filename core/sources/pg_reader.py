"""A connection to an engine's PostgreSQL that can only read (Airflow's, Dagster's).

Every transaction on it is read-only (``default_transaction_read_only``), so a bug in a
source's SQL cannot write to the engine, and it names itself in ``pg_stat_activity``.
"""

from __future__ import annotations

from typing import Any

from zombietop.errors import MissingExtra, SourceError
from zombietop.extras import require


async def connect_read_only(dsn: str, *, needs: str, name: str) -> Any:
    """Connect to ``dsn`` read-only; ``needs`` says who needs asyncpg ("an Airflow source on
    PostgreSQL") and ``name`` is the source's, for the errors."""
    try:
        require(needs, "asyncpg", extra="postgres")
    except MissingExtra as exc:
        raise SourceError(f"source {name}: {exc}") from None
    import asyncpg

    try:
        return await asyncpg.connect(
            dsn,
            server_settings={
                "default_transaction_read_only": "on",
                "application_name": "zombietop (read-only)",
            },
        )
    except (OSError, asyncpg.PostgresError) as exc:
        raise SourceError(f"source {name}: cannot connect ({exc})") from None
