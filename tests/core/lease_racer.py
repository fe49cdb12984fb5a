"""One contender in the lease race: acquire, renew, release and reclaim at random.

Run as ``python lease_racer.py DB NAME OPERATIONS SEED``. It opens the store, prints ``ready``,
and waits for a line on stdin, so that every contender starts at once however slow the machine
is; then it does OPERATIONS operations (a fixed amount of work, never a length of time). Exits 0
when only lease refusals happened; any other error (a "database is locked" above all) is printed
and exits 1.
"""

from __future__ import annotations

import asyncio
import random
import sys

from zombietop.errors import LeaseHeld, LeaseLost
from zombietop.store import open_store

TTL = 0.12
TASKS = ("race-a", "race-b")


async def race(db: str, name: str, operations: int, seed: int) -> int:
    rng = random.Random(seed)
    held: dict[str, int] = {}
    async with await open_store(db) as store:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        for _ in range(operations):
            task_id = rng.choice(TASKS)
            try:
                if task_id in held:
                    roll = rng.random()
                    if roll < 0.7:
                        await store.renew_lease(task_id, owner=name, token=held[task_id], ttl=TTL)
                    elif roll < 0.85:
                        await store.release_lease(task_id, owner=name, token=held.pop(task_id))
                    else:
                        # Go quiet past the TTL, then try to carry on as if nothing happened.
                        await asyncio.sleep(TTL * rng.uniform(1.0, 1.6))
                        await store.renew_lease(task_id, owner=name, token=held[task_id], ttl=TTL)
                else:
                    try:
                        lease = await store.acquire_lease(task_id, owner=name, ttl=TTL)
                    except LeaseHeld:
                        lease = await store.reclaim_lease(task_id, owner=name, ttl=TTL)
                    held[task_id] = lease.token
            except (LeaseHeld, LeaseLost):
                held.pop(task_id, None)
            await asyncio.sleep(rng.uniform(0, 0.002))
    return 0


if __name__ == "__main__":
    db, name, operations, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    sys.exit(asyncio.run(race(db, name, operations, seed)))
