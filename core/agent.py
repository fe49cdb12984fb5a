"""``zombietop agent``: one per host of a fleet, the hands and eyes of every dashboard elsewhere.

Each tick it (1) reports its presence with this host's clock, so dashboards know it is there and
how far this host's clock is off; (2) samples the processes behind this host's tasks into the
store (the presence and the samples in one write), so a dashboard on another host sees PID,
CPU, idleness and liveness, and a process that outlives its finished task (``orphan_watch``);
(3) carries out the actions other hosts asked for this host, through the same executor as a
local action (token check, process identity, durable kill record); and (4) finishes the pending
kills on this host, so a SIGKILL is sent after the grace even when the asker has long gone.

With sources (``[[sources]]``, ``--source``), "this host's tasks" are also the task instances an
engine's database says run here: the agent reads that database itself (read-only) each tick,
so what it samples and signals is what the engine records, never what a request says.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from zombietop.act.executor import Executor
from zombietop.act.source_actions import SourceActions
from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.clock import Clock, SystemClock
from zombietop.config import Config
from zombietop.errors import StoreError
from zombietop.fleet import HostRequest
from zombietop.identity import real_user
from zombietop.judge.monitor import Monitor, ProcessProbe, Snapshot
from zombietop.judge.orphan_watch import OrphanWatch
from zombietop.model import EventKind, Task
from zombietop.printable import printable
from zombietop.procs import PsutilProbe, this_host
from zombietop.sources import Source
from zombietop.store import Store
from zombietop.store.pruner import keep_pruning

AGENT_INTERVAL_S = 2.0
"""Default time between ticks; dashboards call an agent gone after ~3 missed ticks."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRound:
    """What one round of the agent (one ``tick``) did on its host."""

    sampled: int
    """Tasks whose processes were sampled into the store (the store's and the sources')."""
    carried_out: tuple[ActionOutcome, ...] = ()
    kills_finished: tuple[ActionOutcome, ...] = ()


