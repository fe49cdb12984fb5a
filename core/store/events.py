"""The event log: every change a store makes is written as an event in the same transaction
(``SQLBase._event``); this reads it, and records the events callers write themselves.

Its SQL is in ``sql/common/events.sql`` and ``sql/<backend>/events.sql``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zombietop.model import Event
from zombietop.store.sql_base import Conn, SQLBase


class Events(SQLBase[Conn]):
    """Record an event and read the log."""

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
