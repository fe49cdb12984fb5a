"""Before a resume, stop the task's old process if it still lives on this host.

Nothing can fence out an orphan whose wrapper died, so without this two copies would run for
ever. The stop is SIGTERM (and SIGCONT) to the process group and to the task's processes that
left it, ``kill_grace``, then SIGKILL only if the same process is still alive.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable, Sequence

from zombietop.act.sweep import spared
from zombietop.act.task_processes import (
    Outside,
    alive_as,
    outside_group,
    pids_words,
    processes,
    signal_each,
    signal_target,
)
from zombietop.config import Limits
from zombietop.model import Task
from zombietop.procs import tie
from zombietop.start_identity import ProcessStart


async def stop_old_copy(
    task: Task, limits: Limits, *, host: str, fence: Callable[[], Awaitable[str | None]]
) -> tuple[str, str | None]:
    """Stop the task's recorded process if it still lives on ``host`` (this one), calling
    ``fence`` once before the first signal (it takes the task's lease, so the old copy's end is
    never recorded; it returns why to refuse, if it must).

    Return what was done (for the outcome) and why to refuse the resume, if it must.
    """
    pid = task.pid
    if pid is None or task.host != host or pid == os.getpid():
        # Our own process is an SDK job resuming itself: the new token fences it.
        return "", None
    if not await asyncio.to_thread(alive_as, pid, task.pid_start):
        return "", None
    if await asyncio.to_thread(tie, pid, task.task_id) is None:
        # The store's pid alone is not trusted (see ``tie``): resume, signal nothing.
        return f"; pid {pid} is alive but carries no tag of {task.task_id}: not signalled", None
    pgid = await asyncio.to_thread(signal_target, pid)
    outside = await asyncio.to_thread(outside_group, task.task_id, pid, pgid, spared=spared())
    target = f"process group {pgid}" if pgid is not None else f"pid {pid}"
    if outside:
        target += f" and {processes(len(outside))} outside it ({pids_words(outside)})"
    try:
        os.kill(pid, 0)  # may we signal it at all? Asked before the lease is taken.
    except ProcessLookupError:
        return "", None
    except PermissionError:
        return "", not_ours(task, pid)
    refusal = await fence()
    if refusal is not None:
        return "", refusal
    how = "SIGTERM"
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            for each in (sig, signal.SIGCONT) if sig is signal.SIGTERM else (sig,):
                if pgid is not None:
                    os.killpg(pgid, each)
                else:
                    os.kill(pid, each)
        except ProcessLookupError:
            if not outside:
                break
        except PermissionError:
            return "", not_ours(task, pid)
        outside = await asyncio.to_thread(signal_each, outside, sig, task.task_id)
        how = sig.name
        if await gone_within(pid, task.pid_start, outside, limits.kill_grace):
            break
    else:
        return "", (
            f"not resuming {task.task_id}: its old process (pid {pid}) outlived SIGKILL; "
            "find out what holds it (uninterruptible I/O?) and resume once it is gone (its "
            "lease is taken: it can no longer record an end)"
        )
    return f"; stopped the old copy first ({target} exited after {how})", None


def not_ours(task: Task, pid: int) -> str:
    """Why a resume is refused when the old process is another user's."""
    return (
        f"not resuming {task.task_id}: its old process (pid {pid}) is still alive "
        f"and not ours to signal; stop it as its owner (kill {pid}), then resume"
    )


async def gone_within(
    pid: int, start: ProcessStart | None, outside: Sequence[Outside], seconds: float
) -> bool:
    """Wait up to ``seconds`` of real time for ``pid`` and ``outside`` to exit (a real
    process's grace)."""
    deadline = time.monotonic() + seconds

    def alive() -> bool:
        return alive_as(pid, start) or any(each.alive() for each in outside)

    while await asyncio.to_thread(alive):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)
    return True
