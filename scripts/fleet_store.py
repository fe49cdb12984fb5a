"""Fill a store with N live tasks and keep them beating, to measure the dashboard against.

    python scripts/fleet_store.py --db /tmp/fleet.db --tasks 1000 [--beat-every 10] [--silent 10]

Creates the store (and the tasks, if missing), then renews every lease and records a heartbeat
for every task once per ``--beat-every`` seconds, spread evenly, until interrupted. One task in
``--silent`` never beats: its worker took a lease of ``SILENT_TTL_S`` and died, so the fleet has
stalled and reclaimable tasks too (0: all beat, a healthy fleet whose top rows are the tasks
about to beat, their ages ticking).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from zombietop.errors import LeaseHeld, LeaseLost, StoreError
from zombietop.heartbeat_line import BeatLine
from zombietop.store import Store, open_store

LEASE_TTL_S = 300.0
SILENT_TTL_S = 30.0
"""The lease a silent task's worker took before it died: it expires half a minute in, so the
fleet settles (every silent task reclaimable, its ages in minutes) a minute and a half after
it starts."""


def is_silent(index: int, silent: int) -> bool:
    return bool(silent) and index % silent == silent - 1


async def enlist(store: Store, tasks: int, silent: int) -> dict[str, tuple[str, int]]:
    """Create the fleet's tasks (those missing) and take a lease on each, as its worker would;
    return each task's lease owner and token, in task order."""
    leases: dict[str, tuple[str, int]] = {}
    for i in range(tasks):
        task_id = f"job-{i:04d}"
        with contextlib.suppress(StoreError):
            await store.create_task(
                task_id=task_id,
                run_id=f"run-{i // 10}",
                step="job",
                step_type="batch",
                actor="fleet",
                host="fleet-host",
            )
        owner = f"fleet-{i}@fleet-host"
        ttl = SILENT_TTL_S if is_silent(i, silent) else LEASE_TTL_S
        try:
            lease = await store.acquire_lease(task_id, owner=owner, ttl=ttl)
        except LeaseHeld:  # a fleet run before this one left it leased
            lease = await store.reclaim_lease(task_id, owner=owner, ttl=ttl)
        leases[task_id] = (owner, lease.token)
    return leases


async def beat_once(
    store: Store, task_id: str, lease: tuple[str, int], tick: int, index: int
) -> tuple[str, int]:
    """One beat (progress and counters moving) and one renewal, as a worker's SDK records them;
    return the lease beaten under.

    A lease that expired before this beat (enlisting 100,000 tasks takes longer than a lease
    lasts, and on a busy machine so can one round of beats) is taken again, as a worker
    restarted by its supervisor would.
    """
    owner, token = lease
    progress = (tick * 3 + index) % 100
    line = BeatLine(stage="work", progress=float(progress), counters={"rows": tick * 100})
    try:
        await store.record_heartbeat(task_id, line, owner=owner, token=token)
        await store.renew_lease(task_id, owner=owner, token=token, ttl=LEASE_TTL_S)
    except LeaseLost:
        token = (await store.reclaim_lease(task_id, owner=owner, ttl=LEASE_TTL_S)).token
        await store.record_heartbeat(task_id, line, owner=owner, token=token)
    return owner, token


async def main(db: str, tasks: int, beat_every: float, silent: int) -> None:
    async with await open_store(db, create=True) as store:
        try:
            leases = await enlist(store, tasks, silent)
        except LeaseHeld as exc:  # an earlier fleet still beats here, or its leases live on
            raise SystemExit(
                f"fleet_store.py: {exc}; stop that fleet, or pass a new --db"
            ) from None
        print(f"{tasks} tasks in {db}; beating every {beat_every:g}s (ctrl-c to stop)", flush=True)
        tick = 0
        while True:
            tick += 1
            for index, (task_id, lease) in enumerate(leases.items()):
                if is_silent(index, silent):
                    continue  # these never beat: stalled, then reclaimable
                leases[task_id] = await beat_once(store, task_id, lease, tick, index)
                await asyncio.sleep(beat_every / len(leases))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--beat-every", type=float, default=10.0)
    parser.add_argument(
        "--silent", type=int, default=10, help="one task in N never beats (0: every task beats)"
    )
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(args.db, args.tasks, args.beat_every, args.silent))
