"""Sources: where task records come from besides zombietop's own store.

zombietop's store is read and written. An engine's database (Airflow's metadata database first)
is a read-only source: the monitor reads its task records every poll and judges them with the
same vocabulary, and no action ever writes to it. A source says what it can do, which clock its
times are on, and how its records map onto zombietop's tasks, leases and heartbeats.

- ``base``: the contract every source keeps, and the ``Engine`` each engine's module declares;
- ``registry``: the table of engines (``ENGINES``), which checks a URL and opens its source;
- one module per engine (``airflow``), with its SQL in ``sql/<engine>_<backend>.sql``;
- here: what the monitor does with every source (clocks, holds); the engines' limits are
  merged into the config the judge uses in ``zombietop.judge.source_limits``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from zombietop.errors import SourceError, ZombietopError
from zombietop.model import EventKind, Heartbeat, Lease, PendingKill, TaskRecord
from zombietop.sources.base import (
    Capability,
    Engine,
    EngineWorker,
    ListsWorkers,
    Origin,
    Source,
    SourceEntry,
    SourceRecord,
)
from zombietop.sources.registry import ENGINES, check_source_url, open_source

if TYPE_CHECKING:
    from zombietop.store.interface import Store

__all__ = [
    "ENGINES",
    "Capability",
    "Engine",
    "EngineWorker",
    "ListsWorkers",
    "Origin",
    "Source",
    "SourceEntry",
    "SourceRecord",
    "SourcesRead",
    "check_source_url",
    "open_or_later",
    "open_source",
    "open_sources",
    "read_holds",
    "read_sources",
    "shifted",
    "with_hold",
]


def shifted(record: TaskRecord, offset: float) -> TaskRecord:
    """``record`` with every time moved by ``offset`` seconds (from a source's clock to the
    store's)."""

    def move(value: float | None) -> float | None:
        return None if value is None else value + offset

    task = record.task
    moved_task = replace(
        task,
        created_at=task.created_at + offset,
        updated_at=task.updated_at + offset,
        claimed_at=move(task.claimed_at),
        started_at=move(task.started_at),
        finished_at=move(task.finished_at),
    )
    beat = record.heartbeat
    moved_beat: Heartbeat | None = None
    if beat is not None:
        moved_beat = replace(
            beat,
            written_at=beat.written_at + offset,
            progress_changed_at=beat.progress_changed_at + offset,
            stage_started_at=beat.stage_started_at + offset,
        )
    lease: Lease | None = record.lease
    if lease is not None:
        lease = replace(lease, acquired_at=move(lease.acquired_at))
    return TaskRecord(task=moved_task, lease=lease, heartbeat=moved_beat)


CLOCK_TOLERANCE = 0.5
"""Seconds between a source's clock and the store's below which records are taken as they are
(the same host's clock read twice)."""


HOLD_EVENTS = 1000
"""How many of the latest hold and release events a poll reads to know what is held."""

Hold = tuple[float, str, str]
"""A zombietop-side hold on a source's task: when, by whom, why."""


async def read_holds(store: Store) -> dict[str, Hold]:
    """The holds on source tasks, from zombietop's event log (the engine never hears of them):
    a task is held while its latest hold or release event is a hold."""
    held: dict[str, Hold] = {}
    seen: set[str] = set()
    events = [
        *await store.events(kind=EventKind.QUARANTINED, limit=HOLD_EVENTS),
        *await store.events(kind=EventKind.UNQUARANTINED, limit=HOLD_EVENTS),
    ]
    for event in sorted(events, key=lambda e: e.event_id, reverse=True):
        task_id = event.task_id
        if task_id is None or "source" not in event.data or task_id in seen:
            continue
        seen.add(task_id)
        if event.kind == EventKind.QUARANTINED:
            held[task_id] = (event.at, event.actor, str(event.data.get("reason") or ""))
    return held


def with_hold(record: TaskRecord, hold: Hold | None) -> TaskRecord:
    """``record`` with its zombietop-side hold, if any."""
    if hold is None:
        return record
    at, actor, reason = hold
    task = replace(record.task, quarantined_at=at, quarantined_by=actor, quarantine_reason=reason)
    return replace(record, task=task)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourcesRead:
    """What one read of every source found."""

    records: list[TaskRecord] = field(default_factory=list)
    """The tasks of the sources that could be read, on the store's clock."""
    origins: dict[str, Origin] = field(default_factory=dict)
    """By task id, where each task came from."""
    owners: dict[str, Source] = field(default_factory=dict)
    """By task id, the source each task came from."""
    errors: dict[str, str] = field(default_factory=dict)
    """By source name, why that source could not be read (what, where, what to do)."""
    notes: dict[str, str] = field(default_factory=dict)
    """By source name, what a source that was read skipped (a source's ``notes``, such as
    RQ's keys of another type than RQ writes): the rest of it was read."""
    seconds: float = 0.0
    """How long the read of every source took: it is no part of the store's own lag."""
    workers: list[EngineWorker] = field(default_factory=list)
    """The workers of the sources that were read and know theirs (``ListsWorkers``), their
    beats on the store's clock."""


def source_words(source: Source, exc: ZombietopError) -> str:
    """The error of one source, always naming it."""
    said = str(exc)
    return said if said.startswith(f"source {source.name}") else f"source {source.name}: {said}"


async def read_sources(
    sources: Sequence[Source],
    store_now: float,
    since: float | None,
    host: str,
    holds: Mapping[str, Hold] | None = None,
    kills: Mapping[str, PendingKill] | None = None,
    *,
    deadline: float | None = None,
) -> SourcesRead:
    """Read every source at ``store_now``: the records on the store's clock (with their
    zombietop-side ``holds`` and the ``kills`` zombietop's store keeps of them), each task's
    origin, which source each task came from, and the error of each source that could not be
    read. One source that cannot be read hides nothing of the others.

    The sources are read side by side, each for at most ``deadline`` seconds: one that does
    not answer in time (a broker that hangs) counts as unread, and delays nothing else.
    """
    holds = holds or {}
    kills = kills or {}
    found = SourcesRead()
    started = time.perf_counter()
    reads = await asyncio.gather(
        *(_read_one(source, store_now, since, host, deadline) for source in sources)
    )
    for source, (read, offset, error) in zip(sources, reads, strict=True):
        if error is not None:
            found.errors[source.name] = error
            continue
        if isinstance(source, ListsWorkers):
            found.workers.extend(on_clock(worker, offset) for worker in source.workers())
        skipped: Sequence[str] = getattr(source, "notes", ())
        if skipped:
            found.notes[source.name] = f"source {source.name}: {'; '.join(skipped)}"
        for one in read:
            record = one.record if offset == 0.0 else shifted(one.record, offset)
            record = with_hold(record, holds.get(record.task.task_id))
            kill = kills.get(record.task.task_id)
            if kill is not None and kill.source == source.name:
                record = replace(record, pending_kill=kill)
            found.records.append(record)
            found.origins[record.task.task_id] = one.origin
            found.owners[record.task.task_id] = source
    return replace(found, seconds=time.perf_counter() - started)


def on_clock(worker: EngineWorker, offset: float) -> EngineWorker:
    """``worker`` with its last beat moved by ``offset`` seconds (to the store's clock)."""
    if offset == 0.0 or worker.last_beat is None:
        return worker
    return replace(worker, last_beat=worker.last_beat + offset)


async def _read_one(
    source: Source, store_now: float, since: float | None, host: str, deadline: float | None
) -> tuple[Sequence[SourceRecord], float, str | None]:
    """One source's records and its clock's offset from the store's, or why it gave none."""

    async def read() -> tuple[Sequence[SourceRecord], float]:
        offset = store_now - await source.now()
        if abs(offset) < CLOCK_TOLERANCE:
            offset = 0.0
        return await source.poll(None if since is None else since - offset, host), offset

    try:
        records, offset = await asyncio.wait_for(read(), deadline)
    except ZombietopError as exc:
        return (), 0.0, source_words(source, exc)
    except TimeoutError:
        return (
            (),
            0.0,
            (
                f"source {source.name} did not answer within {deadline:g}s; its tasks are "
                "judged again once it does (is its database or broker up and reachable?)"
            ),
        )
    return records, offset, None


async def open_or_later(source: Source) -> None:
    """Open ``source``; one that cannot be opened yet is tried again at each poll, which says
    why it cannot be read (a source that cannot be read hides nothing else)."""
    with contextlib.suppress(SourceError):
        await source.open()


@contextlib.asynccontextmanager
async def open_sources(settings: Sequence[SourceEntry]) -> AsyncIterator[list[Source]]:
    """Open every source in ``settings`` (read-only), and close them all after; a source that
    cannot be opened now is opened by its first read that can (``open_or_later``)."""
    opened: list[Source] = []
    try:
        for entry in settings:
            source = open_source(entry.url, heartbeat_timeout=entry.heartbeat_timeout)
            opened.append(source)
            await open_or_later(source)
        yield opened
    finally:
        for source in opened:
            await source.close()
