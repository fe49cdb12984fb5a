"""The demo's worker programs: real Python jobs on the SDK, each misbehaving in one known way.

    python -m zombietop.tui.demo.jobs KIND --task ID --db STORE --config CONFIG

Each paces itself by its step type's heartbeat_interval (the demo config scales it with
``--speed``) and beats at once on start, so no task lingers in ``starting``. A relaunched
attempt (resumed by an operator) behaves and finishes: resuming is how the demo is fixed.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType

from zombietop.errors import LeaseLost
from zombietop.sdk import Job

FOREVER = 10**9


def say(text: str) -> None:
    """One timestamped line in the job's log (its stdout, which the demo sends to a file)."""
    stamp = datetime.now(UTC).strftime("%H:%M:%S")
    try:
        print(f"{stamp} {text}", flush=True)
    except BrokenPipeError:
        # Our wrapper is gone (the orphaned job killed it): its pipe with it. Carry on unheard,
        # as a job that outlives its wrapper does, so the demo shows the lease expiring.
        sys.stdout = open(os.devnull, "w")


def idle() -> None:
    """Sit alive and idle, like a process blocked on a lock or a dead socket."""
    time.sleep(FOREVER)


def finish(job: Job, tick: float, stage: str, start: float, end: float = 100.0) -> None:
    """Do the rest of the work properly: what a resumed attempt does."""
    say(f"attempt {job.attempt}: carrying on from {start:.0f}% to {end:.0f}%")
    progress = start
    while progress < end:
        progress = min(end, progress + 5)
        job.beat(stage, progress)
        time.sleep(tick)
    say("done")


def healthy(job: Job, tick: float) -> None:
    """Move along steadily through three stages; a new stage every hundred beats."""
    for stage in ("extract", "transform", "load"):
        for step in range(100):
            job.beat(stage, step, rows=step * 1000)
            time.sleep(tick)


def stalled(job: Job, tick: float) -> None:
    """The classic zombie: reach 61% in transform, then stay alive, idle and silent.

    Its wrapper keeps renewing the lease, so the lease says all is well; only the heartbeat
    age tells. The watchdog pages and quarantines it, which blocks the task downstream.
    """
    if job.attempt > 1:
        finish(job, tick, "transform", 61)
        return
    for progress in (52, 55, 58, 61):
        job.beat("transform", progress, rows=progress * 134_000)
        time.sleep(tick)
    say("blocked on a lock that will never be released (alive, 0% cpu, no heartbeats)")
    idle()


def spinning(job: Job, tick: float) -> None:
    """Keep beating, but stay at 37%: "one link is slow"."""
    if job.attempt > 1:
        finish(job, tick, "reindex", 37)
        return
    for progress in (30, 33, 35, 37):
        job.beat("reindex", progress, docs=progress * 1000)
        time.sleep(tick)
    say("retrying one slow shard forever: beating without progress")
    while True:
        job.beat("reindex", 37, docs=37_000)
        time.sleep(tick)


def dies(job: Job, tick: float) -> None:
    """Get killed outright (the OOM killer's SIGKILL): no handler runs, nothing records the end."""
    if job.attempt > 1:
        finish(job, tick, "resize", 45)
        return
    for progress in (20, 35, 45):
        job.beat("resize", progress, images=progress * 40)
        time.sleep(tick)
    say("allocating far too much memory... (simulating the OOM killer: SIGKILL)")
    os.kill(os.getpid(), signal.SIGKILL)


def orphaned(job: Job, tick: float) -> None:
    """Lose the wrapper that renews the lease, and carry on regardless until the lease expires."""
    if job.attempt > 1:
        finish(job, tick, "charge", 70)
        return
    for progress in (64, 67, 70):
        job.beat("charge", progress, invoices=progress * 10)
        time.sleep(tick)
    say(f"the wrapper (pid {os.getppid()}) is killed: nobody renews the lease any more")
    os.kill(os.getppid(), signal.SIGKILL)
    while True:
        try:
            job.beat("charge", 70, invoices=700)
        except LeaseLost as exc:
            say(f"{exc}; working on without a lease, unaware")
            idle()
        time.sleep(tick)


def hung_request(job: Job, tick: float) -> None:
    """Wait on a partner API far past the request budget, beating from a side thread meanwhile."""
    if job.attempt > 1:
        finish(job, tick, "push", 40)
        return
    for progress in (25, 33, 40):
        job.beat("push", progress, orders=progress * 12)
        time.sleep(tick)

    def keep_beating() -> None:
        with_errors_ignored(lambda: _beat_forever(job, tick))

    threading.Thread(target=keep_beating, daemon=True).start()
    say("POST partner-api/v2/orders: no answer, and the client's own timeout is an hour")
    # The bug the request_overrun flag catches: a client timeout far longer than the budget.
    with job.request("POST partner-api/v2/orders", timeout=3600):
        idle()


def _beat_forever(job: Job, tick: float) -> None:
    while True:
        time.sleep(tick)
        job.beat()


def with_errors_ignored(body: Callable[[], None]) -> None:
    try:
        body()
    except Exception as exc:  # a side thread's failure must not look like the job's
        say(f"heartbeat thread stopped: {exc}")


def stubborn(job: Job, tick: float) -> None:
    """Ignore SIGTERM, so a graceful kill has to escalate to SIGKILL after kill_grace."""

    def ignore(signum: int, frame: FrameType | None) -> None:
        say("got SIGTERM and ignored it (SIGKILL will come after the kill grace)")

    signal.signal(signal.SIGTERM, ignore)
    for step in range(1000):
        job.beat("compact", step / 10, segments=step)
        time.sleep(tick)


def checkpointed(job: Job, tick: float) -> None:
    """Checkpoint after every item; on SIGTERM the SDK marks it interrupted and exits.

    A resumed attempt starts from the last checkpoint, and says where in ``resumed_from``.
    """
    total = 300
    start = int((job.load_checkpoint() or {}).get("item", 0))
    say(f"attempt {job.attempt}: starting at item {start} of {total}")
    for item in range(start, total):
        job.beat("render", 100 * item / total, items=item, resumed_from=start)
        time.sleep(tick)
        job.checkpoint({"item": item + 1})
    job.beat("render", 100.0, items=total, resumed_from=start)
    say("done")


def upstream_done(job: Job, tick: float) -> None:
    """Run once the upstream succeeds (after someone resumes it): publish, and finish."""
    finish(job, tick, "publish", 0)


KINDS: dict[str, Callable[[Job, float], None]] = {
    "healthy": healthy,
    "stalled": stalled,
    "spinning": spinning,
    "dies": dies,
    "orphaned": orphaned,
    "hung-request": hung_request,
    "stubborn": stubborn,
    "checkpointed": checkpointed,
    "publish": upstream_done,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zombietop.tui.demo.jobs", description=__doc__)
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--task", required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    # Under `zombietop run` the job adopts the wrapper's lease; on its own it takes one.
    handle_sigterm = args.kind != "stubborn"
    with Job(
        args.task, db=args.db, config=args.config, step_type="demo", handle_sigterm=handle_sigterm
    ) as job:
        KINDS[args.kind](job, job.limits.heartbeat_interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
