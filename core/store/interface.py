"""The store interface: tasks, leases, heartbeats and events, behind one async API.

SQLite (``sqlite``) is the default; PostgreSQL (``postgres``) implements the same class for
fleets, selected by a ``postgresql://`` URL. Every time a store writes comes from the
store's own clock, never the caller's: for SQLite that is the host's clock (every process using
the file shares it), for PostgreSQL the server's.
"""

from __future__ import annotations

import abc
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from zombietop.fleet import AgentPresence, HostRequest, StoredSample, WatchdogLease
from zombietop.heartbeat_line import BeatLine
from zombietop.job_summary import JobSummary
from zombietop.model import (
    Event,
    Heartbeat,
    HistoryPoint,
    Lease,
    PendingKill,
    PollChanges,
    ProcessSample,
    StepRuns,
    StoredPage,
    Task,
    TaskRecord,
    TaskState,
    WatchdogMemory,
)
from zombietop.start_identity import StartIdentity
from zombietop.store.oncall_interface import OnCallInterface

HISTORY_LIMIT = 120
"""Heartbeats kept per task for sparklines; older ones are trimmed as new ones arrive."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """What a verdict on a task was made on: its latest heartbeat and its lease, as read.

    A write that acts on the verdict checks them again inside its transaction: a task that
    beat or renewed its lease since (a lock may have held those writes back) is judged again
    at the next look instead.
    """

    beat_seq: int | None
    lease_token: int | None
    lease_expires_at: float | None


RECONNECT_MOST_S = 4.0
"""The longest a store that lost its server waits between two attempts to reach it again
(PostgreSQL; the backoff doubles up to this). Short enough that a wrapper's exit, retried every
second, is written soon after the server is back; the watchdog waits this long, and a second,
for the jobs to beat again after an outage."""

FinishedKey = tuple[float, str]
"""Where a task stands among the finished ones: ``(finished_at, task_id)``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneBatch:
    """What one prune transaction removed."""

    task_ids: tuple[str, ...]
    """The tasks removed, oldest first, with their events, heartbeats, lease and the rest."""
    last: FinishedKey | None
    """The last task removed: the next batch starts after it (None when nothing was)."""


