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
from functools import partial
from operator import attrgetter
from typing import Protocol

from core.classify import Verdict, classify, sort_key
from core.clock import Clock, SystemClock
from core.config import Config, Limits
from core.durations import format_age
from core.errors import ZombietopError
from core.model import (
    AgentPresence,
    Event,
    EventKind,
    Health,
    Heartbeat,
    HistoryPoint,
    HostRequest,
    Lease,
    PendingKill,
    ProcessSample,
    StoredSample,
    Task,
    TaskRecord,
    TaskState,
)
from core.procs import this_host
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
    _aged: dict[float, Verdict] = field(default_factory=dict, init=False, repr=False, compare=False)

    task_id: str = field(init=False, repr=False, compare=False)
    """The task's id, read thousands of times a poll (a plain slot, not a property)."""
    urgency: tuple[int, float, str] = field(init=False, repr=False, compare=False)
    """Where the task sorts, most urgent first (``sort_key`` of its verdict), kept with it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_id", self.task.task_id)
        object.__setattr__(self, "urgency", sort_key(self.task.task_id, self.verdict))

    def verdict_at(self, now: float) -> Verdict:
        """The verdict with its ages, countdowns and page line as of ``now``.

        A monitor that reuses verdicts between polls hands out views whose ``verdict`` was
        reached at an earlier poll (same health, flags and reasons; older numbers): whatever
        shows an age reads it through here. Classifying one task is cheap; the latest is kept.
        """
        if now == self.verdict.at:
            return self.verdict
        aged = self._aged.get(now)
        if aged is None:
            aged = classify(
                now,
                self.task,
                self.lease,
                self.heartbeat,
                self.process,
                self.limits,
                waiting_on=self.waiting_on,
            )
            self._aged.clear()
            self._aged[now] = aged
        return aged

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
    error: str | None = None
    """Why the latest poll failed; the tasks are then from the last good poll."""
    failed_at: float | None = None
    poll_seconds: float = 0.0
    host: str | None = None
    """The host this snapshot was taken on (whose processes it probed itself)."""
    agents: tuple[AgentPresence, ...] = ()
    """Every host whose agent ever reported, by host name."""

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


def _judged(process: ProcessSample | None) -> tuple[object, ...] | None:
    """What of a process sample a verdict depends on (CPU and I/O only colour the words)."""
    if process is None:
        return None
    return (process.pid, process.alive, process.identity_ok, process.status == "zombie")


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
    process state and fleet notes are unchanged, and whose verdict is still before its
    ``stable_until``, keeps its verdict: a fleet at rest costs what changed, not what exists.
    Its ages then come from ``TaskView.verdict_at``.
    """
    views: dict[str, TaskView] = {}
    previous = previous or {}
    # Without agents or owed requests (one host, or a fleet at peace) a task's fleet notes
    # follow from the task alone, so an unchanged task needs no fleet lookups at all.
    quiet = fleet is None or (not fleet.agents and not fleet.requests)
    limits_by_type: dict[str, Limits] = {}
    for record in records:
        task = record.task
        task_id = task.task_id
        limits = limits_by_type.get(task.step_type)
        if limits is None:
            limits = limits_by_type[task.step_type] = config.limits_for(task.step_type)
        seen = previous.get(task_id)
        unchanged = (
            seen is not None
            and seen.task is task
            and now < seen.verdict.stable_until
            and seen.lease is record.lease
            and seen.heartbeat is record.heartbeat
            and seen.pending_kill is record.pending_kill
            and seen.limits is limits
            and not (task.state is TaskState.QUEUED and task.upstream)
        )
        if unchanged and quiet and seen is not None and seen.agent is None:
            process = None if seen.remote else samples.get(task_id)
            same_process = seen.process is process or _judged(seen.process) == _judged(process)
            if seen.host_request is None and same_process:
                views[task_id] = seen if seen.process == process else replace(seen, process=process)
                continue
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
            and _judged(seen.process) == _judged(process)
        ):
            views[task_id] = seen if seen.process == process else replace(seen, process=process)
            continue
        views[task_id] = TaskView(
            task=task,
            lease=record.lease,
            heartbeat=record.heartbeat,
            process=process,
            limits=limits,
            verdict=classify(now, task, record.lease, record.heartbeat, process, limits),
            pending_kill=record.pending_kill,
            remote=remote,
            agent=agent,
            host_request=request,
            agent_note=note,
        )
    # A second look for queued tasks: say which upstream they wait behind, and in what state.
    for task_id, view in list(views.items()):
        task = view.task
        if task.state is not TaskState.QUEUED or not task.upstream:
            continue
        waiting = tuple(
            (upstream, views[upstream].health)
            for upstream in task.upstream
            if upstream in views and views[upstream].health is not Health.SUCCEEDED
        )
        if waiting:
            verdict = classify(
                now, task, view.lease, view.heartbeat, view.process, view.limits, waiting_on=waiting
            )
            views[task_id] = replace(view, verdict=verdict, waiting_on=waiting)
    ordered = tuple(sorted(views.values(), key=attrgetter("urgency")))
    counts = _zero_counts()
    counts.update(Counter([view.verdict.health for view in ordered]))
    return Snapshot(
        taken_at=now,
        tasks=ordered,
        counts=counts,
        host=None if fleet is None else fleet.host,
        agents=() if fleet is None else tuple(fleet.agents[h] for h in sorted(fleet.agents)),
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
    ) -> None:
        self.store = store
        self.config = config
        self.probe = probe
        self.host = host or getattr(probe, "host", None) or this_host()
        self.clock = clock or SystemClock()
        self.include_finished = include_finished
        self.reuse_verdicts = reuse_verdicts
        """Keep a task's verdict until its ``stable_until`` while its inputs stay the same (the
        dashboard: it reads ages through ``TaskView.verdict_at``). The watchdog and ``status``
        classify afresh every poll."""
        self.own_thread = own_thread
        """The caller's event loop runs on a thread of its own (the dashboard's monitor): classify
        right there instead of handing the work to yet another thread."""
        self.last: Snapshot = Snapshot(taken_at=None)
        self._by_id: dict[str, TaskView] = {}

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
                samples = await self.probe.sample(
                    [r.task for r in records if r.task.pid is not None and r.task.host == self.host]
                )
            fleet = await self._fleet()
            previous = self._by_id if self.reuse_verdicts else None
            build = partial(build_snapshot, now, records, self.config, samples, fleet)
            if self.own_thread:
                snapshot = build(previous=previous)
            else:
                # Classifying thousands of tasks is CPU work: keep it off the caller's loop.
                snapshot = await asyncio.to_thread(build, previous=previous)
        except ZombietopError as exc:
            self.last = replace(self.last, error=str(exc), failed_at=self.clock.now())
            return self.last
        self.last = replace(snapshot, poll_seconds=time.perf_counter() - started)
        if self.reuse_verdicts:
            self._by_id = snapshot.by_id()
        return self.last

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

    async def events(
        self, task_id: str | None = None, limit: int = 100, *, renewals: bool = False
    ) -> list[Event]:
        """Newest first. Lease renewals, several a second in a busy store, are left out unless
        asked for: they would push every transition and action out of sight."""
        skip = None if renewals else EventKind.LEASE_RENEWED
        return await self.store.events(task_id=task_id, limit=limit, skip_kind=skip)
