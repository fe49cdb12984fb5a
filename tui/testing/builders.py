"""The clock, the host and the small builders every sample task is made with.

Every time is counted back from ``NOW``, the frozen moment the sample screens show.
"""

from __future__ import annotations

from dataclasses import replace

from zombietop.config import Config, default_config
from zombietop.model import Heartbeat, Lease, ProcessSample, Task, TaskState
from zombietop.start_identity import StartIdentity

NOW = 1_796_000_000.0
"""2026-11-30 00:53:20 UTC: the frozen moment every sample screen shows."""
HOST = "batch-01"
BOOTED = NOW - 9 * 86400.0
"""When the sample host booted: the kernel counts its processes' starts in ticks from here."""
BOOT_ID = "5d3ac1f0-7a9e-4d6b-9a51-2f0c8e4b7d21"
M, H = 60.0, 3600.0
"""A minute and an hour, in seconds."""


def kernel_start(ago: float) -> StartIdentity:
    """The kernel's count of a sample process's start (100 ticks a second)."""
    return StartIdentity(boot_id=BOOT_ID, ticks=round((NOW - ago - BOOTED) * 100))


def sample_config() -> Config:
    """The defaults, plus an ``export`` step type with a longer stage budget from a file and
    a runbook."""
    config = default_config()
    export = replace(
        config.defaults,
        stage=45 * M,
        step_type="export",
        runbook="https://wiki.example/runbooks/{step_type}#{stage}",
        sources={"stage": "config.toml [step_types.export]"},
    )
    return replace(config, step_types={"export": export})


def make_task(
    task_id: str,
    state: TaskState,
    *,
    started_ago: float,
    pid: int | None = None,
    step_type: str = "batch",
    attempt: int = 1,
    **extra: object,
) -> Task:
    """A task started ``started_ago`` seconds before ``NOW``; with a ``pid``, on ``HOST``."""
    run, _, number = task_id.rpartition("-")
    return Task(
        task_id=task_id,
        run_id=f"{run}-run-{number}",
        step=run,
        step_type=step_type,
        state=state,
        attempt=attempt,
        host=HOST if pid is not None or state.executing else None,
        pid=pid,
        pid_start_time=NOW - started_ago if pid is not None else None,
        pid_start_identity=kernel_start(started_ago) if pid is not None else None,
        created_at=NOW - started_ago - 5,
        claimed_at=NOW - started_ago if state is not TaskState.QUEUED else None,
        started_at=NOW - started_ago
        if state not in (TaskState.QUEUED, TaskState.STARTING)
        else None,
        updated_at=NOW - 1,
        **extra,  # type: ignore[arg-type]
    )


def make_lease(task_id: str, pid: int, *, expires_in: float, token: int = 1) -> Lease:
    """The lease of the ``zombietop run`` wrapper of ``pid``, ending ``expires_in`` from now."""
    return Lease(
        task_id=task_id,
        owner=f"run-{pid}@{HOST}",
        token=token,
        acquired_at=NOW - 2 * H,
        renewed_at=NOW + expires_in - 300,
        expires_at=NOW + expires_in,
    )


def make_beat(
    task_id: str,
    stage: str,
    progress: float,
    *,
    age: float,
    stuck: float | None = None,
    stage_for: float = 5 * M,
    **extra: object,
) -> Heartbeat:
    """A heartbeat written ``age`` ago, whose progress last moved ``stuck`` ago (or ``age``)."""
    return Heartbeat(
        task_id=task_id,
        stage=stage,
        progress=progress,
        written_at=NOW - age,
        progress_changed_at=NOW - (stuck if stuck is not None else age),
        stage_started_at=NOW - stage_for,
        seq=100,
        **extra,  # type: ignore[arg-type]
    )


def alive_process(pid: int, cpu: float, *, started_ago: float) -> ProcessSample:
    """What the probe sees of a live process using ``cpu`` percent."""
    return ProcessSample(
        pid=pid,
        alive=True,
        status="sleeping" if cpu < 1 else "running",
        cpu_percent=cpu,
        rss_bytes=412 * 2**20,
        threads=4,
        create_time=NOW - started_ago,
        sampled_at=NOW,
    )
