"""Retention of PostgreSQL's event log: a past day removed by dropping its partition, beside the
same rows removed by DELETE, in one run on a throwaway PostgreSQL (tests/pg_server.py).

    python bench/event_days.py [--events 300000]

Two fresh stores get the same ``--events`` events of tasks already pruned, spread over one day
40 days ago, in that day's partition. One store drops the day as the pruner does
(``keep_partitions``); the other deletes the same rows with one ``DELETE`` (cheaper than the
per-task deletes of a prune pass, which do the same work in batches). For each: the time (for the drop, the whole upkeep: the check that
no task in the day still needs its events, and the coming days made), and
the log's size on disk before, after, and after a plain ``VACUUM`` (which a busy server runs on
its own schedule; until then deleted rows keep their space).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import asyncpg  # noqa: E402

from tests.pg_server import ThrowawayServer, bench_server  # noqa: E402
from zombietop.clock import FakeClock  # noqa: E402
from zombietop.store.pg_partitions import partition_name  # noqa: E402
from zombietop.store.postgres import PostgresStore  # noqa: E402
from zombietop.store.retention import DAY_S, day_start  # noqa: E402

SIZE = "SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'events'::regclass"


async def filled(url: str, events: int, day: float) -> None:
    """A store whose day ``day`` holds ``events`` events of 1,000 tasks that are gone."""
    store = await PostgresStore.open(url, pinned_clock=FakeClock(day + 1.0))
    await store.keep_partitions(0.0)
    await store.close()
    conn = await asyncpg.connect(url)
    await conn.execute(
        "INSERT INTO events (at, task_id, kind, actor, message, data) "
        "SELECT $1 + (n % 86000), 'gone-' || (n % 1000), 'state_changed', 'zombietop', "
        '\'running -> succeeded\', \'{"from": "running", "to": "succeeded"}\' '
        "FROM generate_series(1, $2) n",
        day,
        events,
    )
    await conn.execute("ANALYZE events")
    await conn.close()


async def one_way(url: str, day: float, how: str) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    before = await conn.fetchval(SIZE)
    if how == "drop":
        store = await PostgresStore.open(url, pinned_clock=FakeClock(day + 40 * DAY_S))
        start = time.perf_counter()
        run = await store.keep_partitions(day + 10 * DAY_S)
        took = time.perf_counter() - start
        await store.close()
        assert partition_name(day) in run.dropped, run
    else:
        start = time.perf_counter()
        await conn.execute("DELETE FROM events WHERE at >= $1 AND at < $2", day, day + DAY_S)
        took = time.perf_counter() - start
    after = await conn.fetchval(SIZE)
    await conn.execute("VACUUM events")
    vacuumed = await conn.fetchval(SIZE)
    left = await conn.fetchval("SELECT count(*) FROM events WHERE at < $1", day + DAY_S)
    await conn.close()
    assert left == 0
    return {
        "how": how,
        "seconds": round(took, 3),
        "mb_before": round(float(before) / 1e6, 1),
        "mb_after": round(float(after) / 1e6, 1),
        "mb_after_vacuum": round(float(vacuumed) / 1e6, 1),
    }


async def main_async(server: ThrowawayServer, events: int) -> list[dict[str, Any]]:
    day = day_start(time.time()) - 40 * DAY_S
    results = []
    for how in ("drop", "delete"):
        url = await server.new_database()
        await filled(url, events, day)
        results.append({"events": events, **await one_way(url, day, how)})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    args = parser.parse_args()
    with bench_server("event_days") as server:
        results = asyncio.run(main_async(server, args.events))
    for each in results:
        print(json.dumps(each))


if __name__ == "__main__":
    main()
