"""An agent fleet's writes on PostgreSQL: samples stored per second by the agents' ticks, beside
a bare batched ``INSERT ... ON CONFLICT`` of the same rows (the limit) in the same run.

    python bench/fleet_ingest.py [--agents 100,1000] [--tasks 30] [--rounds 5]

A throwaway PostgreSQL (tests/pg_server.py, as the test suite starts it: unix socket only,
fsync off) holds a fresh store. Each agent is a host with ``--tasks`` running processes; one
round is every agent's tick writes, one after the other on one connection:

- ``round``: what ``zombietop agent`` writes each tick (``record_agent_round``: its beat,
  its samples and the pruning of the ones it no longer sees, one statement over arrays);
- ``beat + unnest``: ``record_agent_beat`` then ``record_process_samples``, two transactions,
  the samples in one statement over arrays;
- ``beat + executemany``: the same with the samples sent by asyncpg's executemany, one
  statement per row inside the transaction (how an agent wrote before);
- ``bare insert``: only the samples, one multi-row ``INSERT ... VALUES ... ON CONFLICT DO
  UPDATE`` per host, with no transaction around it, no clock read, no agent beat, no pruning.

A first round fills the table, so every measured row is an update, as an agent's steady state
is. The paths take turns round by round; each figure is the median of its rounds. Goal: the
round's rows per second at least half of the bare insert's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import asyncpg  # noqa: E402

from tests.pg_server import ThrowawayServer, bench_server  # noqa: E402
from zombietop.model import ProcessSample  # noqa: E402
from zombietop.store.beats import sample_params  # noqa: E402
from zombietop.store.postgres import PostgresStore, Q  # noqa: E402

COLUMNS = (
    "task_id, host, pid, alive, identity_ok, status, cpu_percent, rss_bytes, threads, io_idle_s, "
    "idle_s, children, create_time, sampled_at, written_at, source, after_finish"
)
NAMES = [name.strip() for name in COLUMNS.split(",")]
UPDATE = ", ".join(f"{name} = excluded.{name}" for name in NAMES if name != "task_id")


def fleet(agents: int, tasks: int, round_no: int) -> dict[str, dict[str, ProcessSample]]:
    """Every host's samples for one round (they change each round, as a real tick's do)."""
    return {
        f"host-{a:04d}": {
            f"host-{a:04d}-task-{t:02d}": ProcessSample(
                pid=10_000 + t,
                alive=True,
                status="sleeping",
                cpu_percent=float((a + t + round_no) % 100),
                rss_bytes=50_000_000 + round_no,
                threads=4,
                io_idle_s=1.0 * round_no,
                idle_s=0.5 * round_no,
                children=1,
                create_time=1_700_000_000.0 + t,
                sampled_at=1_700_000_100.0 + round_no,
            )
            for t in range(tasks)
        }
        for a in range(agents)
    }


async def rounds_of(store: PostgresStore, hosts: dict[str, dict[str, ProcessSample]]) -> None:
    for host, samples in hosts.items():
        await store.record_agent_round(
            host,
            agent_id=f"agent@{host}",
            pid=1,
            interval=2.0,
            reported_at=time.time(),
            samples=samples,
        )


async def ticks(store: PostgresStore, hosts: dict[str, dict[str, ProcessSample]]) -> None:
    for host, samples in hosts.items():
        await store.record_agent_beat(
            host, agent_id=f"agent@{host}", pid=1, interval=2.0, reported_at=time.time()
        )
        await store.record_process_samples(host, samples)


def bare_insert(conn: asyncpg.Connection, tasks: int) -> Callable[..., Awaitable[None]]:
    width = len(NAMES)
    values = ", ".join(
        "(" + ", ".join(f"${row * width + col + 1}" for col in range(width)) + ")"
        for row in range(tasks)
    )
    sql = (
        f"INSERT INTO process_samples ({COLUMNS}) VALUES {values} "
        f"ON CONFLICT (task_id) DO UPDATE SET {UPDATE}"
    )

    async def run(hosts: dict[str, dict[str, ProcessSample]]) -> None:
        now = time.time()
        for host, samples in hosts.items():
            args: list[Any] = []
            for task_id, sample in samples.items():
                params = sample_params(task_id, host, sample, now)
                params["written_at"] = params.pop("now")
                args += [params[name] for name in NAMES]
            await conn.execute(sql, *args)

    return run


async def per_row(db: asyncpg.Connection, name: str, params: list[dict[str, Any]]) -> None:
    """The samples as an agent wrote them before: asyncpg's executemany, one statement per row
    (here the bulk block with one element per array) inside the tick's transaction."""
    query = Q[f"{name}_bulk"]
    await db.executemany(query.sql, [[[each[n]] for n in query.names] for each in params])


async def measure(url: str, agents: int, tasks: int, rounds: int) -> dict[str, Any]:
    store = await PostgresStore.open(url, create=True)
    old = await PostgresStore.open(url)
    old._run_bulk = per_row  # type: ignore[method-assign]
    conn = await asyncpg.connect(url)
    bare = bare_insert(conn, tasks)
    paths: dict[str, Callable[..., Awaitable[None]]] = {
        "round": lambda hosts: rounds_of(store, hosts),
        "beat + unnest": lambda hosts: ticks(store, hosts),
        "beat + executemany": lambda hosts: ticks(old, hosts),
        "bare insert": bare,
    }
    await rounds_of(store, fleet(agents, tasks, 0))
    rates: dict[str, list[float]] = {name: [] for name in paths}
    for round_no in range(1, rounds + 1):
        hosts = fleet(agents, tasks, round_no)
        for name, path in paths.items():
            start = time.perf_counter()
            await path(hosts)
            rates[name].append(agents * tasks / (time.perf_counter() - start))
    stored = await conn.fetchval("SELECT count(*) FROM process_samples")
    assert stored == agents * tasks, f"{stored} rows, expected {agents * tasks}"
    await conn.close()
    await old.close()
    await store.close()
    medians = {name: statistics.median(values) for name, values in rates.items()}
    return {
        "agents": agents,
        "tasks_per_agent": tasks,
        "rows_per_s": {name: round(value) for name, value in medians.items()},
        "vs_bare": {
            name: round(value / medians["bare insert"], 2)
            for name, value in medians.items()
            if name != "bare insert"
        },
    }


async def main_async(args: argparse.Namespace, server: ThrowawayServer) -> list[dict[str, Any]]:
    return [
        await measure(await server.new_database(), agents, args.tasks, args.rounds)
        for agents in args.agents
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--agents", type=lambda text: [int(each) for each in text.split(",")], default=[100, 1000]
    )
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with bench_server("fleet_ingest") as server:
        results = asyncio.run(main_async(args, server))
    for each in results:
        print(json.dumps(each))


if __name__ == "__main__":
    main()
