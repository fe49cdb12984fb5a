"""The on-call loop: acks (someone is on a task's incident), silences (a rule that holds
pages), and what the schedule checks read (a step's runs, when a schedule was first seen).

Its SQL is in ``sql/common/oncall.sql``.
"""

from __future__ import annotations

import abc

from zombietop.durations import format_age, format_duration
from zombietop.errors import ActionRefused
from zombietop.model import (
    Ack,
    Event,
    EventKind,
    Note,
    Silence,
    StepRuns,
)
from zombietop.store.sql_base import Conn, SQLBase


class OnCallInterface(abc.ABC):
    """Part of ``Store``, implemented by ``OnCall`` below: acks (someone is on an incident),
    notes on incidents, silences (rules that hold pages) and schedules seen, each written with
    an event and the store's clock."""

    @abc.abstractmethod
    async def ack_task(
        self,
        task_id: str,
        *,
        by: str,
        reason: str | None,
        duration: float,
        source: str | None = None,
    ) -> Ack:
        """Ack the task until now + ``duration`` (replacing any ack it has), with an event.

        ``source`` names the read-only source the task comes from: its ack is kept here, by
        that name and the task id, as the store holds no row of the task. Without it, raise
        ``TaskNotFound`` for a task the store does not hold.
        """

    @abc.abstractmethod
    async def unack_task(
        self, task_id: str, *, by: str, reason: str, source: str | None = None
    ) -> Ack | None:
        """Remove the task's ack (of ``source``'s task, when given), with an event; None (and
        no event) when it had none."""

    @abc.abstractmethod
    async def acks(self) -> list[Ack]:
        """Every ack still in force, by task id."""

    @abc.abstractmethod
    async def add_note(
        self, task_id: str, *, by: str, text: str, source: str | None = None
    ) -> Note:
        """Add a note to the task's incident (of ``source``'s task, when given), as an event;
        without ``source``, raise ``TaskNotFound`` for a task the store does not hold."""

    @abc.abstractmethod
    async def notes(self, task_id: str, *, limit: int = 20) -> list[Note]:
        """The task's notes, newest first."""

    @abc.abstractmethod
    async def add_silence(
        self, *, matcher: str, pattern: str, by: str, reason: str, duration: float
    ) -> Silence:
        """Hold the pages of tasks matching the rule until now + ``duration``, with an event."""

    @abc.abstractmethod
    async def end_silence(self, silence_id: int, *, by: str) -> Silence:
        """End a silence now, with an event; raise ``ActionRefused`` if it is unknown or over."""

    @abc.abstractmethod
    async def silences(self) -> list[Silence]:
        """Every silence in force, soonest to end first."""

    @abc.abstractmethod
    async def step_runs(self, step: str, *, job: str | None = None) -> StepRuns:
        """When a task of ``step`` (with ``job``: a run of that job, whatever its step) last
        started, and since when the oldest still running has."""

    @abc.abstractmethod
    async def see_schedule(self, *, name: str, step: str, cron: str, tz: str, at: float) -> float:
        """Record that a schedule was seen at ``at`` unless it was before; return its first time."""

    @abc.abstractmethod
    async def schedule_seen(self, *, name: str, step: str, cron: str, tz: str) -> float | None:
        """When a schedule was first seen (None: no reader has recorded it yet)."""


