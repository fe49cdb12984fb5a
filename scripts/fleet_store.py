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

from core.errors import StoreError
from core.heartbeat_line import BeatLine
from core.store import open_store

LEASE_TTL_S = 300.0
SILENT_TTL_S = 30.0
"""The lease a silent task's worker took before it died: it expires half a minute in, so the
fleet settles (every silent task reclaimable, its ages in minutes) a minute and a half after
it starts."""


def is_silent(index: int, silent: int) -> bool:
    return bool(silent) and index % silent == silent - 1


async def main(db: str, tasks: int, beat_every: float, silent: int) -> None:
    async with await open_store(db, create=True) as store:
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
            except Exception:
                lease = await store.reclaim_lease(task_id, owner=owner, ttl=ttl)
            leases[task_id] = (owner, lease.token)
        print(f"{tasks} tasks in {db}; beating every {beat_every:g}s (ctrl-c to stop)", flush=True)
        tick = 0
        ids = list(leases)
        while True:
            tick += 1
            for index, task_id in enumerate(ids):
                if is_silent(index, silent):
                    continue  # these never beat: stalled, then reclaimable
                owner, token = leases[task_id]
                progress = (tick * 3 + index) % 100
                await store.record_heartbeat(
                    task_id,
                    BeatLine(stage="work", progress=float(progress), counters={"rows": tick * 100}),
                    owner=owner,
                    token=token,
                )
                await store.renew_lease(task_id, owner=owner, token=token, ttl=LEASE_TTL_S)
                await asyncio.sleep(beat_every / len(ids))


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
