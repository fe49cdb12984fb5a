"""Starting a run of a job: a job is a name that runs again and again, and each run is a task.

A run's task id is ``<job>/<run>``: ``<run>`` is the one asked for (``--run ID``), or by default
the start time in UTC (``20261201T023000Z``), made unique within the job with ``-2``, ``-3``.
A run's step and step type default to the job's name, so ``[step_types.<job>]`` configures the
job, and a schedule that names the job counts its runs. ``zombietop run --job`` and the SDK's
``Job(job=...)`` both start runs here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from zombietop.errors import LeaseHeld, TaskNotFound, ZombietopError
from zombietop.run.claim import Claim, claim_task
from zombietop.store import Store

RUN_STAMP = "%Y%m%dT%H%M%SZ"
"""How a run is named by default: its start, in UTC, to the second."""
MAX_SUFFIX = 1000
"""How many runs of one job may start within the same second before we give up."""


def run_stamp(now: float) -> str:
    """The default name of a run started at ``now``: ``20261201T023000Z``."""
    return time.strftime(RUN_STAMP, time.gmtime(now))


def check_job_name(job: str) -> str:
    """Return the job's name, or raise when it cannot name one."""
    if not job or not job.strip():
        raise ZombietopError("a job name must not be empty: give one, e.g. --job nightly-export")
    if job != job.strip():
        raise ZombietopError(f"the job name {job!r} starts or ends with a space; remove it")
    return job


def run_task_id(job: str, run: str) -> str:
    """The task id of run ``run`` of ``job``."""
    return f"{job}/{run}"


async def claim_run(
    store: Store,
    *,
    job: str,
    owner: str,
    ttl: float,
    run: str | None = None,
    step_type: str | None = None,
    after: Sequence[str] = (),
    command: Sequence[str] = (),
    cwd: str | None = None,
    host: str | None = None,
    wait: bool = False,
    window: float = 0.0,
) -> Claim:
    """Start a run of ``job`` and take its lease (``wait``, ``window``: as ``claim_task`` says).

    With ``run``, that exact run: an unfinished one is claimed again (resume and attempts stay
    per run), a finished one refused. Without, a new run named by the store's clock.
    """
    check_job_name(job)

    async def claim(task_id: str, run_id: str) -> Claim:
        return await claim_task(
            store,
            task_id=task_id,
            run_id=run_id,
            job=job,
            step=job,
            step_type=step_type or job,
            owner=owner,
            ttl=ttl,
            after=after,
            command=command,
            cwd=cwd,
            host=host,
            wait=wait,
            window=window,
        )

    if run is not None:
        if not run.strip():
            raise ZombietopError(f"a run of {job} needs a name: --run must not be empty")
        return await claim(run_task_id(job, run), run)
    stamp = run_stamp(await store.now())
    for number in range(1, MAX_SUFFIX + 1):
        name = stamp if number == 1 else f"{stamp}-{number}"
        task_id = run_task_id(job, name)
        try:
            await store.get_task(task_id)
            continue
        except TaskNotFound:
            pass
        try:
            return await claim(task_id, name)
        except LeaseHeld:
            # Another run of the job took this name between our read and our write.
            continue
    raise ZombietopError(
        f"{MAX_SUFFIX} runs of {job} started within one second; name this run with --run"
    )
