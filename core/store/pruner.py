"""Retention: tasks finished longer ago than ``[store] keep_finished`` leave the store, and so
do the events of a read-only source's task (an Airflow task instance) once its newest is as old
and nothing of it is open: no open incident, no hold, no open kill or request, no ack in force.

Who prunes: the active watchdog (the one holding the store's watchdog lease), and each agent
while no watchdog holds it, so a fleet with agents only is pruned too. Each does a pass soon
after it starts and then every ``PRUNE_EVERY``, in the background of its own loop.

A pass is many small batches, each one short write transaction (``Store.prune_finished``).
After a whole pass, a PostgreSQL store also makes its event log's coming days and drops its
past ones whole (``Store.keep_partitions``, ``pg_partitions``).
Between two batches the pruner waits at least as long as the last batch held the store, and at
least ``PAUSE_MIN``: a writer waiting on SQLite's lock retries every 100 ms at most, so it
always gets its turn, and a job's heartbeat is never held up by more than one batch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from zombietop.durations import format_duration
from zombietop.errors import StoreError
from zombietop.store import Store
from zombietop.store.interface import FinishedKey

PRUNE_EVERY = 3600.0
"""Seconds between two passes of one pruner."""
PRUNE_BATCH = 25
"""Tasks one batch removes: a batch's deletes touch pages all over the file, so its commit
grows with it; 25 hold SQLite's lock for 20-30 ms (docs/benchmarks.md, section 15)."""
PAUSE_MIN = 0.1
"""Seconds between two batches at least: longer than SQLite's longest busy-handler sleep."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneRun:
    """What one pass removed, and the longest a batch held the store."""

    tasks: int = 0
    source_tasks: int = 0
    """Tasks of read-only sources whose events (and the rest kept of them) were removed."""
    batches: int = 0
    longest_batch_s: float = 0.0
    finished: bool = True
    """False when the pass stopped early (asked to, or out of time): the next one goes on."""
    days_dropped: int = 0
    """Days of the event log dropped whole after the pass (PostgreSQL's day partitions)."""

    def words(self, keep: float) -> str:
        """``pruned 1200 tasks finished over 30d ago (6 batches, longest 31 ms)``, and
        ``, and the events of 40 source tasks quiet as long`` when there were any."""
        sources = ""
        if self.source_tasks:
            plural = "s" if self.source_tasks != 1 else ""
            sources = f", and the events of {self.source_tasks} source task{plural} quiet as long"
        if self.days_dropped:
            plural = "s" if self.days_dropped != 1 else ""
            sources += f", and dropped {self.days_dropped} day{plural} of events"
        return (
            f"pruned {self.tasks} task{'s' if self.tasks != 1 else ''} finished over "
            f"{format_duration(keep)} ago{sources} ({self.batches} batches, longest "
            f"{self.longest_batch_s * 1000:.0f} ms)"
        )


async def prune(
    store: Store,
    keep: float,
    *,
    batch: int = PRUNE_BATCH,
    stop: asyncio.Event | None = None,
    budget: float | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> PruneRun:
    """Remove every task finished over ``keep`` seconds ago that nothing needs, batch by batch;
    stop early when ``stop`` is set or after ``budget`` seconds."""
    before = await store.now() - keep
    started = monotonic()
    after: FinishedKey | None = None
    after_source: str | None = None
    """Set once the store's own tasks are done: the last source task removed ("" for none)."""
    tasks = source_tasks = batches = 0
    longest = 0.0
    while True:
        asked = monotonic()
        if after_source is None:
            done = await store.prune_finished(before, limit=batch, after=after)
            removed, after = done.task_ids, done.last
            tasks += len(removed)
            if not removed:
                after_source = ""  # on to the sources' tasks
                continue
        else:
            removed, next_source = await store.prune_source_tasks(
                before, limit=batch, after=after_source
            )
            if next_source is None:
                # Only after a whole pass: what is left of a task in a past day is then
                # of a task the store keeps, and that day waits for it.
                days = await store.keep_partitions(before)
                return PruneRun(
                    tasks=tasks,
                    source_tasks=source_tasks,
                    batches=batches,
                    longest_batch_s=longest,
                    days_dropped=len(days.dropped),
                )
            source_tasks += len(removed)
            after_source = next_source
        held = monotonic() - asked
        batches, longest = batches + 1, max(longest, held)
        out_of_time = budget is not None and monotonic() - started >= budget
        if out_of_time or await _stopped(stop, max(held, PAUSE_MIN)):
            return PruneRun(
                tasks=tasks,
                source_tasks=source_tasks,
                batches=batches,
                longest_batch_s=longest,
                finished=False,
            )


async def keep_pruning(
    store: Store,
    keep: float,
    *,
    may_prune: Callable[[], Awaitable[bool]],
    log: Callable[[str], None],
    stop: asyncio.Event,
    first_after: float,
    every: float = PRUNE_EVERY,
) -> None:
    """Prune ``first_after`` seconds from now, then every ``every``, until ``stop``; only while
    ``may_prune`` says this process is the one to. A store error is said and tried next time."""
    wait = first_after
    while not await _stopped(stop, wait):
        wait = every
        try:
            if not await may_prune():
                continue
            run = await prune(store, keep, stop=stop)
        except StoreError as exc:
            log(f"could not prune finished tasks ({exc}); trying again in {format_duration(every)}")
            continue
        if run.tasks or run.source_tasks or run.days_dropped:
            log(run.words(keep))


async def _stopped(stop: asyncio.Event | None, seconds: float) -> bool:
    """Wait ``seconds``; True as soon as ``stop`` is set."""
    if stop is None:
        await asyncio.sleep(seconds)
        return False
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True
