"""Actions on tasks from a read-only source: nothing is ever written to the engine's database.

- resume and discard are refused with the engine's own command that does it;
- kill goes to the local process, identity-checked (pid and start time), SIGTERM then SIGKILL
  after the kill grace, as the executor's kill does;
- quarantine is a hold on zombietop's side: an event in zombietop's store, shown and paged,
  never written into the engine.

Every other task's action goes to the store's executor unchanged.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import psutil

from zombietop.actions import ActionExecutor, ActionOutcome, ActionRequest, Outcome
from zombietop.durations import format_age
from zombietop.errors import StoreError
from zombietop.executor import alive_as, signal_target
from zombietop.model import EventKind, Task
from zombietop.monitor import Monitor
from zombietop.procs import process_start_time, same_start
from zombietop.sources import Origin, Source
from zombietop.store import Store

EXIT_POLL_S = 0.05
"""How often a kill looks whether the process exited after SIGTERM (on a thread of its own)."""


class SourceActions:
    """The action door in front of the store's executor: tasks that came from a read-only
    source (as the monitor's last poll saw them) are handled here, the rest go on."""

    def __init__(
        self, monitor: Monitor, inner: ActionExecutor | None, *, actor_store: Store | None = None
    ) -> None:
        self.monitor = monitor
        self.inner = inner
        self.store = actor_store or monitor.store
        """Where the outcome of an action on a source's task is recorded (zombietop's own)."""

    @property
    def read_only(self) -> bool:
        return self.inner is None or self.inner.read_only

    async def complete_pending_kills(self) -> list[ActionOutcome]:
        return [] if self.inner is None else await self.inner.complete_pending_kills()

    async def run(self, request: ActionRequest) -> ActionOutcome:
        origin = self.monitor.last.origins.get(request.task_id)
        source = self.monitor.source_of.get(request.task_id)
        if origin is None or source is None:
            if self.inner is None:
                return _refused(request, "actions are disabled (read-only)")
            return await self.inner.run(request)
        refusal = source.refusal(request.kind, origin)
        if refusal is not None:
            return _refused(request, refusal)
        view = self.monitor.last.by_id()[request.task_id]
        if view.token != request.expected_token:
            return _refused(
                request,
                f"task changed since you looked: try {request.expected_token} is now {view.token}",
            )
        grace = view.limits.kill_grace
        outcome, message = await kill_local(view.task, grace, here=self.monitor.host)
        done = ActionOutcome(
            request=request, outcome=outcome, message=message, new_token=view.token
        )
        await self._record(done, source, origin)
        return done

    async def _record(self, done: ActionOutcome, source: Source, origin: Origin) -> None:
        if self.store.read_only:
            return
        request = done.request
        why = f" (reason: {request.reason})" if request.reason else ""
        try:
            await self.store.record_event(
                kind=EventKind.ACTION,
                actor=request.actor,
                task_id=request.task_id,
                message=f"{request.kind} {done.outcome}: {done.message}{why}",
                data={
                    "action": str(request.kind),
                    "outcome": str(done.outcome),
                    "reason": request.reason,
                    "source": source.name,
                    origin.kind: dict(origin.ids),
                },
            )
        except StoreError:
            pass  # the outcome is reported all the same; the log is a courtesy here


def _refused(request: ActionRequest, message: str) -> ActionOutcome:
    return ActionOutcome(request=request, outcome=Outcome.REFUSED, message=message)


async def kill_local(task: Task, grace: float, *, here: str) -> tuple[Outcome, str]:
    """Kill a source's task by its process on this host: check its identity, SIGTERM, wait up
    to ``grace``, SIGKILL only if the same process still lives."""
    pid = task.pid
    if pid is None:
        return Outcome.REFUSED, f"{task.task_id} has no process recorded; nothing to kill"
    if task.host != here:
        return (
            Outcome.REFUSED,
            f"pid {pid} of {task.task_id} runs on {task.host or 'an unknown host'}: zombietop "
            "signals only this host's processes; run zombietop there to kill it",
        )
    actual = await asyncio.to_thread(process_start_time, pid)
    if actual is None:
        return Outcome.GONE, f"pid {pid} of {task.task_id} is already gone; nothing signalled"
    if not same_start(task.pid_start_time, actual):
        return (
            Outcome.IDENTITY_MISMATCH,
            f"pid {pid} now belongs to another process (started {actual:.2f}, after the task "
            "did); nothing signalled",
        )
    pgid = signal_target(pid)
    target = f"process group {pgid}" if pgid is not None else f"pid {pid}"
    try:
        if pgid is not None:
            os.killpg(pgid, signal.SIGTERM)
        else:
            os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return Outcome.GONE, f"{target} exited before SIGTERM; nothing signalled"
    except PermissionError:
        return (
            Outcome.PERMISSION_DENIED,
            f"not allowed to signal {target} (owned by another user); run zombietop as its owner",
        )
    if await asyncio.to_thread(_exits_within, pid, grace):
        return Outcome.EXITED, f"SIGTERM to {target}: {task.task_id}'s process exited"
    if not alive_as(pid, task.pid_start_time):
        return Outcome.EXITED, f"SIGTERM to {target}: {task.task_id}'s process exited"
    try:
        if pgid is not None:
            os.killpg(pgid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return Outcome.EXITED, f"SIGTERM to {target}: {task.task_id}'s process exited"
    return (
        Outcome.ESCALATED,
        f"{target} still alive {format_age(grace)} after SIGTERM: SIGKILL sent",
    )


def _exits_within(pid: int, grace: float) -> bool:
    """Wait up to ``grace`` for ``pid`` to exit; a zombie has (its parent reaps it, not us)."""
    deadline = time.monotonic() + grace
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(EXIT_POLL_S, left))