class Store(OnCallInterface):
    """One lease/heartbeat store. Use as ``async with await open_store(...) as store``."""

    read_only: bool
    created: bool = False
    """True when opening the store created it: a new, empty store file."""

    @property
    def local_clock(self) -> bool:
        """True when the store's clock is read in this process (SQLite: an anchor plus this
        host's boot clock), so that a process reading its own clock wrong sees every age wrong;
        False when a server keeps the time."""
        return False

    @abc.abstractmethod
    def describe(self) -> str:
        """Say where the store is, for headers and error messages."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    def check_path(self) -> None:
        """Raise ``StoreReplaced`` when the store's path no longer names what this process
        holds open (a file store deleted or replaced under it); long-running commands call it
        every round."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @abc.abstractmethod
    async def now(self) -> float:
        """The store's clock: every lease expiry and heartbeat age is measured against it."""

    # Tasks ---------------------------------------------------------------------------------

    @abc.abstractmethod
    async def create_task(
        self,
        *,
        task_id: str,
        run_id: str,
        step: str,
        step_type: str,
        actor: str,
        upstream: Sequence[str] = (),
        command: Sequence[str] = (),
        cwd: str | None = None,
        host: str | None = None,
        job: str | None = None,
    ) -> Task:
        """Add a queued task; raise ``StoreError`` if the id is taken. A task of a ``job`` is
        numbered after the job's latest run (``run_number``, from 1)."""

    @abc.abstractmethod
    async def get_task(self, task_id: str) -> Task:
        """Return the task or raise ``TaskNotFound``."""

    @abc.abstractmethod
    async def get_record(self, task_id: str) -> TaskRecord:
        """Return the task with its lease and latest heartbeat, or raise ``TaskNotFound``."""

    @abc.abstractmethod
    async def poll(self, finished_since: float | None) -> list[TaskRecord]:
        """Read every active task and those finished since ``finished_since`` (None: all)."""

    @abc.abstractmethod
    async def glance(self, limit: int) -> tuple[int, list[TaskRecord]]:
        """How many tasks are active, and the ``limit`` of them whose last sign of life is
        oldest: a first screenful while a whole ``poll`` is still to come. It leaves what
        ``poll`` follows as it was."""

    def poll_changes(self) -> PollChanges | None:
        """What the latest ``poll`` changed against the one before it, for a reader that keeps
        what it built from that one; None when the store does not say (read it all again).

        Ask right after ``poll`` returns, before anything else can poll the same store.
        """
        return None

    @abc.abstractmethod
    async def set_process(
        self,
        task_id: str,
        *,
        owner: str,
        token: int,
        pid: int,
        pid_start_time: float,
        host: str,
        pid_start_identity: StartIdentity | None = None,
    ) -> None:
        """Record the process executing the task, with its start (the wall-clock time, and
        the kernel's count where /proc tells it); fenced on the lease."""

    @abc.abstractmethod
    async def finish_task(
        self,
        task_id: str,
        *,
        owner: str,
        token: int,
        state: TaskState,
        exit_code: int | None = None,
        reason: str | None = None,
        stopped_by: str | None = None,
    ) -> Task:
        """End the owner's execution (succeeded, failed or interrupted) and release the lease.

        ``stopped_by`` names who stopped an interrupted task (a kill's requester, a forwarded
        signal); the state-change event carries it with the exit code.
        """

    @abc.abstractmethod
    async def set_quarantine(
        self,
        task_id: str,
        *,
        quarantined: bool,
        actor: str,
        reason: str | None = None,
        seen: Seen | None = None,
    ) -> Task:
        """Hold (or release) a task so that nothing downstream of it starts.

        With ``seen`` (what a verdict was made on), a hold is placed only if the task has not
        beaten or renewed its lease since; otherwise the task is returned as it is, unheld.
        """

    # Leases --------------------------------------------------------------------------------

    @abc.abstractmethod
    async def get_lease(self, task_id: str) -> Lease | None: ...

    @abc.abstractmethod
    async def acquire_lease(
        self, task_id: str, *, owner: str, ttl: float, queued: bool = False
    ) -> Lease:
        """Take a lease nobody holds; the token grows. Raise ``LeaseHeld`` if someone does.

        ``queued`` leaves a queued task queued: ``zombietop run --wait`` holds the lease while
        it waits for its upstream, so a waiter that dies shows as reclaimable."""

    @abc.abstractmethod
    async def renew_lease(self, task_id: str, *, owner: str, token: int, ttl: float) -> Lease:
        """Extend our unexpired lease; raise ``LeaseLost`` if the owner, token or time is wrong."""

    @abc.abstractmethod
    async def release_lease(self, task_id: str, *, owner: str, token: int) -> None:
        """Give the lease up; raise ``LeaseLost`` if it is no longer ours."""

    @abc.abstractmethod
    async def reclaim_lease(self, task_id: str, *, owner: str, ttl: float) -> Lease:
        """Take over an expired lease (the token grows); raise ``LeaseHeld`` while it is live."""

    @abc.abstractmethod
    async def still_owner(self, task_id: str, *, owner: str, token: int) -> bool:
        """True while ``owner`` holds the lease with ``token`` and it has not expired."""

    # Actions -------------------------------------------------------------------------------

    @abc.abstractmethod
    async def resume_task(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> tuple[Task, Lease]:
        """Take the lease from whoever holds it (token + 1, no owner), keep the checkpoint,
        count the attempt, clear the quarantine and requeue.

        Raise ``ActionRefused`` when the token is not ``expected_token`` (None: no lease yet)
        or the task succeeded or was discarded.
        """

    @abc.abstractmethod
    async def discard_task(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> tuple[Task, Lease]:
        """Take the lease from whoever holds it (token + 1, no owner) and mark the task discarded.

        Raise ``ActionRefused`` when the token is not ``expected_token`` or the task succeeded
        or was already discarded.
        """

    @abc.abstractmethod
    async def open_kill(
        self,
        task_id: str,
        *,
        pid: int,
        pid_start_time: float | None,
        pgid: int | None,
        host: str | None,
        requested_by: str,
        grace: float,
        source: str | None = None,
        pid_start_identity: StartIdentity | None = None,
    ) -> PendingKill:
        """Record a graceful kill as SIGTERM goes out (deadline = now + grace); ``source``
        names the read-only source of a task this store does not hold, ``pid_start_identity``
        the kernel's count of the signalled process's start.

        Raise ``ActionRefused`` if the task already has an open kill.
        """

    @abc.abstractmethod
    async def get_open_kill(self, task_id: str) -> PendingKill | None:
        """Return the task's open kill, if any."""

    @abc.abstractmethod
    async def open_kills(self, host: str | None) -> list[PendingKill]:
        """Return every open kill on ``host``, soonest deadline first."""

    @abc.abstractmethod
    async def source_kills(self, since: float | None) -> dict[str, PendingKill]:
        """The latest kill of each read-only source's task, by task id: those still open and
        those finished since ``since`` (None: all)."""

    @abc.abstractmethod
    async def close_kill(
        self,
        task_id: str,
        *,
        outcome: str,
        actor: str,
        message: str,
        data: Mapping[str, Any] | None = None,
    ) -> PendingKill | None:
        """Close the task's open kill and record an action event, in one transaction.

        Return None when there was no open kill (another zombietop closed it first).
        """

    # Heartbeats ----------------------------------------------------------------------------

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

    # Events --------------------------------------------------------------------------------

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

    # Jobs ----------------------------------------------------------------------------------

    @abc.abstractmethod
    async def job_summaries(self, changed_after: float | None = None) -> list[JobSummary]:
        """Every job's summary, or (with ``changed_after``) those changed at or after it."""

    @abc.abstractmethod
    async def job_runs(self, job: str, limit: int) -> list[Task]:
        """The latest ``limit`` runs of ``job``, newest first."""

    @abc.abstractmethod
    async def failed_latest_runs(self, before: float) -> list[TaskRecord]:
        """The runs that failed before ``before`` and are still the latest of their job to
        end, newest first: one per job at most, read by way of the jobs table."""

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

    # Fleets --------------------------------------------------------------------------------

    @abc.abstractmethod
    async def record_agent_beat(
        self, host: str, *, agent_id: str, pid: int, interval: float, reported_at: float
    ) -> AgentPresence:
        """Record that ``host``'s agent is alive; ``reported_at`` is the host's own clock."""

    @abc.abstractmethod
    async def stop_agent(self, host: str, *, agent_id: str) -> None:
        """Mark ``host``'s agent as shut down, so dashboards say so at once."""

    @abc.abstractmethod
    async def agents(self) -> list[AgentPresence]:
        """Every host whose agent ever reported, by host name."""

    @abc.abstractmethod
    async def active_tasks_on(
        self, host: str, *, finished_since: float | None = None
    ) -> list[Task]:
        """Tasks with a recorded process on ``host``: the unfinished, and those finished at or
        after ``finished_since`` (store time; None: none), whose processes its agent samples."""

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
    async def process_samples(self) -> dict[str, StoredSample]:
        """The latest stored sample of every unfinished task, by task id."""

    @abc.abstractmethod
    async def request_host_action(
        self,
        *,
        task_id: str,
        host: str,
        kind: str,
        expected_token: int | None,
        actor: str,
        reason: str | None = None,
        source: str | None = None,
    ) -> HostRequest:
        """Ask ``host``'s agent to carry out an action (on a task of the read-only ``source``,
        when given); raise ``ActionRefused`` if the same action on the task is already
        waiting."""

    @abc.abstractmethod
    async def get_host_request(self, request_id: int) -> HostRequest:
        """Return one request (or raise ``StoreError``)."""

    @abc.abstractmethod
    async def open_host_requests(self, host: str | None = None) -> list[HostRequest]:
        """Requests not yet carried out, oldest first (None: every host)."""

    @abc.abstractmethod
    async def claim_host_request(self, request_id: int, *, agent_id: str) -> HostRequest | None:
        """Claim a request for ``agent_id``; None when another agent claimed it first."""

    @abc.abstractmethod
    async def finish_host_request(
        self, request_id: int, *, outcome: str, message: str, actor: str
    ) -> HostRequest | None:
        """Record what became of a request, with an event; None if it was already finished."""

    # Retention -----------------------------------------------------------------------------

    @abc.abstractmethod
    async def prune_finished(
        self, before: float, *, limit: int, after: FinishedKey | None = None
    ) -> PruneBatch:
        """Remove, in one short write transaction, up to ``limit`` tasks finished before
        ``before`` (store time), oldest first after ``after``, with everything kept of them.

        A task something still needs stays: an open incident, an unfinished task that names
        it upstream, an open kill or host request, an ack in force.
        """

    @abc.abstractmethod
    async def prune_source_tasks(
        self, before: float, *, limit: int, after: str = ""
    ) -> tuple[tuple[str, ...], str | None]:
        """In one short write, remove what is kept (events, ended acks, closed kills and host
        requests) of up to ``limit`` source tasks whose newest event is before ``before``, in
        id order after ``after``, that have nothing open (an incident, a hold, a kill, a host
        request, an ack in force). Return the ids removed and the next batch's start, or None."""

    @abc.abstractmethod
    async def finished_counts(self, before: float) -> dict[TaskState, int]:
        """How many tasks finished before ``before``, by state."""

    @abc.abstractmethod
    async def finished_page(self, after: FinishedKey, *, limit: int) -> list[TaskRecord]:
        """Up to ``limit`` tasks finished before ``after``, newest first: pass the last one's
        ``(finished_at, task_id)`` for the next page, ``(moment, "")`` for the first."""

    # The watchdog's own lease and its undelivered pages ------------------------------------

    @abc.abstractmethod
    async def hold_watchdog_lease(
        self, *, owner: str, host: str, pid: int, ttl: float
    ) -> WatchdogLease:
        """Take or renew the one watchdog lease of the store, for ``ttl`` seconds of store
        time; return who holds it now (``owner`` or, while theirs is live, someone else)."""

    @abc.abstractmethod
    async def release_watchdog_lease(self, *, owner: str) -> None:
        """Give the lease up (a clean stop), so a standby takes over at once."""

    @abc.abstractmethod
    async def watchdog_lease(self) -> WatchdogLease | None:
        """Who holds the watchdog lease, live or expired; None if no watchdog ever did."""

    @abc.abstractmethod
    async def keep_page(
        self,
        *,
        notifier: str,
        kind: str,
        line: str,
        task_id: str | None,
        health: str | None,
        page_at: float,
        attempts: int,
        next_at: float,
        incident: str | None = None,
        runbook: str | None = None,
    ) -> int:
        """Keep a page owed to one channel until it is delivered; return its id."""

    @abc.abstractmethod
    async def pending_pages(self) -> list[StoredPage]:
        """Every page still owed, oldest first."""

    @abc.abstractmethod
    async def retry_page(self, page_id: int, *, attempts: int, next_at: float) -> None:
        """Record a failed attempt at a kept page and when to try it next."""

    @abc.abstractmethod
    async def drop_page(self, page_id: int) -> None:
        """Forget a kept page: delivered, or out of attempts."""

    @abc.abstractmethod
    async def watchdog_memory(self) -> WatchdogMemory:
        """What a starting watchdog must remember: every open incident's events, and the
        one-shot reactions taken on unfinished tasks (never just the newest N events)."""
