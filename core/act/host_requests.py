"""Actions that must run on another host: left in the store for the agent on the task's host.

Signals only reach local processes, and a relaunch (or its compensation) must start where the
task lives. The agent there carries the action out through its own executor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.config import Config
from zombietop.durations import format_age
from zombietop.errors import ActionRefused
from zombietop.model import TaskRecord
from zombietop.store import Store


class HostRequests:
    """Decide which actions belong to the task's host, and ask that host's agent for them."""

    def __init__(
        self, store: Store, config: Config, *, host: str, now: Callable[[], Awaitable[float]]
    ) -> None:
        self.store = store
        self.config = config
        self.host = host
        self._now = now

    def needed(self, request: ActionRequest, record: TaskRecord) -> bool:
        """True when the action must run on the task's host and that is not this one.

        A discard, or a resume that only requeues, is store work only.
        """
        task = record.task
        if task.host is None or task.host == self.host:
            return False
        if request.kind is ActionKind.KILL:
            return True
        if request.kind is ActionKind.RESUME:
            limits = self.config.limits_for(task.step_type)
            return bool(task.command or limits.resume_command or limits.compensate_command)
        return False

    async def ask(
        self, request: ActionRequest, host: str, *, source: str | None = None
    ) -> ActionOutcome:
        """Leave the action in the store for the agent on ``host`` (the task's); ``source``
        names the read-only source of a task the store does not hold."""
        try:
            asked = await self.store.request_host_action(
                task_id=request.task_id,
                host=host,
                kind=str(request.kind),
                expected_token=request.expected_token,
                actor=request.actor,
                reason=request.reason,
                source=source,
            )
        except ActionRefused as exc:
            return ActionOutcome(
                request=request,
                outcome=Outcome.REQUESTED,
                message=str(exc),
                new_token=request.expected_token,
            )
        now = await self._now()
        agent = next((a for a in await self.store.agents() if a.host == host), None)
        if agent is not None and agent.present(now):
            where = f"waiting for agent on {host}"
        else:
            seen = "" if agent is None else f", last seen {format_age(now - agent.seen_at)} ago"
            where = f"no agent on {host}{seen}: it waits until `zombietop agent` runs there"
        return ActionOutcome(
            request=request,
            outcome=Outcome.REQUESTED,
            message=f"{request.kind} of {request.task_id} requested: {where}",
            new_token=request.expected_token,
            request_id=asked.request_id,
        )
