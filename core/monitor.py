"""The one async facade the faces use: poll the store, probe processes, classify, snapshot.

A poll never raises for a store problem: it returns the last good snapshot marked with the
error, so a dashboard keeps showing data and says how old it is and why.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from heapq import heapify, heappop, heappush
from operator import attrgetter
from typing import Protocol

from zombietop.classify import INF, Verdict, classify, sort_key
from zombietop.clock import Clock, SystemClock
from zombietop.config import Config, Limits, Schedule
from zombietop.durations import format_age
from zombietop.errors import StoreError, ZombietopError
from zombietop.model import (
    AgentPresence,
    Event,
    EventKind,
    Health,
    Heartbeat,
    HistoryPoint,
    HostRequest,
    Lease,
    PendingKill,
    PollChanges,
    ProcessSample,
    StoredSample,
    Task,
    TaskRecord,
    TaskState,
)
from zombietop.oncall import OnCall, current
from zombietop.output import LastOutput, last_output_of
from zombietop.procs import this_host
from zombietop.schedules import ScheduleHealth, ScheduleView, judge, order
from zombietop.sources import JudgingConfig, Origin, Source, read_holds, read_sources
from zombietop.store import Store


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
    remote: bool = False
    """The task runs on another host than this monitor's: its process is seen by that host's
    agent (``process`` is then the agent's stored sample, or None without a live agent)."""
    agent: AgentPresence | None = None
    """The agent of the task's host, if one ever reported."""
    host_request: HostRequest | None = None
    """An action asked for elsewhere and still owed by the agent of the task's host."""
    agent_note: str | None = None
    """``waiting for agent on HOST ...`` or ``no agent on HOST ...``; None when all is in hand."""
    waiting_on: tuple[tuple[str, Health], ...] = ()
    """The upstream tasks a queued task waits behind, with their healths."""

    task_id: str = field(init=False, repr=False, compare=False)
    """The task's id, read thousands of times a poll (a plain slot, not a property)."""
    urgency: tuple[int, float, str] = field(init=False, repr=False, compare=False)
    """Where the task sorts, most urgent first (``sort_key`` of its verdict), kept with it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_id", self.task.task_id)
        object.__setattr__(self, "urgency", sort_key(self.task.task_id, self.verdict))

    @property
    def clock_skew_s(self) -> float | None:
        """How far the worker's clock is ahead of the store's, from its latest heartbeat."""
        return None if self.heartbeat is None else self.heartbeat.clock_skew_s

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
    quarantined: int = 0
    """How many unfinished tasks are quarantined, whatever their health reads: a stalled task
    the watchdog quarantined still reads ``stalled``, and counts here too."""
    error: str | None = None
    """Why the latest poll failed; the tasks are then from the last good poll."""
    failed_at: float | None = None
    poll_seconds: float = 0.0
    host: str | None = None
    """The host this snapshot was taken on (whose processes it probed itself)."""
    agents: tuple[AgentPresence, ...] = ()
    """Every host whose agent ever reported, by host name."""
    oncall: OnCall = field(default_factory=lambda: OnCall(at=0.0))
    """The acks and silences in force as of this poll."""
    schedules: tuple[ScheduleView, ...] = ()
    """Every configured schedule, most urgent first."""
    origins: Mapping[str, Origin] = field(default_factory=dict)
    """By task id, the tasks read from a source other than the store (an engine's database)."""

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def missed(self) -> int:
        """How many schedules are missed."""
        return sum(1 for view in self.schedules if view.health is ScheduleHealth.MISSED)

    @property
    def silenced(self) -> int:
        """How many tasks that would page are held by a silence."""
        return sum(
            1
            for view in self.tasks
            if view.health.pages and self.oncall.silence_for(view.task) is not None
        )

    @property
    def paging(self) -> int:
        """How many tasks are dead, stalled or reclaimable."""
        return sum(n for health, n in self.counts.items() if health.pages)

    def age(self, now: float) -> float | None:
        """Seconds since the data was read, by the caller's clock."""
        return None if self.taken_at is None else now - self.taken_at

    def by_id(self) -> dict[str, TaskView]:
        return {view.task_id: view for view in self.tasks}


@dataclass(frozen=True, slots=True, kw_only=True)
class Fleet:
    """What the store says about other hosts: their agents, samples and owed actions."""

    host: str
    """This monitor's host: its tasks are probed here, everyone else's by their agents."""
    agents: Mapping[str, AgentPresence] = field(default_factory=dict)
    samples: Mapping[str, StoredSample] = field(default_factory=dict)
    requests: Mapping[str, HostRequest] = field(default_factory=dict)
    """The oldest open request per task id."""

    def remote_sample(self, now: float, task: Task) -> ProcessSample | None:
        """The agent's sample of a remote task's process, if it is current and about that PID.

        A sample is only as good as the agent behind it: once the agent is gone it says nothing
        about the process now, and the task is judged on its heartbeat and lease alone.
        """
        stored = self.samples.get(task.task_id)
        agent = self.agents.get(task.host or "")
        if stored is None or agent is None or not agent.present(now):
            return None
        if stored.sample.pid != task.pid or now - stored.written_at > agent.absent_after():
            return None
        return stored.sample


def agent_note(
    now: float,
    task: Task,
    agent: AgentPresence | None,
    request: HostRequest | None,
    *,
    remote: bool,
) -> str | None:
    """Say when a task depends on an agent that is busy or missing (pure)."""
    host = task.host
    if host is None:
        return None
    present = agent is not None and agent.present(now)
    if request is not None:
        asked = f"{request.kind} requested {format_age(max(now - request.requested_at, 0))} ago"
        if present:
            return f"waiting for agent on {host}: {asked}"
        return f"no agent on {host}: {asked} waits for one"
    # Only a task that should have a live process there needs the agent's eyes.
    if not remote or present or not task.state.executing or task.pid is None:
        return None
    if agent is None:
        return f"no agent on {host}: none has ever reported, so its process is not seen"
    if agent.stopped_at is not None:
        return f"no agent on {host}: stopped {format_age(max(now - agent.stopped_at, 0))} ago"
    return f"no agent on {host}: last seen {format_age(max(now - agent.seen_at, 0))} ago"


class _Judge:
    """Judge tasks at one ``now`` against one poll's samples and fleet."""

    def __init__(
        self,
        now: float,
        config: Config,
        samples: Mapping[str, ProcessSample],
        fleet: Fleet | None,
    ) -> None:
        self.now = now
        self.config = config
        self.samples = samples
        self.fleet = fleet
        # Without agents or owed requests (one host, or a fleet at peace) a task's fleet notes
        # follow from the task alone, so an unchanged task needs no fleet lookups at all.
        self.quiet = fleet is None or (not fleet.agents and not fleet.requests)
        self._limits: dict[str, Limits] = {}

    def view(
        self,
        task: Task,
        lease: Lease | None,
        heartbeat: Heartbeat | None,
        pending_kill: PendingKill | None,
        seen: TaskView | None,
    ) -> TaskView:
        """Judge one task; keep ``seen``, its view at the last poll, while nothing it rests on
        has changed and its verdict is before its ``stable_until``."""
        now, samples, fleet = self.now, self.samples, self.fleet
        task_id = task.task_id
        limits = self._limits.get(task.step_type)
        if limits is None:
            limits = self._limits[task.step_type] = self.config.limits_for(task.step_type)
        unchanged = (
            seen is not None
            and seen.task is task
            and now < seen.verdict.stable_until
            and seen.lease is lease
            and seen.heartbeat is heartbeat
            and seen.pending_kill is pending_kill
            and seen.limits is limits
            and not _waits(task)
        )
        if unchanged and self.quiet and seen is not None and seen.agent is None:
            process = None if seen.remote else samples.get(task_id)
            if seen.host_request is None and seen.process == process:
                return seen
        remote = fleet is not None and task.host is not None and task.host != fleet.host
        process = samples.get(task_id)
        agent = request = None
        if fleet is not None:
            agent = fleet.agents.get(task.host or "")
            request = fleet.requests.get(task_id)
            if remote:
                process = fleet.remote_sample(now, task)
        note = agent_note(now, task, agent, request, remote=remote)
        if (
            unchanged
            and seen is not None
            and seen.agent_note == note
            and seen.host_request == request
            and seen.agent == agent
            and seen.process == process
        ):
            return seen
        return TaskView(
            task=task,
            lease=lease,
            heartbeat=heartbeat,
            process=process,
            limits=limits,
            verdict=classify(now, task, lease, heartbeat, process, limits),
            pending_kill=pending_kill,
            remote=remote,
            agent=agent,
            host_request=request,
            agent_note=note,
        )

    def wait(self, views: dict[str, TaskView], queued: Iterable[str]) -> None:
        """Say which upstream the ``queued`` tasks wait behind, and in what state (a second
        look, once every task in ``views`` is judged)."""
        for task_id in queued:
            view = views[task_id]
            waiting = tuple(
                (upstream, views[upstream].health)
                for upstream in view.task.upstream
                if upstream in views and views[upstream].health is not Health.SUCCEEDED
            )
            if waiting:
                verdict = classify(
                    self.now,
                    view.task,
                    view.lease,
                    view.heartbeat,
                    view.process,
                    view.limits,
                    waiting_on=waiting,
                )
                views[task_id] = replace(view, verdict=verdict, waiting_on=waiting)


def _waits(task: Task) -> bool:
    """True for a queued task with upstream: its verdict depends on other tasks' healths."""
    return task.state is TaskState.QUEUED and bool(task.upstream)


def _probed_here(task: Task, host: str) -> bool:
    """True for a task whose process this host's probe reads itself."""
    return task.pid is not None and task.host == host


def build_snapshot(
    now: float,
    records: Sequence[TaskRecord],
    config: Config,
    samples: Mapping[str, ProcessSample],
    fleet: Fleet | None = None,
    *,
    previous: Mapping[str, TaskView] | None = None,
) -> Snapshot:
    """Classify every record at ``now`` and order them most urgent first (pure).

    ``samples`` are this host's own probe readings; with a ``fleet``, tasks on other hosts use
    their agents' stored samples and carry an ``agent_note`` when an agent is busy or missing.

    With ``previous`` (the last snapshot's views by task id), a task whose record, judged
    process reading and fleet notes are unchanged, and whose verdict is still before its
    ``stable_until``, keeps its view: a fleet at rest costs what changed, not what exists.
    """
    judge = _Judge(now, config, samples, fleet)
    previous = previous or {}
    views: dict[str, TaskView] = {}
    for record in records:
        task = record.task
        views[task.task_id] = judge.view(
            task, record.lease, record.heartbeat, record.pending_kill, previous.get(task.task_id)
        )
    judge.wait(views, [task_id for task_id, view in views.items() if _waits(view.task)])
    ordered = tuple(sorted(views.values(), key=attrgetter("urgency")))
    counts = _zero_counts()
    counts.update(Counter([view.verdict.health for view in ordered]))
    return Snapshot(
        taken_at=now,
        tasks=ordered,
        counts=counts,
        quarantined=sum(map(_held, ordered)),
        host=None if fleet is None else fleet.host,
        agents=() if fleet is None else tuple(fleet.agents[h] for h in sorted(fleet.agents)),
    )


def _held(view: TaskView) -> bool:
    """True when the task is quarantined and not finished (``Snapshot.quarantined``)."""
    task = view.task
    return task.quarantined and not task.state.finished


_DUE_SLACK = 64
"""Entries a heap of due verdicts may hold beyond two per task before it is built afresh."""


def _due(views: Mapping[str, TaskView]) -> list[tuple[float, str]]:
    """A heap of when each verdict can next change with time alone (never: left out)."""
    due = [
        (view.verdict.stable_until, task_id)
        for task_id, view in views.items()
        if view.verdict.stable_until != INF
    ]
    heapify(due)
    return due


class _Kept:
    """A reusing monitor's last snapshot, kept so that the next poll judges only what may have
    changed since: the tasks the store read again, the verdicts that reached their
    ``stable_until``, the tasks with a local process sample (now or at the last poll) and the
    queued tasks with upstream. Every other task keeps its view, as ``build_snapshot`` with
    ``previous`` would keep it.

    Only for a quiet fleet (no agents, no owed requests): then a task's view follows from its
    record, its own sample and ``now``.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        records: Sequence[TaskRecord],
        config: Config,
        samples: Mapping[str, ProcessSample],
        poll: int,
        host: str,
    ) -> None:
        self.config = config
        self.poll = poll
        """The store poll (``PollChanges.poll``) these views come from."""
        self.host = host
        self.ordered = snapshot.tasks
        self.urgencies = [view.urgency for view in self.ordered]
        """The ``urgency`` of each view in ``ordered``, in order: where to find and put views."""
        self.by_id = snapshot.by_id()
        self.counts = dict(snapshot.counts)
        self.quarantined = snapshot.quarantined
        self.sampled = set(samples)
        self.waiting = {task_id for task_id, view in self.by_id.items() if _waits(view.task)}
        self.due = _due(self.by_id)
        """A heap of (stable_until, task id) of every view whose verdict can change with time
        alone, and of some replaced since (judging those again only costs the time)."""
        self.local = {
            record.task.task_id: record.task
            for record in records
            if _probed_here(record.task, self.host)
        }
        """The tasks whose process this host probes itself."""

    def follows(self, changes: PollChanges | None, config: Config) -> bool:
        """True when ``changes`` are against the poll these views come from."""
        return (
            changes is not None
            and changes.after is not None
            and changes.after == self.poll
            and config is self.config
        )

    def local_tasks(self, changes: PollChanges) -> list[Task]:
        """The tasks to probe after ``changes``."""
        local = self.local
        for task_id, record in changes.changed.items():
            if _probed_here(record.task, self.host):
                local[task_id] = record.task
            else:
                local.pop(task_id, None)
        for task_id in changes.dropped:
            local.pop(task_id, None)
        return list(local.values())

    def follow(
        self,
        now: float,
        changes: PollChanges,
        samples: Mapping[str, ProcessSample],
        fleet: Fleet,
    ) -> Snapshot:
        """The snapshot ``build_snapshot`` with ``previous`` would take at ``now``, judging only
        what may have changed (the fleet must be quiet)."""
        by_id, counts, judge = self.by_id, self.counts, _Judge(now, self.config, samples, fleet)
        out: list[TaskView] = []  # views leaving their place in the order: dropped, or replaced
        for task_id in changes.dropped:
            gone = by_id.pop(task_id, None)
            if gone is not None:
                counts[gone.health] -= 1
                self.quarantined -= _held(gone)
                out.append(gone)
        again = set(changes.changed)
        again.update(self.waiting, self.sampled, samples)
        due = self.due
        while due and due[0][0] <= now:
            again.add(heappop(due)[1])
        before: dict[str, TaskView | None] = {}
        for task_id in again:
            record = changes.changed.get(task_id)
            seen = by_id.get(task_id)
            if record is not None:
                view = judge.view(
                    record.task, record.lease, record.heartbeat, record.pending_kill, seen
                )
            elif seen is not None:
                view = judge.view(seen.task, seen.lease, seen.heartbeat, seen.pending_kill, seen)
            else:
                continue  # sampled or waiting at the last poll, gone since
            before[task_id] = seen
            by_id[task_id] = view
            if _waits(view.task):
                self.waiting.add(task_id)
            else:
                self.waiting.discard(task_id)
        self.waiting.intersection_update(by_id)
        judge.wait(by_id, self.waiting)
        moved: list[TaskView] = []
        for task_id, seen in before.items():
            view = by_id[task_id]
            if view is seen:
                continue
            if seen is not None:
                counts[seen.health] -= 1
                self.quarantined -= _held(seen)
                out.append(seen)
            counts[view.health] += 1
            self.quarantined += _held(view)
            moved.append(view)
            stable_until = view.verdict.stable_until
            if stable_until != INF and (seen is None or seen.verdict is not view.verdict):
                heappush(due, (stable_until, task_id))
        if len(due) > 2 * len(by_id) + _DUE_SLACK:
            # Verdicts replaced before they came due leave their entries behind: start afresh.
            self.due = _due(by_id)
        if out or moved:
            # The views kept are in order already and the task id in ``urgency`` makes the
            # order total, so a view's own urgency finds its place: each view judged anew goes
            # where sorting every view would put it, at a few comparisons, not a pass over all.
            ordered, urgencies = list(self.ordered), self.urgencies
            for view in out:
                place = bisect_left(urgencies, view.urgency)
                del ordered[place], urgencies[place]
            for view in moved:
                place = bisect_left(urgencies, view.urgency)
                ordered.insert(place, view)
                urgencies.insert(place, view.urgency)
            self.ordered = tuple(ordered)
        self.sampled = set(samples)
        self.poll = changes.poll
        return Snapshot(
            taken_at=now,
            tasks=self.ordered,
            counts=dict(counts),
            quarantined=self.quarantined,
            host=fleet.host,
        )


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
    ) -> None:
        self.store = store
        self.config = config
        self.sources = tuple(sources)
        """Read-only engine databases whose tasks join the store's every poll."""
        self.source_of: dict[str, Source] = {}
        """By task id, the source each task of the last poll came from (the store's: absent)."""
        self._judging = JudgingConfig()
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
        self._kept: _Kept | None = None
        """The last snapshot's views, for judging only what changed (a reusing monitor)."""
        self._seen: dict[tuple[str, str, str, str], float] = {}
        """When each schedule (name, step, cron, zone) was first seen, once the store said."""

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    async def poll(self) -> Snapshot:
        """Take one snapshot; on a store error keep the last good tasks and say why."""
        started = time.perf_counter()
        kept, self._kept = self._kept, None
        try:
            self.store.check_path()
            now = await self.store.now()
            since = None if self.include_finished else now - self.config.finished_window
            records = await self.store.poll(since)
            changes = self.store.poll_changes()
            config = self.config
            origins: dict[str, Origin] = {}
            if self.sources:
                # Sources have no change feed: their records join the store's, judged afresh.
                extra, origins, self.source_of = await read_sources(
                    self.sources,
                    now,
                    since,
                    self.host,
                    await read_holds(self.store),
                    await self.store.source_kills(since),
                )
                records, changes = [*records, *extra], None
                config = self._judging(self.config, [r.task for r in extra], self.source_of)
            if kept is not None and not kept.follows(changes, config):
                kept = None
            samples: Mapping[str, ProcessSample] = {}
            if self.probe is not None:
                local = (
                    [r.task for r in records if _probed_here(r.task, self.host)]
                    if kept is None or changes is None
                    else kept.local_tasks(changes)
                )
                samples = await self.probe.sample(local)
            fleet = await self._fleet()
            quiet = not fleet.agents and not fleet.requests
            if kept is not None and changes is not None and quiet:
                # The store says what changed since the last snapshot: judge only that.
                follow = partial(kept.follow, now, changes, samples, fleet)
                snapshot = follow() if self.own_thread else await asyncio.to_thread(follow)
            else:
                kept = None
                previous = self._by_id if self.reuse_verdicts else None
                build = partial(build_snapshot, now, records, config, samples, fleet)
                if self.own_thread:
                    snapshot = build(previous=previous)
                else:
                    # Classifying thousands of tasks is CPU work: keep it off the caller's loop.
                    snapshot = await asyncio.to_thread(build, previous=previous)
            oncall, schedules = await self._oncall(now)
        except ZombietopError as exc:
            self.last = replace(self.last, error=str(exc), failed_at=self.clock.now())
            return self.last
        self.last = replace(
            snapshot,
            poll_seconds=time.perf_counter() - started,
            oncall=oncall,
            schedules=schedules,
            origins=origins,
        )
        if kept is not None:
            self._kept, self._by_id = kept, kept.by_id
        elif self.reuse_verdicts:
            self._by_id = snapshot.by_id()
            if changes is not None and quiet:
                self._kept = _Kept(snapshot, records, self.config, samples, changes.poll, self.host)
        return self.last

    async def _oncall(self, now: float) -> tuple[OnCall, tuple[ScheduleView, ...]]:
        """The acks and silences in force (each silence capped by this reader's max_silence),
        and every schedule judged, as of ``now``."""
        oncall = current(
            now,
            await self.store.acks(),
            await self.store.silences(),
            max_silence=self.config.oncall.max_silence,
        )
        views = [
            judge(
                now,
                schedule,
                await self.store.step_runs(schedule.step),
                first_seen=await self._first_seen(schedule, now),
            )
            for schedule in self.config.schedules
        ]
        return oncall, order(views)

    async def _first_seen(self, schedule: Schedule, now: float) -> float:
        """When the schedule was first seen, as the store remembers it.

        The first reader that can write records the time (the config file's mtime: the schedule
        was in the file since then); a read-only one that finds no record uses that time
        itself, without keeping it, so the record of a later writer wins.
        """
        name, step, cron, tz = key = (schedule.name, schedule.step, schedule.cron, schedule.tz)
        known = self._seen.get(key)
        if known is not None:
            return known
        written = self.config.written_at
        since = now if written is None else min(now, written)
        stored = None
        if not self.store.read_only:
            try:
                stored = await self.store.see_schedule(
                    name=name, step=step, cron=cron, tz=tz, at=since
                )
            except StoreError:
                pass  # a full disk: read what is there, and try writing again next poll
        if stored is None:
            stored = await self.store.schedule_seen(name=name, step=step, cron=cron, tz=tz)
        if stored is None:
            return since
        self._seen[key] = stored
        return stored

    async def _fleet(self) -> Fleet:
        agents = {agent.host: agent for agent in await self.store.agents()}
        requests: dict[str, HostRequest] = {}
        for request in await self.store.open_host_requests():
            requests.setdefault(request.task_id, request)
        samples = await self.store.process_samples() if agents else {}
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
