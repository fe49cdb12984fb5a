"""The one door every operator action goes through: resume, discard and the graceful kill.

Each action re-reads the task and refuses when its lease token moved since the operator looked,
or when the store is read-only. Refusals are outcomes, not exceptions, and every outcome is an
event in the store with the actor, the reason and what happened.

The executor composes the rooms that do the work: ``graceful_kill`` (SIGTERM, grace, SIGKILL),
``old_copy`` (stop a resumed task's old process), ``resume_commands`` (compensate, relaunch)
and ``host_requests`` (an action another host's agent must carry out).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from zombietop.act.action_events import recorded
from zombietop.act.graceful_kill import GracefulKill, Vouch
from zombietop.act.host_requests import HostRequests
from zombietop.act.old_copy import stop_old_copy
from zombietop.act.resume_commands import Launch, ResumeCommands, fill_placeholders
from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.clock import Clock
from zombietop.config import Config
from zombietop.errors import ActionRefused, TaskNotFound, UnsafePath
from zombietop.locations import store_location
from zombietop.model import PendingKill, Task, TaskRecord
from zombietop.procs import this_host
from zombietop.store import Store, location_of

__all__ = ["Executor", "Launch", "Vouch", "fill_placeholders"]


class Executor:
    """Carry out resume, discard and kill against one store; implements ``ActionExecutor``."""

    def __init__(
        self,
        store: Store,
        config: Config,
        *,
        clock: Clock | None = None,
        host: str | None = None,
        store_path: Path | str | None = None,
        zombietop: Sequence[str] | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.host = host if host is not None else this_host()
        self._clock = clock
        where = store_location(store_path) if store_path is not None else location_of(store)
        self.store_path: Path | str | None = where
        # How to start `zombietop run` for a relaunch: this interpreter, so a venv carries over.
        self.zombietop = tuple(zombietop) if zombietop else (sys.executable, "-m", "zombietop.tui")
        self.me = f"zombietop@{self.host}:{os.getpid()}"
        self.kills = GracefulKill(store, host=self.host, me=self.me, now=self._now)
        self.commands = ResumeCommands(config, store_path=where, zombietop=self.zombietop)
        self.hosts = HostRequests(store, config, host=self.host, now=self._now)

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    async def _now(self) -> float:
        return self._clock.now() if self._clock is not None else await self.store.now()

    # The door ------------------------------------------------------------------------------

    async def run(self, request: ActionRequest) -> ActionOutcome:
        """Carry out one action; refusals are outcomes, not exceptions."""
        if self.read_only:
            # Nothing can be recorded in a read-only store, so this refusal is not an event.
            return ActionOutcome(
                request=request,
                outcome=Outcome.REFUSED,
                message=f"store {self.store.describe()} is open read-only; actions are disabled",
            )
        try:
            record = await self.store.get_record(request.task_id)
        except TaskNotFound as exc:
            return ActionOutcome(request=request, outcome=Outcome.REFUSED, message=str(exc))
        token = None if record.lease is None else record.lease.token
        if token != request.expected_token:
            return await recorded(
                self.store,
                request,
                Outcome.REFUSED,
                f"task changed since you looked: token {request.expected_token} is now {token}",
                token=token,
            )
        if self.hosts.needed(request, record):
            assert record.task.host is not None
            return await self.ask_agent(request, record.task.host)
        if request.kind is ActionKind.RESUME:
            return await self._resume(request, record)
        if request.kind is ActionKind.DISCARD:
            return await self._discard(request, record)
        return await self._kill(request, record)

    async def resume(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> ActionOutcome:
        """Resume a task: bump the token, keep the checkpoint, requeue or relaunch it."""
        return await self._ask(ActionKind.RESUME, task_id, expected_token, actor, reason)

    async def discard(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> ActionOutcome:
        """Discard a task: bump the token, mark it discarded, keep its artifacts."""
        return await self._ask(ActionKind.DISCARD, task_id, expected_token, actor, reason)

    async def kill(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> ActionOutcome:
        """Start a graceful kill: SIGTERM now, SIGKILL after kill_grace if still alive."""
        return await self._ask(ActionKind.KILL, task_id, expected_token, actor, reason)

    async def _ask(
        self,
        kind: ActionKind,
        task_id: str,
        expected_token: int | None,
        actor: str,
        reason: str | None,
    ) -> ActionOutcome:
        request = ActionRequest(
            kind=kind, task_id=task_id, expected_token=expected_token, actor=actor, reason=reason
        )
        return await self.run(request)

    async def _done(
        self,
        request: ActionRequest,
        outcome: Outcome,
        message: str,
        *,
        token: int | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> ActionOutcome:
        return await recorded(self.store, request, outcome, message, token=token, data=data)

    # Another host's task ---------------------------------------------------------------------

    async def ask_agent(
        self, request: ActionRequest, host: str, *, source: str | None = None
    ) -> ActionOutcome:
        """Leave the action in the store for the agent on ``host`` (the task's); ``source``
        names the read-only source of a task the store does not hold."""
        return await self.hosts.ask(request, host, source=source)

    # Discard -------------------------------------------------------------------------------

    async def _discard(self, request: ActionRequest, record: TaskRecord) -> ActionOutcome:
        try:
            task, lease = await self.store.discard_task(
                request.task_id,
                expected_token=request.expected_token,
                actor=request.actor,
                reason=request.reason,
            )
        except ActionRefused as exc:
            return await self._done(request, Outcome.REFUSED, str(exc))
        return await self._done(
            request,
            Outcome.DISCARDED,
            f"{task.task_id} discarded (token {request.expected_token} -> {lease.token}); "
            "artifacts kept, dependents stay blocked",
            token=lease.token,
        )

    # Resume --------------------------------------------------------------------------------

    async def _resume(self, request: ActionRequest, record: TaskRecord) -> ActionOutcome:
        task = record.task
        limits = self.config.limits_for(task.step_type)
        token = request.expected_token

        async def fence() -> str | None:
            # The old copy's wrapper would record the signal's exit as the task's end, which a
            # task waiting --after this one takes for its failure: fenced, it records nothing.
            nonlocal token
            try:
                lease = await self.store.fence_task(
                    request.task_id, expected_token=token, actor=request.actor
                )
            except ActionRefused as exc:
                return str(exc)
            token = lease.token
            return None

        stopped, refusal = await stop_old_copy(task, limits, host=self.host, fence=fence)
        if refusal is not None:
            return await self._done(request, Outcome.REFUSED, refusal)
        if limits.compensate_command:
            failure = await self.commands.compensate(task, limits)
            if failure is not None:
                return await self._done(
                    request,
                    Outcome.REFUSED,
                    f"not resuming {task.task_id}: {failure}",
                    data={"compensation": "failed"},
                )
        try:
            task, lease = await self.store.resume_task(
                request.task_id,
                expected_token=token,
                actor=request.actor,
                reason=request.reason,
            )
        except ActionRefused as exc:
            return await self._done(request, Outcome.REFUSED, str(exc))
        where = f"checkpoint {task.checkpoint}" if task.checkpoint else "no checkpoint"
        if not task.command and not limits.resume_command:
            return await self._done(
                request,
                Outcome.REQUEUED,
                f"{task.task_id} requeued for its engine as attempt {task.attempt} ({where})"
                + stopped,
                token=lease.token,
            )
        try:
            launch = await asyncio.to_thread(self.commands.launch, task, limits)
        except (OSError, ActionRefused, UnsafePath) as exc:
            return await self._done(
                request,
                Outcome.REQUEUED,
                f"{task.task_id} requeued as attempt {task.attempt}, "
                f"but could not be relaunched: {exc}",
                token=lease.token,
            )
        how = "relaunched" if task.command else "ran resume_command for"
        return await self._done(
            request,
            Outcome.RELAUNCHED,
            f"{how} {task.task_id} as attempt {task.attempt} from {where} "
            f"(pid {launch.pid}, log {launch.log}){stopped}",
            token=lease.token,
            data={"pid": launch.pid, "log": str(launch.log), "argv": list(launch.argv)},
        )

    # Kill ----------------------------------------------------------------------------------

    async def _kill(self, request: ActionRequest, record: TaskRecord) -> ActionOutcome:
        task = record.task
        return await self.kill_process(
            request,
            task,
            self.config.limits_for(task.step_type).kill_grace,
            pending=record.pending_kill,
        )

    async def kill_process(
        self,
        request: ActionRequest,
        task: Task,
        grace: float,
        *,
        pending: PendingKill | None,
        source: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> ActionOutcome:
        """SIGTERM the process of ``task`` on this host after checking its identity, with a
        kill record in the store first (see ``GracefulKill.start``)."""
        return await self.kills.start(
            request, task, grace, pending=pending, source=source, data=data
        )

    async def complete_pending_kills(
        self, vouch: Vouch | None = None, *, sources: Collection[str] = ()
    ) -> list[ActionOutcome]:
        """Close each open kill on this host whose process exited; SIGKILL those past the grace
        (see ``GracefulKill.complete_pending``: a source's kill needs ``vouch``)."""
        if self.read_only:
            return []
        return await self.kills.complete_pending(vouch, sources=sources)
