"""Heartbeats (reported by a job or observed by ``zombietop run``), their history, and the
process samples an agent or a source reports.

Its SQL is in ``sql/common/beats.sql`` and ``sql/<backend>/beats.sql``.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from zombietop.errors import LeaseLost
from zombietop.fleet import StoredSample
from zombietop.heartbeat_line import BeatLine
from zombietop.model import (
    EventKind,
    Heartbeat,
    HistoryPoint,
    ProcessSample,
)
from zombietop.store.sql_base import Conn, SQLBase


def _on_store_clock(moment: float | None, reported_at: float | None, now: float) -> float | None:
    """A moment the worker read off its own clock (``req_at``), moved onto the store's by the
    skew its beat shows (``at`` against ``now``), and never after ``now``: a worker whose
    clock is an hour behind must not look an hour into a request, nor one ahead not at all."""
    if moment is None:
        return None
    if reported_at is not None:
        moment -= reported_at - now
    return min(moment, now)


def sample_params(
    task_id: str,
    host: str,
    sample: ProcessSample,
    now: float,
    source: str | None = None,
    *,
    after_finish: bool = False,
) -> dict[str, Any]:
    """The named parameters of ``upsert_process_sample``: one row's (SQLite), or one element of
    each array (``upsert_process_sample_bulk``, PostgreSQL)."""
    return {
        "task_id": task_id,
        "host": host,
        "source": source,
        "pid": sample.pid,
        "alive": sample.alive,
        "identity_ok": sample.identity_ok,
        "status": sample.status,
        "cpu_percent": sample.cpu_percent,
        "rss_bytes": sample.rss_bytes,
        "threads": sample.threads,
        "io_idle_s": sample.io_idle_s,
        "idle_s": sample.idle_s,
        "children": sample.children,
        "create_time": sample.create_time,
        "sampled_at": sample.sampled_at,
        "now": now,
        "after_finish": after_finish,
    }


HISTORY_LIMIT = 120
"""Heartbeats kept per task for sparklines; older ones are trimmed as new ones arrive."""


class BeatsInterface(abc.ABC):
    """Part of ``Store``, implemented by ``Beats`` below: record and read heartbeats and process
    samples."""

    @abc.abstractmethod
    async def record_heartbeat(
        self,
        task_id: str,
        beat: BeatLine,
        *,
        owner: str | None = None,
        token: int | None = None,
    ) -> Heartbeat:
        """Upsert the latest heartbeat and append it to the history.

        With ``owner`` and ``token`` the beat is fenced: a stale owner gets ``LeaseLost``.
        """

    @abc.abstractmethod
    async def record_observed_heartbeat(
        self, task_id: str, counters: Mapping[str, float], *, owner: str, token: int
    ) -> Heartbeat:
        """Record an observed heartbeat (fenced on the lease): ``counters`` added to the latest
        beat, its time moved, its stage and progress (and when progress last moved) kept."""

    @abc.abstractmethod
    async def record_heartbeat_error(self, task_id: str, message: str) -> None:
        """Note a malformed heartbeat line so the dashboard can show it as a reason."""

    @abc.abstractmethod
    async def heartbeat_history(
        self, task_id: str, limit: int = HISTORY_LIMIT
    ) -> list[HistoryPoint]:
        """Return up to ``limit`` recent heartbeats, oldest first."""

    @abc.abstractmethod
    async def record_process_samples(
        self,
        host: str,
        samples: Mapping[str, ProcessSample],
        *,
        source: str | None = None,
        finished: Collection[str] = (),
    ) -> None:
        """Store what ``host``'s agent saw of its tasks' processes (task id -> sample): all of
        the store's own tasks, or with ``source`` of that source's; ``host``'s earlier samples
        of the same kind not written again are dropped. ``finished`` names the tasks the agent
        knew were finished when it sampled them: only those samples can show an orphan."""

    @abc.abstractmethod
    async def process_samples(
        self, task_ids: Sequence[str] | None = None
    ) -> dict[str, StoredSample]:
        """The latest stored sample of every unfinished task, by task id; with ``task_ids``,
        of only those of the store's own tasks (and every source's)."""


class Beats(SQLBase[Conn], BeatsInterface):
    """Record and read heartbeats and process samples."""

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
                "request_at": _on_store_clock(beat.request_at, beat.at, now),
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

    async def record_observed_heartbeat(
        self, task_id: str, counters: Mapping[str, float], *, owner: str, token: int
    ) -> Heartbeat:
        async with self._write() as db:
            task, now = await self._locked(db, task_id)
            if task.state.finished:
                raise LeaseLost(f"{task_id} is {task.state}; its heartbeats are no longer recorded")
            await self._fence(db, now, task_id, owner, token)
            params = {
                "task_id": task_id,
                "counters": json.dumps(dict(counters), sort_keys=True),
                "now": now,
            }
            row = await self._row(db, "observe_heartbeat", params)
            assert row is not None
            seq = int(row[0])
            await self._run(
                db,
                "insert_heartbeat_history",
                {"task_id": task_id, "seq": seq, "now": now, "stage": row[1], "progress": row[2]},
            )
            if seq > HISTORY_LIMIT:
                await self._run(
                    db,
                    "trim_heartbeat_history",
                    {"task_id": task_id, "oldest_dropped": seq - HISTORY_LIMIT},
                )
            await self._run(db, "mark_running_observed", {"task_id": task_id, "now": now})
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

    # Process samples -----------------------------------------------------------------------

    async def record_process_samples(
        self,
        host: str,
        samples: Mapping[str, ProcessSample],
        *,
        source: str | None = None,
        finished: Collection[str] = (),
    ) -> None:
        async with self._write() as db:
            now = await self._now_in(db)
            await self._run_bulk(
                db,
                "upsert_process_sample",
                [
                    sample_params(
                        task_id, host, sample, now, source, after_finish=task_id in finished
                    )
                    for task_id, sample in samples.items()
                ],
            )
            params: dict[str, Any] = {"host": host, "now": now}
            if source is None:
                await self._run(db, "prune_own_samples", params)
            else:
                await self._run(db, "prune_source_samples", {**params, "source": source})

    async def process_samples(
        self, task_ids: Sequence[str] | None = None
    ) -> dict[str, StoredSample]:
        async with self._read() as db:
            if task_ids is None:
                rows = await self._rows(db, "select_process_samples", {})
            else:
                ids = {"ids": json.dumps(list(task_ids))}
                rows = await self._rows(db, "select_process_samples_of", ids)
        return {row["task_id"]: StoredSample.from_row(row) for row in rows}
