"""Claiming a task for execution: create it if needed, check its upstream, take the lease.

``zombietop run`` and the SDK's ``Job`` both start work through here, so both follow one rule:
nothing starts while an upstream task is quarantined or has not succeeded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from zombietop.durations import format_age
from zombietop.errors import StoreBusy, StoreError, TaskFinished, TaskNotFound, UpstreamBlocked
from zombietop.model import Lease, Task, TaskState
from zombietop.store import Store

DEFAULT_STEP_TYPE = "default"


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A task we now hold the lease on, and the name we hold it under."""

    task: Task
    lease: Lease
    owner: str

    @property
    def token(self) -> int:
        return self.lease.token


def owner_name(kind: str, host: str) -> str:
    """Name a lease owner after what holds it and where: ``run@build-3:4121``."""
    return f"{kind}@{host}:{os.getpid()}"


async def job_run_after(store: Store, name: str, since: float) -> Task | None:
    """The run of job ``name`` that a task waiting since ``since`` waits for, if it exists:
    the latest run, if it has not finished or was created at ``since`` or later."""
    runs = await store.job_runs(name, 1)
    if not runs:
        return None
    latest = runs[0]
    if latest.state.finished and latest.created_at < since:
        return None
    return latest


async def upstream_task(store: Store, name: str, since: float | None) -> Task | None:
    """The upstream task ``name``; for a task that has waited since ``since``, else the run
    of job ``name`` it waits for (``job_run_after``). None when neither exists."""
    try:
        return await store.get_task(name)
    except TaskNotFound:
        return None if since is None else await job_run_after(store, name, since)


async def check_upstream(
    store: Store, task_id: str, upstream: Sequence[str], since: float | None = None
) -> None:
    """Raise ``UpstreamBlocked`` unless every upstream task has succeeded and is not quarantined
    (``since``: when the task began to wait, to find a job's run named by the job's name)."""
    for name in dict.fromkeys(upstream):
        up = await upstream_task(store, name, since)
        if up is None:
            raise UpstreamBlocked(
                f"not starting {task_id}: upstream task {name!r} does not exist in "
                f"{store.describe()}; check the --after names"
            )
        if up.quarantined:
            why = f" ({up.quarantine_reason})" if up.quarantine_reason else ""
            raise UpstreamBlocked(
                f"not starting {task_id}: upstream {name} is quarantined{why}; "
                f"resume or discard {name} first"
            )
        if up.state is TaskState.INTERRUPTED:
            why = f" ({up.state_reason})" if up.state_reason else ""
            raise UpstreamBlocked(
                f"not starting {task_id}: upstream {name} was interrupted{why}, its work is "
                f"unfinished; resume {name} (or discard it) first"
            )
        if up.state is not TaskState.SUCCEEDED:
            raise UpstreamBlocked(
                f"not starting {task_id}: upstream {name} is {up.state}, not succeeded; "
                "wait for it, or resume it"
            )


def finished_refusal(task: Task, now: float) -> TaskFinished:
    """The error for a finished task asked to run again: what it is, and what to do instead."""
    ago = "" if task.finished_at is None else f" {format_age(now - task.finished_at)} ago"
    return TaskFinished(
        f"{task.task_id} finished ({task.state}{ago}): give each run its own id, or use "
        f"--job {task.job_name} to start a new run of it"
    )


async def claim_task(
    store: Store,
    *,
    task_id: str,
    owner: str,
    ttl: float,
    run_id: str | None = None,
    step: str | None = None,
    step_type: str | None = None,
    after: Sequence[str] = (),
    command: Sequence[str] = (),
    cwd: str | None = None,
    host: str | None = None,
    job: str | None = None,
    wait: bool = False,
    window: float = 0.0,
) -> Claim:
    """Create the task if it is new, check its upstream, and take its lease.

    With ``wait`` the upstream is not checked (it may not have started yet), and the task
    stays queued under the lease (``zombietop.run.upstream_wait``). ``window``: the one the
    wait resolved a job's name with, so that the start checks the run the wait saw succeed.
    An expired lease is reclaimed (the token grows); a live one raises ``LeaseHeld``, and a
    finished task ``TaskFinished`` (task ids are single-use).
    """
    try:
        existing: Task | None = await store.get_task(task_id)
    except TaskNotFound:
        existing = None
    if existing is not None and existing.state.finished:
        raise finished_refusal(existing, await store.now())
    upstream = [*(existing.upstream if existing else ()), *after]
    # Checked before creating: a refused start leaves nothing behind in the store.
    if not wait:
        since = None if existing is None else existing.created_at - window
        await check_upstream(store, task_id, upstream, since)
    if existing is None:
        try:
            await store.create_task(
                task_id=task_id,
                run_id=run_id or task_id,
                step=step or task_id,
                step_type=step_type or DEFAULT_STEP_TYPE,
                actor=owner,
                upstream=list(dict.fromkeys(after)),
                command=command,
                cwd=cwd,
                host=host,
                job=job,
            )
        except StoreBusy:
            raise  # a locked store: nothing was created, and the caller may try again
        except StoreError:
            # Someone created it between our read and our write; claiming it is still right.
            await store.get_task(task_id)
    lease = await store.get_lease(task_id)
    now = await store.now()
    if lease is not None and lease.held and lease.expired(now):
        lease = await store.reclaim_lease(task_id, owner=owner, ttl=ttl)
    else:
        lease = await store.acquire_lease(task_id, owner=owner, ttl=ttl, queued=wait)
    return Claim(task=await store.get_task(task_id), lease=lease, owner=owner)
