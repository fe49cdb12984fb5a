"""One poll's verdicts as the faces see them: a view per task, the snapshot of them all, and
the pure function that builds it from the store's records, the probe's samples and the fleet."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter

from zombietop.config import Config, Limits
from zombietop.durations import format_age
from zombietop.fleet import AgentPresence, HostRequest, StoredSample
from zombietop.health import Health, ScheduleHealth
from zombietop.job_summary import JobSummary, job_of
from zombietop.judge.classify import classify, sort_key
from zombietop.judge.quiet import Counted
from zombietop.judge.schedules import ScheduleView
from zombietop.judge.verdict import Verdict
from zombietop.model import (
    Heartbeat,
    Lease,
    PendingKill,
    ProcessSample,
    Task,
    TaskRecord,
    TaskState,
)
from zombietop.oncall.acks import OnCall
from zombietop.sources import EngineWorker, Origin


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


def finished_view(now: float, record: TaskRecord, config: Config) -> TaskView:
    """The view of a finished task read outside a poll (``status --all``'s older tasks, the
    failed runs past the finished window): no process to probe, judged at ``now``."""
    task = record.task
    limits = config.limits_for(task.step_type)
    verdict = classify(now, task, record.lease, record.heartbeat, None, limits)
    return TaskView(
        task=task,
        lease=record.lease,
        heartbeat=record.heartbeat,
        process=None,
        limits=limits,
        verdict=verdict,
        pending_kill=record.pending_kill,
    )


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
    workers: tuple[EngineWorker, ...] = ()
    """The engines' workers, as the sources that know theirs read them in this poll."""
    oncall: OnCall = field(default_factory=lambda: OnCall(at=0.0))
    """The acks and silences in force as of this poll."""
    schedules: tuple[ScheduleView, ...] = ()
    """Every configured schedule, most urgent first."""
    origins: Mapping[str, Origin] = field(default_factory=dict)
    """By task id, the tasks read from a source other than the store (an engine's database)."""
    source_errors: Mapping[str, str] = field(default_factory=dict)
    """By source name, why that source could not be read in this poll (its tasks are then
    missing here; the store's and the other sources' are not)."""
    source_notes: Mapping[str, str] = field(default_factory=dict)
    """By source name, what the source's read skipped in this poll (its other tasks are
    here)."""
    unread: frozenset[str] = frozenset()
    """The tasks of the sources in ``source_errors``, as of their last good read in this
    process: nothing is known of them now, so nothing is said or done about them."""
    jobs: Mapping[str, JobSummary] = field(default_factory=dict)
    """By name, the summary of every job with a finished run (``job_of`` gives a task's)."""
    older_failures: tuple[TaskView, ...] = ()
    """The failed runs that ended before the finished window and are still open incidents
    (the latest run of their job failed), read by ``status`` from the jobs table
    (``failed_runs.older_failures``); a poll leaves it empty."""
    trace_url: str | None = None
    """``[otel] trace_url``: the link template to a task's trace (``trace_link``)."""
    counted: Counted | None = None
    """For a poll of a store with more than ``[monitor] read_at_most`` active tasks, what it
    counted without reading (``zombietop.judge.quiet``); None: every task is in ``tasks``."""
    glance_of: int | None = None
    """For a first glance at start-up (``Monitor.glance``), how many tasks are active: these
    few of them are judged while the whole poll is still to come, so the counts are not yet
    known. None for a snapshot of a whole poll."""

    def trace_link(self, trace_id: str) -> str | None:
        """The link to one trace in the user's tracing tool, None without ``trace_url``."""
        return None if self.trace_url is None else self.trace_url.replace("{trace_id}", trace_id)

    def job_of(self, task: Task) -> JobSummary:
        """The summary of the job ``task`` is a run of (a task with no job: itself alone)."""
        return job_of(self.jobs, task)

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
    def left_unread(self) -> int:
        """How many active tasks the poll left unread past ``[monitor] read_at_most``: neither
        judged nor counted (0 when it read every task that may need attention)."""
        return 0 if self.counted is None else self.counted.unread

    @property
    def paging(self) -> int:
        """How many tasks are dead, stalled or reclaimable."""
        return sum(n for health, n in self.counts.items() if health.pages)

    @property
    def read_at(self) -> float:
        """The moment the snapshot's ages are read at: when it was taken (before any poll it
        holds no task to read)."""
        return self.taken_at or 0.0

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
        """The agent's sample of a remote task's process, if it is current and about that PID
        (any PID when the task names none; for a finished task: taken after the finish, which is
        how an orphan elsewhere shows).

        A sample is only as good as the agent behind it: once the agent is gone it says nothing
        about the process now, and the task is judged on its heartbeat and lease alone.
        """
        stored = self.samples.get(task.task_id)
        agent = self.agents.get(task.host or "")
        if stored is None or agent is None or not agent.present(now):
            return None
        # A task whose engine does not name its process here (an RQ job's work horse) takes
        # the pid the agent found there.
        known = task.pid is None or stored.sample.pid == task.pid
        if not known or now - stored.written_at > agent.absent_after():
            return None
        if task.state.finished and not stored.after_finish:
            # Taken while the task ran: it shows the process as it was then, not an orphan.
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


