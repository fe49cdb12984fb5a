"""The event log: every change a store makes is written as an event in the same transaction
(``SQLBase._event``); this reads it, and records the events callers write themselves.

Its SQL is in ``sql/common/events.sql`` and ``sql/<backend>/events.sql``.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping, Sequence
from typing import Any

from zombietop.model import (
    Event,
)
from zombietop.store.sql_base import Conn, SQLBase

TASKS_PER_READ = 500
"""How many tasks' events one read of ``events_of_tasks`` asks for: a handover of 10,000 open
incidents is 20 reads by the task index, not 50,000."""


class EventsInterface(abc.ABC):
    """Part of ``Store``, implemented by ``Events`` below: record an event and read the log."""

    @abc.abstractmethod
    async def record_event(
        self,
        *,
        kind: str,
        actor: str,
        message: str,
        task_id: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> None: ...

    @abc.abstractmethod
    async def events(
        self,
        *,
        task_id: str | None = None,
        limit: int = 100,
        before_id: int | None = None,
        kind: str | None = None,
        skip_kind: str | None = None,
    ) -> list[Event]:
        """Return events newest first, only of ``kind`` and never of ``skip_kind`` when given."""

    @abc.abstractmethod
    async def events_of_tasks(self, task_ids: Sequence[str], kinds: Sequence[str]) -> list[Event]:
        """Return every event of the tasks ``task_ids`` whose kind is in ``kinds``, oldest first."""

    @abc.abstractmethod
    async def events_after(
        self, after_id: int, *, kind: str, since: float, limit: int
    ) -> list[Event]:
        """Return at most ``limit`` events of a task, of ``kind``, after the event ``after_id``
        and at or after ``since``, oldest first (a reader that keeps up with the log)."""


class Events(SQLBase[Conn], EventsInterface):
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

    async def events_of_tasks(self, task_ids: Sequence[str], kinds: Sequence[str]) -> list[Event]:
        found: list[Event] = []
        wanted = json.dumps([str(kind) for kind in kinds])
        async with self._read() as db:
            for start in range(0, len(task_ids), TASKS_PER_READ):
                ids = json.dumps(list(task_ids[start : start + TASKS_PER_READ]))
                rows = await self._rows(db, "select_events_of_tasks", {"ids": ids, "kinds": wanted})
                found += [Event.from_row(row) for row in rows]
        return sorted(found, key=lambda event: event.event_id)

    async def events_after(
        self, after_id: int, *, kind: str, since: float, limit: int
    ) -> list[Event]:
        async with self._read() as db:
            rows = await self._rows(
                db,
                "select_events_after",
                {"after_id": after_id, "kind": str(kind), "since": since, "limit": limit},
            )
        return [Event.from_row(row) for row in rows]
