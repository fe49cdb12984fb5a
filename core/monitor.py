"""The one async facade the faces use: poll the store, probe processes, classify, snapshot.

A poll never raises for a store problem: it returns the last good snapshot marked with the
error, so a dashboard keeps showing data and says how old it is and why.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from core.classify import Verdict, classify, sort_key
from core.clock import Clock, SystemClock
from core.config import Config, Limits
from core.errors import ZombietopError
from core.model import (
    Event,
    Health,
    Heartbeat,
    HistoryPoint,
    Lease,
    PendingKill,
    ProcessSample,
    Task,
    TaskRecord,
    TaskState,
)
from core.store import Store


class ProcessProbe(Protocol):
    """Samples the local processes behind tasks (the psutil probe implements this)."""

    async def sample(self, tasks: Sequence[Task]) -> Mapping[str, ProcessSample]:
        """Return a sample per task id for the tasks whose process this host can see."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskView:
    """One task as the faces see it: what the store holds plus the verdict."""

    task: Task
    lease: Lease | None
    heartbeat: Heartbeat | None
    process: ProcessSample | None
    limits: Limits
    verdict: Verdict
    pending_kill: PendingKill | None = None

    @property
    def task_id(self) -> str:
        return self.task.task_id

    @property
    def health(self) -> Health:
        return self.verdict.health

    @property
    def token(self) -> int | None:
        return None if self.lease is None else self.lease.token


def _zero_counts() -> dict[Health, int]:
    return dict.fromkeys(Health, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """Every task with its verdict, most urgent first, as of one poll."""

    taken_at: float | None
    """Store time of the poll these tasks come from (None before the first success)."""
    tasks: tuple[TaskView, ...] = ()
    counts: Mapping[Health, int] = field(default_factory=_zero_counts)
    error: str | None = None
    """Why the latest poll failed; the tasks are then from the last good poll."""
    failed_at: float | None = None
    poll_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def paging(self) -> int:
        """How many tasks are dead, stalled or reclaimable."""
        return sum(n for health, n in self.counts.items() if health.pages)

    def age(self, now: float) -> float | None:
        """Seconds since the data was read, by the caller's clock."""
        return None if self.taken_at is None else now - self.taken_at

    def by_id(self) -> dict[str, TaskView]:
        return {view.task_id: view for view in self.tasks}


def build_snapshot(
    now: float,
    records: Sequence[TaskRecord],
    config: Config,
    samples: Mapping[str, ProcessSample],
) -> Snapshot:
    """Classify every record at ``now`` and order them most urgent first (pure)."""
    views: dict[str, TaskView] = {}
    for record in records:
        limits = config.limits_for(record.task.step_type)
        process = samples.get(record.task.task_id)
        verdict = classify(now, record.task, record.lease, record.heartbeat, process, limits)
        views[record.task.task_id] = TaskView(
            task=record.task,
            lease=record.lease,
            heartbeat=record.heartbeat,
            process=process,
            limits=limits,
            verdict=verdict,
            pending_kill=record.pending_kill,
        )
    # A second look for queued tasks: say which upstream they wait behind, and in what state.
    for task_id, view in list(views.items()):
        task = view.task
        if task.state is not TaskState.QUEUED or not task.upstream:
            continue
        waiting = [
            (upstream, views[upstream].health)
            for upstream in task.upstream
            if upstream in views and views[upstream].health is not Health.SUCCEEDED
        ]
        if waiting:
            verdict = classify(
                now, task, view.lease, view.heartbeat, view.process, view.limits, waiting_on=waiting
            )
            views[task_id] = replace(view, verdict=verdict)
    ordered = tuple(sorted(views.values(), key=lambda v: sort_key(v.task_id, v.verdict)))
    counts = _zero_counts()
    counts.update(Counter(view.health for view in ordered))
    return Snapshot(taken_at=now, tasks=ordered, counts=counts)


class Monitor:
    """Poll a store at the configured interval and hand out immutable snapshots."""

    def __init__(
        self,
        store: Store,
        config: Config,
        *,
        probe: ProcessProbe | None = None,
        clock: Clock | None = None,
        include_finished: bool = False,
    ) -> None:
        self.store = store
        self.config = config
        self.probe = probe
        self.clock = clock or SystemClock()
        self.include_finished = include_finished
        self.last: Snapshot = Snapshot(taken_at=None)

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    async def poll(self) -> Snapshot:
        """Take one snapshot; on a store error keep the last good tasks and say why."""
        started = time.perf_counter()
        try:
            now = await self.store.now()
            since = None if self.include_finished else now - self.config.finished_window
            records = await self.store.poll(since)
            samples: Mapping[str, ProcessSample] = {}
            if self.probe is not None:
                samples = await self.probe.sample([r.task for r in records if r.task.pid is not None])
            # Classifying thousands of tasks is CPU work: keep it off the caller's event loop.
            snapshot = await asyncio.to_thread(build_snapshot, now, records, self.config, samples)
        except ZombietopError as exc:
            self.last = replace(self.last, error=str(exc), failed_at=self.clock.now())
            return self.last
        self.last = replace(snapshot, poll_seconds=time.perf_counter() - started)
        return self.last

    async def snapshots(self, interval: float | None = None) -> AsyncIterator[Snapshot]:
        """Yield a snapshot, wait ``interval`` (default: the config's refresh), repeat.

        The wait starts after the poll finishes, so polls never overlap.
        """
        delay = self.config.refresh if interval is None else interval
        while True:
            yield await self.poll()
            await asyncio.sleep(delay)

    async def history(self, task_id: str) -> list[HistoryPoint]:
        return await self.store.heartbeat_history(task_id)

    async def events(self, task_id: str | None = None, limit: int = 100) -> list[Event]:
        return await self.store.events(task_id=task_id, limit=limit)