class Agent:
    """Serve one host: presence, process samples, requested actions, pending kills."""

    def __init__(
        self,
        store: Store,
        config: Config,
        *,
        host: str | None = None,
        interval: float = AGENT_INTERVAL_S,
        clock: Clock | None = None,
        probe: ProcessProbe | None = None,
        executor: Executor | None = None,
        err: TextIO | None = None,
        sources: Sequence[Source] = (),
    ) -> None:
        self.store = store
        self.host = host if host is not None else this_host()
        self.interval = interval
        # This host's clock: only reported, so dashboards can show how far off it is.
        self.clock = clock or SystemClock()
        self.probe = probe or PsutilProbe(host=self.host)
        self.executor = executor or Executor(store, config, host=self.host)
        self.agent_id = f"agent@{self.host}:{os.getpid()}:{os.urandom(2).hex()}"
        self.err = err or sys.stderr
        self.user = real_user()
        self.allow = frozenset(config.agent.allow)
        self.keep_finished = config.keep_finished
        self.sources = tuple(sources)
        # The sources' tasks as this host reads them, and the door their actions go through.
        # It acts on tasks and shows none, so it has no use for the flips behind `flapping`.
        self.monitor = Monitor(
            store, config, host=self.host, sources=self.sources, count_flips=False
        )
        self.actions = SourceActions(self.monitor, self.executor)
        self._named: set[str] = set()
        """Host names the sources record for this host that are not its name (said once)."""
        self._orphans = OrphanWatch()
        self._source_orphans = OrphanWatch()
        """Which finished tasks' processes are still sampled (the store's, the sources'), so
        that dashboards elsewhere see a process that outlives its task."""

    def refusal(self, asked: HostRequest) -> str | None:
        """Why this agent will not act for the user who asked; None when it will.

        The requester is what the asking process recorded of its own real uid. Whoever can
        write the store can forge that too: the tie of a process to its task, checked against
        /proc before any signal, is what keeps a forged request off unrelated processes.
        """
        if asked.requester is None or asked.requester_uid is None:
            return (
                f"the request names no requesting OS user (written by a zombietop older than "
                f"schema v6, or by hand); ask again from `zombietop {asked.kind}`"
            )
        if asked.requester_uid == os.getuid() and asked.requester == self.user:
            return None
        if asked.requester in self.allow:
            return None
        return (
            f"{asked.requester} (uid {asked.requester_uid}) is not {self.user}, the user this "
            f"agent runs as, nor listed in its config's [agent] allow; add "
            f'allow = ["{asked.requester}"] there to let them act on {self.host}'
        )

    def _say(self, text: str) -> None:
        print(printable(f"zombietop agent: {text}"), file=self.err, flush=True)

    async def tick(self) -> AgentRound:
        """Do one round of the four duties; store errors propagate to the caller."""
        now = await self.store.now()
        tasks = await self.store.active_tasks_on(
            self.host, finished_since=self._orphans.finished_since(now)
        )
        tasks = self._orphans.keep(tasks, now, ())
        samples = await self.probe.sample(tasks)
        self._orphans.saw(tasks, samples)
        # The beat and every sample in one write: a fleet's ticks cost the store one write per
        # host, not one per task.
        await self.store.record_agent_round(
            self.host,
            agent_id=self.agent_id,
            pid=os.getpid(),
            interval=self.interval,
            reported_at=self.clock.now(),
            samples=samples,
            finished=_finished(tasks),
        )
        sampled = len(samples) + await self._sample_sources()
        carried_out = []
        for asked in await self.store.open_host_requests(self.host):
            # Ours from a tick that failed half-way, or an earlier agent's that died holding it:
            # the executor's token and identity checks make carrying it out again safe.
            claimed = (
                asked
                if asked.claimed_by == self.agent_id
                else await self.store.claim_host_request(asked.request_id, agent_id=self.agent_id)
            )
            if claimed is None:
                continue
            request = ActionRequest(
                kind=ActionKind(claimed.kind),
                task_id=claimed.task_id,
                expected_token=claimed.expected_token,
                actor=claimed.actor,
                reason=claimed.reason,
            )
            refusal = self.refusal(claimed)
            if refusal is None and claimed.source is not None:
                outcome = await self.actions.run_asked(request, claimed.source)
            elif refusal is None:
                outcome = await self.executor.run(request)
            else:
                outcome = ActionOutcome(request=request, outcome=Outcome.REFUSED, message=refusal)
                await self.store.record_event(
                    kind=EventKind.ACTION,
                    actor=self.agent_id,
                    task_id=claimed.task_id,
                    message=f"{claimed.kind} refused: {refusal}",
                    data={
                        "action": claimed.kind,
                        "outcome": str(Outcome.REFUSED),
                        "request_id": claimed.request_id,
                        "requester": claimed.requester,
                        "requester_uid": claimed.requester_uid,
                    },
                )
            await self.store.finish_host_request(
                claimed.request_id,
                outcome=str(outcome.outcome),
                message=outcome.message,
                actor=self.agent_id,
            )
            self._say(f"{claimed.kind} {claimed.task_id} for {claimed.actor}: {outcome.message}")
            carried_out.append(outcome)
        finished = await self.actions.complete_pending_kills()
        for done in finished:
            self._say(f"kill {done.request.task_id}: {done.outcome}: {done.message}")
        return AgentRound(
            sampled=sampled, carried_out=tuple(carried_out), kills_finished=tuple(finished)
        )

    async def _sample_sources(self) -> int:
        """Read the sources, store a sample of each of their running tasks on this host (by
        source), and return how many; the read also serves this tick's requests and kills."""
        if not self.sources:
            return 0
        snapshot = await self.monitor.poll()
        if snapshot.error is not None:
            # The store's own duties go on; the sources' wait for the next tick.
            self._say(f"cannot read the sources: {snapshot.error}")
            return 0
        local = _running_here(snapshot, self.host)
        if snapshot.taken_at is not None:
            local = self._source_orphans.keep(local, snapshot.taken_at, snapshot.origins)
        self._say_other_names(snapshot)
        samples = await self.probe.sample(local)
        self._source_orphans.saw(local, samples)
        for source in self.sources:
            error = snapshot.source_errors.get(source.name)
            if error is not None:
                # Its samples stay as they were: writing none would drop them.
                self._say(f"cannot read {error}")
                continue
            mine = {
                task.task_id: samples[task.task_id]
                for task in local
                if task.task_id in samples and self.monitor.source_of[task.task_id] is source
            }
            await self.store.record_process_samples(
                self.host, mine, source=source.name, finished=_finished(local)
            )
        return len(samples)

    def _say_other_names(self, snapshot: Snapshot) -> None:
        """Say once when a source records this host under another name: a dashboard elsewhere
        looks for the agent of a task by the name its source records."""
        views = snapshot.by_id()
        for task_id, origin in snapshot.origins.items():
            view = views.get(task_id)
            named = origin.ids.get("hostname")
            if view is None or view.task.host != self.host or not isinstance(named, str):
                continue
            if named != self.host and named not in self._named:
                self._named.add(named)
                self._say(
                    f"{origin.source} records this host as {named}, this agent serves "
                    f"{self.host}: dashboards on other hosts find it by {named} only if it runs "
                    f"with --host {named} (or ZOMBIETOP_HOST={named})"
                )

    async def _may_prune(self) -> bool:
        """An agent prunes only while no watchdog holds the store's watchdog lease: the active
        watchdog prunes for everyone where there is one."""
        lease = await self.store.watchdog_lease()
        return lease is None or not lease.active(await self.store.now())

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Tick every ``interval`` until ``stop`` is set; say goodbye in the store when leaving."""
        stop = stop or asyncio.Event()
        others = f" and {', '.join(sorted(self.allow))}" if self.allow else ""
        self._say(
            f"serving {self.host} in {self.store.describe()} every {self.interval:g}s, "
            f"acting for {self.user}{others}"
        )
        pruning = None
        if self.keep_finished > 0:
            pruning = asyncio.create_task(
                keep_pruning(
                    self.store,
                    self.keep_finished,
                    may_prune=self._may_prune,
                    log=self._say,
                    stop=stop,
                    first_after=self.interval,
                )
            )
        try:
            while not stop.is_set():
                self.store.check_path()  # deleted or replaced: stop, and say why
                try:
                    await self.tick()
                except StoreError as exc:
                    # A store hiccup is not a reason to leave the host unserved: try next tick.
                    self._say(f"tick failed: {exc}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.interval)
        finally:
            if pruning is not None:
                pruning.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pruning
            with contextlib.suppress(StoreError):
                await self.store.stop_agent(self.host, agent_id=self.agent_id)
            self._say(f"stopped serving {self.host}")


def _running_here(snapshot: Snapshot, host: str) -> list[Task]:
    """The sources' tasks with a process on ``host``: those that should have a live one, and
    the finished (whose process may live on as an orphan)."""
    return [
        view.task
        for view in snapshot.tasks
        if view.task_id in snapshot.origins
        and view.task.host == host
        and (view.task.state.executing or view.task.state.finished)
        and view.task.pid is not None
    ]


def _finished(tasks: Sequence[Task]) -> set[str]:
    """The ids of the finished ones among ``tasks``: their samples are taken after the finish."""
    return {task.task_id for task in tasks if task.state.finished}