class Judge:
    """Judge tasks at one ``now`` against one poll's samples and fleet."""

    def __init__(
        self,
        now: float,
        config: Config,
        samples: Mapping[str, ProcessSample],
        fleet: Fleet | None,
        jobs: Mapping[str, JobSummary] | None = None,
    ) -> None:
        self.now = now
        self.config = config
        self.samples = samples
        self.fleet = fleet
        self.jobs: Mapping[str, JobSummary] = jobs or {}
        """By name, the job summaries a run is judged against."""
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
            and not waits_on_upstream(task)
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
            verdict=classify(
                now,
                task,
                lease,
                heartbeat,
                process,
                limits,
                history=None if task.job is None else self.jobs.get(task.job),
            ),
            pending_kill=pending_kill,
            remote=remote,
            agent=agent,
            host_request=request,
            agent_note=note,
        )

    def wait(self, views: dict[str, TaskView], queued: Iterable[str]) -> None:
        """Say which upstream the ``queued`` tasks wait behind, and in what state (a second
        look, once every task in ``views`` is judged)."""
        runs: dict[str, TaskView] | None = None
        for task_id in queued:
            view = views[task_id]
            lease = view.lease
            waiter = lease is not None and lease.held
            waiting: list[tuple[str, Health]] = []
            missing: list[str] = []
            for upstream in view.task.upstream:
                up = views.get(upstream)
                if up is None and waiter:
                    # ``run --after JOB --wait`` waits for a run of the job (``upstream_wait``).
                    runs = latest_runs(views) if runs is None else runs
                    up = runs.get(upstream)
                    if up is not None and up.task.finished_at is not None:
                        up = up if up.task.created_at >= view.task.created_at else None
                    if up is None:
                        # Its waiter starts it once the upstream succeeds, so an upstream
                        # still waited for that the snapshot lacks has not started yet.
                        missing.append(upstream)
                if up is not None and up.health is not Health.SUCCEEDED:
                    waiting.append((up.task_id, up.health))
            if not waiting and not missing:
                continue
            verdict = view.verdict
            if view.task.state is TaskState.QUEUED:
                verdict = classify(
                    self.now,
                    view.task,
                    view.lease,
                    view.heartbeat,
                    view.process,
                    view.limits,
                    waiting_on=waiting,
                    not_started=missing,
                )
            views[task_id] = replace(view, verdict=verdict, waiting_on=tuple(waiting))


def latest_runs(views: Mapping[str, TaskView]) -> dict[str, TaskView]:
    """Each job's latest run among ``views``, by its job's name."""
    latest: dict[str, TaskView] = {}
    for view in views.values():
        job = view.task.job
        if job is not None and (
            job not in latest or (view.task.run_number or 0) > (latest[job].task.run_number or 0)
        ):
            latest[job] = view
    return latest


def waits_on_upstream(task: Task) -> bool:
    """True for a queued task with upstream (its verdict depends on other tasks' healths), and
    for one that failed before it started (Airflow's upstream_failed): its view says which
    upstream it is held by, so the watchdog pages that upstream only."""
    if not task.upstream:
        return False
    return task.state is TaskState.QUEUED or (
        task.state is TaskState.FAILED and task.started_at is None and task.claimed_at is None
    )


def probed_here(task: Task, host: str) -> bool:
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
    jobs: Mapping[str, JobSummary] | None = None,
) -> Snapshot:
    """Classify every record at ``now`` and order them most urgent first (pure).

    ``samples`` are this host's own probe readings; with a ``fleet``, tasks on other hosts use
    their agents' stored samples and carry an ``agent_note`` when an agent is busy or missing.

    With ``previous`` (the last snapshot's views by task id), a task whose record, judged
    process reading and fleet notes are unchanged, and whose verdict is still before its
    ``stable_until``, keeps its view: a fleet at rest costs what changed, not what exists.

    ``jobs`` are the job summaries each run is judged against (``history_judge``).
    """
    judge = Judge(now, config, samples, fleet, jobs)
    previous = previous or {}
    views: dict[str, TaskView] = {}
    for record in records:
        task = record.task
        views[task.task_id] = judge.view(
            task, record.lease, record.heartbeat, record.pending_kill, previous.get(task.task_id)
        )
    judge.wait(views, [task_id for task_id, view in views.items() if waits_on_upstream(view.task)])
    ordered = tuple(sorted(views.values(), key=attrgetter("urgency")))
    counts = _zero_counts()
    counts.update(Counter([view.verdict.health for view in ordered]))
    return Snapshot(
        taken_at=now,
        tasks=ordered,
        counts=counts,
        quarantined=sum(map(is_held, ordered)),
        host=None if fleet is None else fleet.host,
        agents=() if fleet is None else tuple(fleet.agents[h] for h in sorted(fleet.agents)),
    )


def is_held(view: TaskView) -> bool:
    """True when the task is quarantined and not finished (``Snapshot.quarantined``)."""
    task = view.task
    return task.quarantined and not task.state.finished
