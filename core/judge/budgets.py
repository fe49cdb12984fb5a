"""The layered timeouts, measured: how much of its request, stage and task budgets a task has
used, and which of them it has run over (``request < stage < task``). Pure functions of the
task, its heartbeat, its limits and ``now``, as the classifier that calls them is."""

from __future__ import annotations

from dataclasses import dataclass

from zombietop.config import Limits
from zombietop.health import Flag
from zombietop.model import Heartbeat, Task


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """Time used against one layer of the layered timeout."""

    used_s: float | None
    limit_s: float
    source: str
    """Where the limit came from: ``default`` or a file and section."""

    @property
    def over(self) -> bool:
        return self.used_s is not None and self.used_s > self.limit_s

    @property
    def fraction(self) -> float | None:
        return None if self.used_s is None else self.used_s / self.limit_s


@dataclass(frozen=True, slots=True, kw_only=True)
class Budgets:
    request: Budget
    stage: Budget
    task: Budget


def start_of(task: Task) -> float:
    """When the task began: started, else claimed, else created."""
    if task.started_at is not None:
        return task.started_at
    return task.claimed_at if task.claimed_at is not None else task.created_at


def used(
    now: float, task: Task, heartbeat: Heartbeat | None
) -> tuple[float | None, float | None, float | None]:
    """Seconds used of the request, stage and task budgets (None: not running one)."""
    request_used = stage_used = task_used = None
    if task.state.executing:
        start = start_of(task)
        task_used = now - start
        stage_start = heartbeat.stage_started_at if heartbeat is not None else start
        stage_used = now - stage_start
        if (
            heartbeat is not None
            and heartbeat.request_name
            and heartbeat.request_started_at is not None
        ):
            request_used = now - heartbeat.request_started_at
    elif task.finished_at is not None and task.started_at is not None:
        task_used = task.finished_at - task.started_at
    return request_used, stage_used, task_used


def overruns(
    used: tuple[float | None, float | None, float | None], limits: Limits
) -> tuple[Flag, ...]:
    """The flags of the budgets ``used`` runs over (as ``Budget.over``), request first."""
    request_used, stage_used, task_used = used
    flags: list[Flag] = []
    if request_used is not None and request_used > limits.request:
        flags.append(Flag.REQUEST_OVERRUN)
    if stage_used is not None and stage_used > limits.stage:
        flags.append(Flag.STAGE_OVERRUN)
    if task_used is not None and task_used > limits.task:
        flags.append(Flag.TASK_OVERRUN)
    return tuple(flags)


def measure_budgets(task: Task, heartbeat: Heartbeat | None, limits: Limits, now: float) -> Budgets:
    request_used, stage_used, task_used = used(now, task, heartbeat)
    return Budgets(
        request=Budget(
            used_s=request_used, limit_s=limits.request, source=limits.source("request")
        ),
        stage=Budget(used_s=stage_used, limit_s=limits.stage, source=limits.source("stage")),
        task=Budget(used_s=task_used, limit_s=limits.task, source=limits.source("task")),
    )
