"""One contender in the lease race: acquire, renew, release and reclaim at random until told to stop.

Run as ``python lease_racer.py DB NAME SECONDS SEED``. Exits 0 when only lease refusals
happened; any other error (a "database is locked" above all) is printed and exits 1.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time

from zombietop.errors import LeaseHeld, LeaseLost
from zombietop.store import open_store

TTL = 0.12
TASKS = ("race-a", "race-b")


async def race(db: str, name: str, seconds: float, seed: int) -> int:
    rng = random.Random(seed)
    held: dict[str, int] = {}
    operations = 0
    async with await open_store(db) as store:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
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
            operations += 1
            await asyncio.sleep(rng.uniform(0, 0.002))
    print(operations)
    return 0


if __name__ == "__main__":
    db, name, seconds, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    sys.exit(asyncio.run(race(db, name, seconds, seed)))
