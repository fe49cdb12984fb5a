"""Actions on tasks from a read-only source: nothing is ever written to the engine's database.

- resume and discard are refused with the engine's own command that does it, but a resume of a
  step type that sets ``resume_command``: that command is run (detached, logged beside the
  store, as for zombietop's own tasks), and it re-enqueues the task through the engine's own
  command or API;
- kill goes through the executor's kill: the process on this host, identity-checked (pid and
  start), SIGTERM, a kill record in zombietop's store, SIGKILL after the kill grace from
  whoever finishes pending kills (this dashboard, a background ``zombietop kill`` it leaves
  when it exits, the host's agent). A process on another host is killed by that host's agent,
  which reads the source itself;
- a hold (the watchdog's quarantine) stays on zombietop's side: an event in zombietop's store,
  shown and paged, never written into the engine (``sources.read_holds``).

It lives beside the monitor and the executor it joins, not in ``sources/``: the monitor imports
the sources, so a module of theirs that imported the monitor would close a circle.

Every other task's action goes to the store's executor unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from zombietop.act.action_events import recorded
from zombietop.act.executor import Executor
from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.errors import ActionRefused, UnsafePath
from zombietop.judge.monitor import Monitor
from zombietop.model import PendingKill
from zombietop.sources import Source
from zombietop.start_identity import same_start


class SourceActions:
    """The action door in front of the store's executor: tasks that came from a read-only
    source (as the monitor's last poll saw them) are handled here, the rest go on."""

    def __init__(self, monitor: Monitor, inner: Executor | None) -> None:
        self.monitor = monitor
        self.inner = inner
        """The store's executor; it also records (in zombietop's store) what a kill did."""

    @property
    def read_only(self) -> bool:
        return self.inner is None or self.inner.read_only

    async def complete_pending_kills(self) -> list[ActionOutcome]:
        """Finish this host's pending kills, those of the sources' tasks vouched for by the
        monitor's last poll of their source (none of a source while its poll failed)."""
        if self.inner is None:
            return []
        last = self.monitor.last
        read = last.taken_at is not None and last.error is None
        sources = (
            {s.name for s in self.monitor.sources if s.name not in last.source_errors}
            if read
            else set()
        )
        return await self.inner.complete_pending_kills(self.vouch, sources=sources)

    def vouch(self, kill: PendingKill) -> str | None:
        """None when the source, as last read, still says the kill's task runs as its process
        on this host; else why not. The store's kill record alone is not trusted: whoever can
        write the store could point it at any process."""
        source = kill.source or "its source"
        view = self.monitor.last.by_id().get(kill.task_id)
        if view is None or kill.task_id not in self.monitor.last.origins:
            return (
                f"{kill.task_id} is no longer among {source}'s unfinished tasks as this "
                f"zombietop reads them, so nothing vouches for pid {kill.pid}; not signalled"
            )
        task = view.task
        if kill.pid_start_time is None:
            return (
                f"the kill record of {kill.task_id} gives no start time for pid {kill.pid}, so "
                "nothing tells it from a process that took its number; not signalled"
            )
        if (
            task.host != self.monitor.host
            or task.pid != kill.pid
            or not same_start(kill.pid_start, task.pid_start)
        ):
            now = f"pid {task.pid} on {task.host}" if task.pid else "no process"
            return (
                f"{source} now records {now} for {kill.task_id}, not pid {kill.pid} as the kill "
                "record says; not signalled"
            )
        return None

    async def run(self, request: ActionRequest) -> ActionOutcome:
        origin = self.monitor.last.origins.get(request.task_id)
        source = self.monitor.source_of.get(request.task_id)
        if origin is None or source is None:
            if self.inner is None:
                return _refused(request, "actions are disabled (read-only)")
            return await self.inner.run(request)
        view = self.monitor.last.by_id()[request.task_id]
        command = request.kind is ActionKind.RESUME and view.limits.resume_command
        refusal = None if command else source.refusal(request.kind, origin)
        if refusal is not None:
            return _refused(request, refusal)
        if self.inner is None:
            return _refused(request, "actions are disabled (read-only)")
        if view.token != request.expected_token:
            return _refused(
                request,
                f"task changed since you looked: try {request.expected_token} is now {view.token}",
            )
        if command:
            return await self._resume_command(request, source.name)
        if request.kind is not ActionKind.KILL:
            # Every read-only source refuses these with the engine's own command; one that
            # forgets still never has anything done to its task here.
            return _refused(request, kill_only(request.kind, request.task_id, source.name))
        task = view.task
        if task.pid is not None and task.host != self.monitor.host:
            if task.host is None:
                return _refused(
                    request,
                    f"pid {task.pid} of {task.task_id} runs on a host {source.name} does not "
                    "name: zombietop can signal it only there, through that host's agent",
                )
            # The agent reads the task from the source itself: the request names only the task.
            return await self.inner.ask_agent(request, task.host, source=source.name)
        if task.pid is not None and task.pid_start_time is None:
            # With nothing to check the pid against, "trust the pid" would signal whatever
            # process holds that number now.
            return _refused(
                request,
                f"{source.name} records no start for {task.task_id}, so pid {task.pid} cannot "
                "be told from a process that took its number since; nothing signalled",
            )
        refused = await self._not_the_engines(request, source, task.pid)
        if refused is not None:
            return refused
        return await self.inner.kill_process(
            request,
            task,
            view.limits.kill_grace,
            pending=await self.inner.store.get_open_kill(task.task_id),
            source=source.name,
            data={"source": source.name, origin.kind: dict(origin.ids)},
        )

    async def _not_the_engines(
        self, request: ActionRequest, source: Source, pid: int | None
    ) -> ActionOutcome | None:
        """The refusal of a kill whose process cannot be shown to be the engine's own worker
        process (a source with a ``kill_check``: RQ, Celery); None when it can, or the source
        has no such check. Whoever can write the engine's Redis can name any pid there."""
        check: Callable[[int], str | None] | None = getattr(source, "kill_check", None)
        if check is None or pid is None:
            return None
        why = await asyncio.to_thread(check, pid)
        if why is None:
            return None
        assert self.inner is not None
        return await recorded(
            self.inner.store,
            request,
            Outcome.REFUSED,
            f"{request.task_id} of {source.name}: {why}",
            data={"source": source.name, "pid": pid},
        )

    async def _resume_command(self, request: ActionRequest, source: str) -> ActionOutcome:
        """Run the step type's ``resume_command`` for a source's task: the engine enqueues it
        again; nothing of the task is written here but the action's event."""
        assert self.inner is not None
        view = self.monitor.last.by_id()[request.task_id]
        try:
            launch = await asyncio.to_thread(self.inner.commands.launch, view.task, view.limits)
        except (OSError, ActionRefused, UnsafePath) as exc:
            return await recorded(
                self.inner.store,
                request,
                Outcome.REFUSED,
                f"resume_command for {request.task_id} could not be started: {exc}",
            )
        return await recorded(
            self.inner.store,
            request,
            Outcome.RELAUNCHED,
            f"ran resume_command for {request.task_id} of {source} (pid {launch.pid}, log "
            f"{launch.log}): the engine runs it again",
            data={"source": source, "pid": launch.pid, "log": str(launch.log)},
        )

    async def run_asked(self, request: ActionRequest, source: str) -> ActionOutcome:
        """Carry out what another host asked of this one for a task of ``source``: the task
        as this zombietop's last poll of that source read it, never as the request says."""
        owner = self.monitor.source_of.get(request.task_id)
        if owner is None or owner.name != source:
            return _refused(
                request,
                f"{request.task_id} is not among the unfinished tasks of {source} as this "
                "zombietop reads them (finished since, or this agent does not read that source: "
                "give it the same [[sources]] or --source as the dashboard)",
            )
        task = self.monitor.last.by_id()[request.task_id].task
        if task.host != self.monitor.host:
            # Never passed on: the agent there would act for this agent's user, not the asker.
            return _refused(
                request,
                f"{source} says {request.task_id} runs on {task.host or 'no named host'}, not "
                f"{self.monitor.host}; ask again from a dashboard that reads {source}",
            )
        return await self.run(request)


def kill_only(kind: ActionKind, task_id: str, source: str) -> str:
    """Why anything but a kill is refused for a task of ``source``, where its engine names
    no command of its own."""
    return (
        f"{task_id} is a task of {source}: zombietop does nothing to a source's tasks but kill "
        f"their process; {kind} it in the engine itself"
    )


def _refused(request: ActionRequest, message: str) -> ActionOutcome:
    return ActionOutcome(request=request, outcome=Outcome.REFUSED, message=message)
