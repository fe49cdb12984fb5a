"""Fill a store with N live tasks and keep them beating, to measure the dashboard against.

    python scripts/fleet_store.py --db /tmp/fleet.db --tasks 1000 [--beat-every 10] [--silent 10]

Creates the store (and the tasks, if missing), then renews every lease and records a heartbeat
for every task once per ``--beat-every`` seconds, spread evenly, until interrupted. One task in
``--silent`` never beats: its worker took a lease of ``SILENT_TTL_S`` and died, so the fleet has
stalled and reclaimable tasks too (0: all beat, a healthy fleet whose top rows are the tasks
about to beat, their ages ticking).

    python scripts/fleet_store.py --db postgresql://... --tasks 1000000 [--agents 1000]

On PostgreSQL (a ``postgresql://`` URL) the fleet is a platform team's: the tasks are dealt to
1,000 hosts and written with COPY, 10,000 rows a trip, in the mix of ``MIX`` (most running and
beating, some stalled, dead, reclaimable, queued or finished); then one agent per host (up to
``--agents``) sends its host's samples each ``--beat-every`` seconds with the agent's own store
call, ``record_agent_round``. ``--no-fill`` beats into a fleet filled before.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from typing import Any

from zombietop.errors import LeaseHeld, LeaseLost, StoreError
from zombietop.heartbeat_line import BeatLine
from zombietop.model import ProcessSample
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


# PostgreSQL: a platform team's fleet, one agent per host, filled in bulk.

HOSTS = 1000
FILL_BATCH = 10_000
"""Rows per COPY: one trip per batch, where ``create_task`` and ``acquire_lease`` are two per
task (a million tasks would take hours)."""

MIX = (
    (80, "healthy"),
    (3, "stalled"),
    (2, "dead"),
    (2, "reclaimable"),
    (5, "queued"),
    (8, "finished"),
)
"""What each hundred tasks of a fleet are doing: most run and beat, a few have stopped moving,
lost their process or their lease, some wait in the queue and some have finished."""
KIND_OF = [kind for share, kind in MIX for _ in range(share)]
FINISHED_SPREAD_S = 2 * 86_400.0
"""Finished tasks end across the last two days, so a day of retention prunes about half."""


def pg_kind(index: int) -> str:
    """What task ``index`` of a PostgreSQL fleet is doing (see MIX)."""
    # Tasks go to the hosts in turn, so the mix turns with each round of hosts too: every host
    # has a share of each kind, not one kind alone.
    return KIND_OF[(index + index // HOSTS) % len(KIND_OF)]


def pg_task(index: int) -> tuple[str, str]:
    """The task id and host of task ``index``: tasks are dealt to the hosts in turn."""
    return f"job-{index:07d}", f"host-{index % HOSTS:04d}"


def pg_rows(
    index: int, now: float
) -> tuple[tuple[Any, ...], tuple[Any, ...] | None, tuple[Any, ...] | None]:
    """One task's rows for COPY: its task, its lease (or None) and its heartbeat (or None)."""
    task_id, host = pg_task(index)
    kind = pg_kind(index)
    created = now - 3_600.0 - index % 600
    state = {"queued": "queued", "finished": "succeeded"}.get(kind, "running")
    finished = now - (index * 7_919) % FINISHED_SPREAD_S if kind == "finished" else None
    started = None if kind == "queued" else created + 1.0
    task = (
        task_id,
        f"run-{index // 10}",
        "job",
        "batch",
        state,
        host,
        10_000 + index % 50_000,
        created,
        started,
        started,
        finished,
        finished or now,
        0 if finished else None,
    )
    if kind in ("queued", "finished"):
        return task, None, None
    expires = now - 600.0 if kind == "reclaimable" else now + LEASE_TTL_S
    lease = (task_id, f"agent@{host}", 1, started, now - 5.0, expires)
    beat_at = now - 1_800.0 if kind in ("dead", "reclaimable") else now - index % 10
    moved_at = now - 1_800.0 if kind == "stalled" else beat_at
    # A stage a few minutes old, within the default 15m budget (a stalled task's is not).
    stage_at = started if kind == "stalled" else beat_at - index % 300
    beat = (
        task_id,
        "work",
        float(index % 100),
        json.dumps({"rows": index}),
        beat_at,
        beat_at,
        moved_at,
        stage_at,
        1,
    )
    return task, lease, beat


PG_TASK_COLUMNS = (
    "task_id",
    "run_id",
    "step",
    "step_type",
    "state",
    "host",
    "pid",
    "created_at",
    "claimed_at",
    "started_at",
    "finished_at",
    "updated_at",
    "exit_code",
)
PG_LEASE_COLUMNS = ("task_id", "owner", "token", "acquired_at", "renewed_at", "expires_at")
PG_BEAT_COLUMNS = (
    "task_id",
    "stage",
    "progress",
    "counters",
    "reported_at",
    "written_at",
    "progress_changed_at",
    "stage_started_at",
    "seq",
)


