"""The one async facade the faces use: poll the store, probe processes, classify, snapshot.

A poll never raises for a store problem: it returns the last good snapshot marked with the
error, so a dashboard keeps showing data and says how old it is and why.

The snapshot and its views are built in ``zombietop.judge.snapshot``, the reusing monitor's fast
path is ``zombietop.judge.reuse``; the names faces import come from here as well.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Protocol

from zombietop.clock import Clock, SystemClock
from zombietop.config import Config
from zombietop.errors import ZombietopError
from zombietop.fleet import HostRequest
from zombietop.health import Health
from zombietop.judge.flip_book import FlipBook
from zombietop.judge.job_book import JobBook
from zombietop.judge.oncall_reader import OnCallReader
from zombietop.judge.orphan_watch import OrphanWatch
from zombietop.judge.quiet import FOUND_AT_MOST, Counted, quiet_bounds
from zombietop.judge.reuse import KeptSnapshot
from zombietop.judge.snapshot import (
    Fleet,
    Snapshot,
    TaskView,
    agent_note,
    build_snapshot,
    probed_here,
)
from zombietop.judge.source_limits import JudgingConfig
from zombietop.model import (
    Event,
    EventKind,
    HistoryPoint,
    PollChanges,
    ProcessSample,
    Task,
    TaskRecord,
)
from zombietop.output import LastOutput, last_output_of
from zombietop.procs import this_host
from zombietop.sources import Source, SourcesRead, read_holds, read_sources
from zombietop.store import Store

__all__ = [
    "Fleet",
    "Monitor",
    "ProcessProbe",
    "Snapshot",
    "TaskView",
    "agent_note",
    "build_snapshot",
]


def with_counted(snapshot: Snapshot, counted: Counted) -> Snapshot:
    """``snapshot`` with what its poll counted instead of reading: the quiet tasks join its
    counts by health; the unread ones are in no count (``Counted.unread`` says how many)."""
    counts = dict(snapshot.counts)
    for health, tasks in counted.quiet.items():
        counts[health] = counts.get(health, 0) + tasks
    return replace(snapshot, counts=counts, counted=counted)


class ProcessProbe(Protocol):
    """Samples the local processes behind tasks (the psutil probe implements this)."""

    async def sample(self, tasks: Sequence[Task]) -> Mapping[str, ProcessSample]:
        """Return a sample per task id for the tasks whose process this host can see."""
        ...


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
        host: str | None = None,
        reuse_verdicts: bool = False,
        own_thread: bool = False,
        sources: Sequence[Source] = (),
        source_deadline: float | None = None,
        count_flips: bool = True,
    ) -> None:
        self.store = store
        self.config = config
        self.sources = tuple(sources)
        """Read-only engine databases whose tasks join the store's every poll."""
        self.source_deadline = source_deadline
        """Seconds a source may take to answer a poll before it counts as unread (None: no
        limit); the watchdog's is its interval."""
        self.source_of: dict[str, Source] = {}
        """By task id, the source each task of the last poll came from (the store's: absent)."""
        self._judging = JudgingConfig()
        self._source_tasks: dict[str, set[str]] = {}
        """By source name, the task ids of its last good read (``Snapshot.unread``)."""
        self.probe = probe
        self.host = host or getattr(probe, "host", None) or this_host()
        self.clock = clock or SystemClock()
        self.include_finished = include_finished
        self.reuse_verdicts = reuse_verdicts
        """Keep a task's verdict until its ``stable_until`` while its inputs stay the same (the
        dashboard). The watchdog and ``status`` classify afresh every poll."""
        self.own_thread = own_thread
        """The caller's event loop runs on a thread of its own (the dashboard's monitor): classify
        right there instead of handing the work to yet another thread."""
        self.last: Snapshot = Snapshot(taken_at=None)
        self._by_id: dict[str, TaskView] = {}
        self._kept: KeptSnapshot | None = None
        """The last snapshot's views, for judging only what changed (a reusing monitor)."""
        self._orphans = OrphanWatch()
        """Which finished tasks' processes are still sampled, to find those that live on."""
        self.job_book = JobBook()
        """Every job's summary, read incrementally each poll."""
        self.oncall_reader = OnCallReader(store)
        """Reads the acks, silences and schedules that each snapshot carries."""
        self._loud: set[str] = set()
        """The active tasks a poll of a large store read: read again at the next, so that one
        that went quiet is seen to (its page closes as recovered, its flip is counted)."""
        self._active: int | None = None
        """How many tasks the store held active at the last poll (None: not read yet): more
        than ``read_at_most``, and a poll reads only the loud ones (``zombietop.judge.quiet``)."""
        self._find = ""
        """The dashboard's filter text (``find``): a poll that counts quiet tasks reads those
        whose id or stage holds it."""
        self.flip_book = FlipBook() if count_flips else None
        """Each task's flips, read from the watchdog's transitions, for the flag ``flapping``
        (None: the watchdog's own monitor, whose ``FlapWatch`` counts them as it sees them)."""

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    def find(self, text: str) -> None:
        """From the next poll on, read the quiet tasks whose id or stage holds ``text`` (any
        case), which a poll of a large store only counts, so the dashboard's filter finds them
        ("": read none)."""
        self._find = text

    async def poll(self) -> Snapshot:
        """Take one snapshot; on a store error keep the last good tasks and say why."""
        started = time.perf_counter()
        kept, self._kept = self._kept, None
        try:
            self.store.check_path()
            now = await self.store.now()
            records, changes, config, read, counted = await self._records(now)
            if kept is not None and not kept.follows(changes, config):
                kept = None
            samples = await self._samples(now, records, changes, kept)
            fleet = await self._fleet(None if counted is None else records)
            quiet = not fleet.agents and not fleet.requests
            if changes is None or not quiet:
                kept = None
            await self.job_book.refresh(self.store)
            self.job_book.fold_source_runs((r.task for r in read.records), now)
            snapshot = await self._snapshot(now, records, config, samples, fleet, kept, changes)
            if counted is not None:
                snapshot = with_counted(snapshot, counted)
            owners = {task_id: source.name for task_id, source in read.owners.items()}
            oncall, schedules = await self.oncall_reader.read(now, self.config, owners)
            if self.flip_book is not None:
                await self.flip_book.read(self.store, now, self.config)
        except ZombietopError as exc:
            self.last = replace(self.last, error=str(exc), failed_at=self.clock.now())
            return self.last
        marked = snapshot if self.flip_book is None else self.flip_book.mark(snapshot, now)
        self.last = replace(
            marked,
            # The sources' read is theirs: a source that hangs is no lag of the store's.
            poll_seconds=time.perf_counter() - started - read.seconds,
            oncall=oncall,
            schedules=schedules,
            origins=read.origins,
            source_errors=read.errors,
            source_notes=read.notes,
            workers=tuple(read.workers),
            unread=self._unread(read),
            jobs=self.job_book.jobs,
            trace_url=self.config.otel.trace_url,
        )
        if kept is not None:
            self._kept, self._by_id = kept, kept.by_id
        elif self.reuse_verdicts:
            self._by_id = snapshot.by_id()
            if changes is not None and quiet:
                self._kept = KeptSnapshot(
                    snapshot, records, self.config, samples, changes.poll, self.host
                )
        return self.last

    async def glance(self, limit: int) -> Snapshot | None:
        """A first screenful before the first whole poll: the ``limit`` active tasks of the
        store whose last sign of life is oldest, judged as a poll judges them (their processes
        probed, acks and silences read), and how many tasks are active (``glance_of``).

        None when a poll would show no less (no more than ``limit`` tasks are active), when
        sources are read (their tasks would be missing from a glance of the store), or when
        the store cannot be read now (the poll then says why).
        """
        if self.sources:
            return None
        try:
            now = await self.store.now()
            active, records = await self.store.glance(limit)
            if active <= limit:
                return None
            local = [r.task for r in records if probed_here(r.task, self.host)]
            samples = await self.probe.sample(local) if self.probe is not None else {}
            fleet = await self._fleet(records)
            snapshot = build_snapshot(now, records, self.config, samples, fleet)
            oncall, schedules = await self.oncall_reader.read(now, self.config, {})
        except ZombietopError:
            return None
        return replace(snapshot, oncall=oncall, schedules=schedules, glance_of=active)

    async def _records(
        self, now: float
    ) -> tuple[list[TaskRecord], PollChanges | None, Config, SourcesRead, Counted | None]:
        """Read the store's tasks and every source's: the records, what changed in the store
        since its last poll, the config to judge the records by, what the sources' read found
        (where each task came from, and which source could not be read), and for a large
        store what it counted instead of reading."""
        since = None if self.include_finished else now - self.config.finished_window
        records, changes, counted = await self._store_records(now, since)
        if not self.sources:
            return records, changes, self.config, SourcesRead(), counted
        read = await read_sources(
            self.sources,
            now,
            since,
            self.host,
            await read_holds(self.store),
            await self.store.source_kills(since),
            deadline=self.source_deadline,
        )
        self.source_of = read.owners
        config = self._judging(self.config, [r.task for r in read.records], self.source_of)
        # Sources have no change feed: their records join the store's, judged afresh.
        return [*records, *read.records], None, config, read, counted

    async def _store_records(
        self, now: float, since: float | None
    ) -> tuple[list[TaskRecord], PollChanges | None, Counted | None]:
        """The store's tasks: every one while it holds at most ``read_at_most`` active tasks
        (or cannot count, ``Store.counts_quiet``), else the loud ones and a count of the quiet
        (``zombietop.judge.quiet``)."""
        limit = self.config.read_at_most
        whole = not self.store.counts_quiet
        if not whole:
            if self._active is None:
                self._active = await self.store.count_active()
            whole = self._active <= limit
        if whole:
            records = await self.store.poll(since)
            self._active = sum(1 for record in records if not record.task.state.finished)
            return records, self.store.poll_changes(), None
        bounds = quiet_bounds(now, self.config, self.host).params()
        loud = await self.store.poll_loud(since, bounds, limit, self._loud)
        self._active = loud.active
        active = {r.task.task_id for r in loud.records if not r.task.state.finished}
        self._loud = active - loud.gone_quiet
        read = len(self._loud)
        found, more = await self._found(bounds, loud.records)
        # A task found is listed, so no longer counted (never below none: a task may change
        # between the reads).
        states = Counter(record.task.state for record in found)
        quiet = {
            health: max(0, loud.quiet.get(state, 0) - states[state])
            for state, health in Health.of_quiet().items()
        }
        counted = Counted(
            quiet=quiet,
            unread=max(0, loud.loud - read),
            read_at_most=limit,
            found=len(found),
            found_more=more,
        )
        return [*loud.records, *found], None, counted

    async def _found(
        self, bounds: dict[str, float | str], read: Sequence[TaskRecord]
    ) -> tuple[list[TaskRecord], bool]:
        """The quiet tasks whose id or stage holds the ``find`` text, but those already
        ``read``; and whether more hold it than ``FOUND_AT_MOST``."""
        if not self._find:
            return [], False
        # One more than the bound says whether there are more, without counting them all.
        found = await self.store.find_quiet(self._find, bounds, FOUND_AT_MOST + 1)
        more = len(found) > FOUND_AT_MOST
        listed = {record.task.task_id for record in read}
        return [r for r in found[:FOUND_AT_MOST] if r.task.task_id not in listed], more

    def _unread(self, read: SourcesRead) -> frozenset[str]:
        """The tasks of the sources that could not be read, as of their last good read (and
        remember what each source that was read holds now)."""
        held: dict[str, set[str]] = {
            source.name: set() for source in self.sources if source.name not in read.errors
        }
        for task_id, source in read.owners.items():
            held[source.name].add(task_id)
        self._source_tasks.update(held)
        return frozenset(
            task_id for name in read.errors for task_id in self._source_tasks.get(name, ())
        )

    async def _samples(
        self,
        now: float,
        records: Sequence[TaskRecord],
        changes: PollChanges | None,
        kept: KeptSnapshot | None,
    ) -> Mapping[str, ProcessSample]:
        """Sample the processes of the tasks that run on this host."""
        if self.probe is None:
            return {}
        local = (
            [r.task for r in records if probed_here(r.task, self.host)]
            if kept is None or changes is None
            else kept.local_tasks(changes)
        )
        local = self._orphans.keep(local, now, self.source_of)
        samples = await self.probe.sample(local)
        self._orphans.saw(local, samples)
        return samples

    async def _snapshot(
        self,
        now: float,
        records: Sequence[TaskRecord],
        config: Config,
        samples: Mapping[str, ProcessSample],
        fleet: Fleet,
        kept: KeptSnapshot | None,
        changes: PollChanges | None,
    ) -> Snapshot:
        """Judge the tasks at ``now``: only what changed when ``kept`` follows ``changes``,
        every task otherwise."""
        if kept is not None and changes is not None:
            # The store says what changed since the last snapshot: judge only that.
            follow = partial(kept.follow, now, changes, samples, fleet, self.job_book.jobs)
            return follow() if self.own_thread else await asyncio.to_thread(follow)
        previous = self._by_id if self.reuse_verdicts else None
        build = partial(
            build_snapshot, now, records, config, samples, fleet, jobs=self.job_book.jobs
        )
        if self.own_thread:
            return build(previous=previous)
        # Classifying thousands of tasks is CPU work: keep it off the caller's loop.
        return await asyncio.to_thread(build, previous=previous)

    async def _fleet(self, read: Sequence[TaskRecord] | None = None) -> Fleet:
        """The agents, their samples and the open requests (``read``: the samples of only
        these tasks, for a poll that did not read every task)."""
        agents = {agent.host: agent for agent in await self.store.agents()}
        requests: dict[str, HostRequest] = {}
        for request in await self.store.open_host_requests():
            requests.setdefault(request.task_id, request)
        task_ids = None if read is None else [record.task.task_id for record in read]
        samples = await self.store.process_samples(task_ids) if agents else {}
        return Fleet(host=self.host, agents=agents, samples=samples, requests=requests)

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

    async def latest_ended_runs(
        self, per_job: int, changed_after: float | None = None
    ) -> dict[str, list[Task]]:
        """By job, its latest ``per_job`` ended runs in the store, newest first (the jobs view);
        with ``changed_after``, only of the jobs whose summary changed at or after it."""
        return await self.store.latest_ended_runs(per_job, changed_after)

    async def job_runs(self, job: str, limit: int) -> list[Task]:
        """The latest ``limit`` runs of ``job``, newest first (a job's history)."""
        return await self.store.job_runs(job, limit)

    async def last_output(self, task: Task) -> LastOutput | None:
        """The kept output of a task run by ``zombietop run`` on this host (a file read)."""
        return await asyncio.to_thread(last_output_of, self.store, task, self.host)

    async def events(
        self, task_id: str | None = None, limit: int = 100, *, renewals: bool = False
    ) -> list[Event]:
        """Newest first. Lease renewals, several a second in a busy store, are left out unless
        asked for: they would push every transition and action out of sight."""
        skip = None if renewals else EventKind.LEASE_RENEWED
        return await self.store.events(task_id=task_id, limit=limit, skip_kind=skip)