class OnCall(SQLBase[Conn], OnCallInterface):
    """Acks, silences and schedules."""

    async def ack_task(
        self,
        task_id: str,
        *,
        by: str,
        reason: str | None,
        duration: float,
        source: str | None = None,
    ) -> Ack:
        key = self._ack_key(task_id, source)
        async with self._write() as db:
            now = await self._ack_now(db, task_id, source)
            until = now + duration
            values = {**key, "actor": by, "reason": reason, "now": now, "until_at": until}
            if source is None:
                await self._run(db, "upsert_ack", values)
            else:
                await self._run(db, "delete_expired_source_acks", values)
                await self._run(db, "upsert_source_ack", values)
            why = f": {reason}" if reason else ""
            await self._event(
                db,
                now,
                kind=EventKind.ACK,
                actor=by,
                task_id=task_id,
                message=f"acked by {by} for {format_age(duration)}{why}",
                data={"action": "ack", "by": by, "reason": reason, "until": until, **key},
            )
            row = await self._row(db, "select_ack" if source is None else "select_source_ack", key)
        assert row is not None
        return Ack.from_row(row)

    async def unack_task(
        self, task_id: str, *, by: str, reason: str, source: str | None = None
    ) -> Ack | None:
        key = self._ack_key(task_id, source)
        async with self._write() as db:
            now = await self._ack_now(db, task_id, source)
            row = await self._row(db, "select_ack" if source is None else "select_source_ack", key)
            if row is None:
                return None
            await self._run(db, "delete_ack" if source is None else "delete_source_ack", key)
            ended = Ack.from_row(row)
            await self._event(
                db,
                now,
                kind=EventKind.ACK,
                actor=by,
                task_id=task_id,
                message=f"ack by {ended.by} ended by {by}: {reason}",
                data={"action": "unack", "by": by, "reason": reason, "acked_by": ended.by, **key},
            )
        return ended

    @staticmethod
    def _ack_key(task_id: str, source: str | None) -> dict[str, str]:
        return {"task_id": task_id} if source is None else {"task_id": task_id, "source": source}

    async def _ack_now(self, db: Conn, task_id: str, source: str | None) -> float:
        """The store's clock; for this store's own task, read after holding its row (which
        raises ``TaskNotFound`` for a task it does not hold). A source's task has no row here."""
        if source is None:
            _, now = await self._locked(db, task_id)
            return now
        return await self._now_in(db)

    async def acks(self) -> list[Ack]:
        async with self._read() as db:
            now = await self._now_in(db)
            rows = await self._rows(db, "select_acks", {"now": now})
        return [Ack.from_row(row) for row in rows]

    # Notes -------------------------------------------------------------------------------

    async def add_note(
        self, task_id: str, *, by: str, text: str, source: str | None = None
    ) -> Note:
        async with self._write() as db:
            now = await self._ack_now(db, task_id, source)
            await self._event(
                db,
                now,
                kind=EventKind.INCIDENT_NOTE,
                actor=by,
                task_id=task_id,
                message=f"note by {by}: {text}",
                data={"action": "note", "by": by, "text": text, "source": source},
            )
        return Note(task_id=task_id, by=by, at=now, text=text, source=source)

    async def notes(self, task_id: str, *, limit: int = 20) -> list[Note]:
        query = {"task_id": task_id, "limit": limit, "before_id": None, "skip_kind": None}
        async with self._read() as db:
            rows = await self._rows(
                db, "select_events", {**query, "kind": str(EventKind.INCIDENT_NOTE)}
            )
        return [Note.from_event(Event.from_row(row)) for row in rows]

    # Silences ------------------------------------------------------------------------------

    async def add_silence(
        self, *, matcher: str, pattern: str, by: str, reason: str, duration: float
    ) -> Silence:
        async with self._write() as db:
            now = await self._now_in(db)
            until = now + duration
            row = await self._insert(
                db,
                "insert_silence",
                {
                    "matcher": matcher,
                    "pattern": pattern,
                    "actor": by,
                    "reason": reason,
                    "now": now,
                    "until_at": until,
                },
            )
            assert row is not None
            silence_id = int(row[0])
            await self._event(
                db,
                now,
                kind=EventKind.SILENCE,
                actor=by,
                task_id=None,
                message=f"silence {silence_id} ({matcher} {pattern}) by {by} for "
                f"{format_duration(duration)}: {reason}",
                data={
                    "action": "silence",
                    "silence_id": silence_id,
                    "matcher": matcher,
                    "pattern": pattern,
                    "by": by,
                    "reason": reason,
                    "until": until,
                },
            )
            stored = await self._row(db, "select_silence", {"silence_id": silence_id})
        assert stored is not None
        return Silence.from_row(stored)

    async def end_silence(self, silence_id: int, *, by: str) -> Silence:
        async with self._write() as db:
            now = await self._now_in(db)
            changed = await self._run(
                db, "end_silence", {"silence_id": silence_id, "actor": by, "now": now}
            )
            row = await self._row(db, "select_silence", {"silence_id": silence_id})
            if row is None:
                raise ActionRefused(
                    f"no silence {silence_id} in store {self._where()}; "
                    "`zombietop silences` lists the active ones"
                )
            ended = Silence.from_row(row)
            if changed != 1:
                raise ActionRefused(
                    f"silence {silence_id} ({ended.rule}) has already ended; "
                    "`zombietop silences` lists the active ones"
                )
            await self._event(
                db,
                now,
                kind=EventKind.SILENCE,
                actor=by,
                task_id=None,
                message=f"silence {silence_id} ({ended.rule}) ended by {by}",
                data={"action": "unsilence", "silence_id": silence_id, "by": by},
            )
        return ended

    async def silences(self) -> list[Silence]:
        async with self._read() as db:
            now = await self._now_in(db)
            rows = await self._rows(db, "select_active_silences", {"now": now})
        return [Silence.from_row(row) for row in rows]

    # Schedules -----------------------------------------------------------------------------

    async def step_runs(self, step: str, *, job: str | None = None) -> StepRuns:
        async with self._read() as db:
            if job is not None:
                row = await self._row(db, "select_job_step_runs", {"job": job})
            else:
                row = await self._row(db, "select_step_runs", {"step": step})
        if row is None:
            return StepRuns()
        return StepRuns(last_started=row["last_started"], running_since=row["running_since"])

    async def see_schedule(self, *, name: str, step: str, cron: str, tz: str, at: float) -> float:
        key = {"name": name, "step": step, "cron": cron, "tz": tz}
        async with self._write() as db:
            await self._run(db, "insert_schedule_seen", {**key, "first_seen": at})
            row = await self._row(db, "select_schedule_seen", key)
        assert row is not None
        return float(row["first_seen"])

    async def schedule_seen(self, *, name: str, step: str, cron: str, tz: str) -> float | None:
        key = {"name": name, "step": step, "cron": cron, "tz": tz}
        async with self._read() as db:
            row = await self._row(db, "select_schedule_seen", key)
        return None if row is None else float(row["first_seen"])