async def fill_postgres(url: str, tasks: int, now: float | None = None) -> float:
    """Create the store at ``url`` and COPY ``tasks`` tasks into it, FILL_BATCH at a time, with
    their leases and heartbeats in MIX; return the moment the rows are written as of."""
    import asyncpg

    from zombietop.store.postgres import PostgresStore

    await (await PostgresStore.open(url, create=True)).close()  # the schema, migrated
    now = time.time() if now is None else now
    conn = await asyncpg.connect(url)
    try:
        for first in range(0, tasks, FILL_BATCH):
            rows = [pg_rows(i, now) for i in range(first, min(first + FILL_BATCH, tasks))]
            async with conn.transaction():
                await conn.copy_records_to_table(
                    "tasks", records=[row[0] for row in rows], columns=PG_TASK_COLUMNS
                )
                await conn.copy_records_to_table(
                    "leases", records=[r[1] for r in rows if r[1]], columns=PG_LEASE_COLUMNS
                )
                await conn.copy_records_to_table(
                    "heartbeats", records=[r[2] for r in rows if r[2]], columns=PG_BEAT_COLUMNS
                )
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    return now


def host_samples(host_no: int, tasks: int, tick: int, now: float) -> dict[str, ProcessSample]:
    """What host ``host_no``'s agent sees this tick: its tasks that have a process (healthy,
    stalled and dead ones; the dead ones' processes are gone)."""
    samples = {}
    for index in range(host_no, tasks, HOSTS):
        kind = pg_kind(index)
        if kind not in ("healthy", "stalled", "dead"):
            continue
        task_id, _ = pg_task(index)
        samples[task_id] = ProcessSample(
            pid=10_000 + index % 50_000,
            alive=kind != "dead",
            status="sleeping" if kind != "dead" else None,
            cpu_percent=float((index + tick) % 100),
            rss_bytes=50_000_000 + tick,
            threads=4,
            io_idle_s=1.0,
            idle_s=0.5,
            children=1,
            create_time=now - 3_600.0,
            sampled_at=now,
        )
    return samples


async def agent(
    store: Store, host_no: int, tasks: int, beat_every: float, stop: asyncio.Event
) -> int:
    """One host's agent: its real store call each tick (``record_agent_round``) until ``stop``;
    return its ticks. Agents start spread over the first ``beat_every`` seconds."""
    host = f"host-{host_no:04d}"
    ticks = 0
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), beat_every * host_no / HOSTS)
    while not stop.is_set():
        now = time.time()
        await store.record_agent_round(
            host,
            agent_id=f"agent@{host}",
            pid=1,
            interval=beat_every,
            reported_at=now,
            samples=host_samples(host_no, tasks, ticks, now),
        )
        ticks += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, beat_every - (time.time() - now)))
    return ticks


async def agents_beat(
    url: str, tasks: int, agents: int, beat_every: float, connections: int, stop: asyncio.Event
) -> int:
    """``agents`` agents (one asyncio task each) beating into the fleet at ``url`` over
    ``connections`` connections until ``stop``; return their ticks."""
    from zombietop.store.postgres import PostgresStore

    stores = [await PostgresStore.open(url) for _ in range(connections)]
    try:
        done = await asyncio.gather(
            *(
                agent(stores[n % connections], n, tasks, beat_every, stop)
                for n in range(min(agents, HOSTS))
            )
        )
    finally:
        for store in stores:
            await store.close()
    return sum(done)


async def main_postgres(url: str, tasks: int, beat_every: float, agents: int, fill: bool) -> None:
    if fill:
        started = time.perf_counter()
        await fill_postgres(url, tasks)
        print(f"{tasks} tasks in {time.perf_counter() - started:.1f}s", flush=True)
    print(f"{agents} agents beating every {beat_every:g}s (ctrl-c to stop)", flush=True)
    await agents_beat(url, tasks, agents, beat_every, PG_CONNECTIONS, asyncio.Event())


PG_CONNECTIONS = 8
"""The agents' connections: PostgreSQL serves 100 by default, and a thousand agents each on
their own would take them all (an agent's store holds one)."""


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--beat-every", type=float, default=10.0)
    parser.add_argument(
        "--silent", type=int, default=10, help="one task in N never beats (0: every task beats)"
    )
    parser.add_argument("--agents", type=int, default=HOSTS, help="PostgreSQL: agents beating")
    parser.add_argument("--no-fill", action="store_true", help="PostgreSQL: beat, do not fill")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        if args.db.startswith(("postgresql://", "postgres://")):
            asyncio.run(
                main_postgres(args.db, args.tasks, args.beat_every, args.agents, not args.no_fill)
            )
        else:
            asyncio.run(main(args.db, args.tasks, args.beat_every, args.silent))
