"""Indexes on the moments a quiet task is judged by, on PostgreSQL: what they would save a poll of
a large store, against what they would cost each beat.

    nice -n 19 python bench/moment_indexes.py [--tasks 1000000] [--beats 16000] [--rounds 3]

A poll past ``[monitor] read_at_most`` finds the loud tasks (``select_loud_tasks``: one pass over
every active task, its lease, its beat, its open kill and its gone process). With an index on
each moment (a beat's time, progress, stage and request; a lease's expiry) and on the tasks
that are always loud, the server could instead gather the loud tasks from index ranges. This
bench fills a throwaway PostgreSQL (``scripts/fleet_store.py``: the fleet of bench/fleet_pg.py,
and one round of its 1,000 agents' samples), then, without the indexes and with them:

- the poll's own query, ``select_loud_tasks`` (the shipped one), median of ``--rounds``;
- with them, the same loud tasks gathered from the indexes (``INDEXED_LOUD`` below): each
  index range, and the running tasks that have no beat or no lease yet (absent rows, which no
  index can list), then the quiet test on those alone;
- beats through the store (``record_heartbeat``, as a job's SDK sends them) from 8 writers,
  ``--beats`` beats a round over as many running tasks, median of ``--rounds`` rounds: every
  indexed moment a beat writes costs an index entry, and PostgreSQL can no longer update the
  beat's row in place;
- the size of the beats and leases tables with their indexes.

Prints a table. Not a test: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

import asyncpg  # noqa: E402
import fleet_store  # noqa: E402  (scripts/)

from tests.pg_server import bench_server  # noqa: E402
from zombietop.config import default_config  # noqa: E402
from zombietop.heartbeat_line import BeatLine  # noqa: E402
from zombietop.judge.quiet import quiet_bounds  # noqa: E402
from zombietop.store.columns import fill_columns  # noqa: E402
from zombietop.store.postgres import PostgresStore, Q, _Query  # noqa: E402

WRITERS = 8
READ_AT_MOST = 20_000

INDEXES = (
    "CREATE INDEX bench_beat_written ON heartbeats (written_at)",
    "CREATE INDEX bench_beat_progress ON heartbeats (progress_changed_at)",
    "CREATE INDEX bench_beat_stage ON heartbeats (stage_started_at)",
    "CREATE INDEX bench_beat_request ON heartbeats (request_started_at)"
    " WHERE coalesce(request_name, '') <> ''",
    "CREATE INDEX bench_beat_observed ON heartbeats (task_id)"
    " WHERE source IS DISTINCT FROM 'reported'",
    "CREATE INDEX bench_lease_expiry ON leases (expires_at)",
    "CREATE INDEX bench_lease_unowned ON leases (task_id) WHERE owner IS NULL OR expires_at IS NULL",
    "CREATE INDEX bench_task_always_loud ON tasks (task_id) WHERE finished_at IS NULL AND ("
    "quarantined_at IS NOT NULL OR heartbeat_error IS NOT NULL OR job IS NOT NULL"
    " OR state NOT IN ('running', 'queued') OR (state = 'queued' AND upstream <> '[]'))",
    "CREATE INDEX bench_task_began ON tasks ((coalesce(started_at, claimed_at, created_at)))"
    " WHERE finished_at IS NULL AND state = 'running'",
    "CREATE INDEX bench_task_queued ON tasks (created_at)"
    " WHERE finished_at IS NULL AND state = 'queued'",
    "CREATE INDEX bench_task_host ON tasks (host) WHERE finished_at IS NULL AND pid IS NOT NULL",
)
DROP = "DROP INDEX IF EXISTS " + ", ".join(sql.split()[2] for sql in INDEXES)

INDEXED_LOUD = """
WITH candidates AS (
    SELECT task_id FROM heartbeats WHERE written_at <= :quiet_beat
    UNION SELECT task_id FROM heartbeats WHERE progress_changed_at <= :quiet_progress
    UNION SELECT task_id FROM heartbeats WHERE stage_started_at <= :quiet_stage
    UNION SELECT task_id FROM heartbeats
          WHERE coalesce(request_name, '') <> '' AND request_started_at <= :quiet_request
    UNION SELECT task_id FROM heartbeats WHERE source IS DISTINCT FROM 'reported'
    UNION SELECT task_id FROM leases WHERE expires_at <= :quiet_at
    UNION SELECT task_id FROM leases WHERE owner IS NULL OR expires_at IS NULL
    UNION SELECT task_id FROM tasks WHERE finished_at IS NULL AND (quarantined_at IS NOT NULL
          OR heartbeat_error IS NOT NULL OR job IS NOT NULL OR state NOT IN ('running', 'queued')
          OR (state = 'queued' AND upstream <> '[]'))
    UNION SELECT task_id FROM tasks WHERE finished_at IS NULL AND state = 'running'
          AND coalesce(started_at, claimed_at, created_at) <= :quiet_task
    UNION SELECT task_id FROM tasks WHERE finished_at IS NULL AND state = 'queued'
          AND created_at <= :quiet_queued
    UNION SELECT task_id FROM tasks WHERE finished_at IS NULL AND pid IS NOT NULL
          AND host = :quiet_host
    UNION SELECT task_id FROM pending_kills WHERE outcome IS NULL
    UNION SELECT task_id FROM process_samples
          WHERE NOT alive OR NOT identity_ok OR status = 'zombie'
    -- A running task with no beat or no lease yet: absent rows, so every active task is read.
    UNION SELECT t.task_id FROM tasks t
          LEFT JOIN heartbeats h ON h.task_id = t.task_id
          LEFT JOIN leases l ON l.task_id = t.task_id
          WHERE t.finished_at IS NULL AND t.state = 'running'
            AND (h.task_id IS NULL OR l.task_id IS NULL)
)
SELECT count(*) AS loud
FROM candidates c
JOIN tasks t ON t.task_id = c.task_id
LEFT JOIN leases l ON l.task_id = t.task_id
LEFT JOIN heartbeats h ON h.task_id = t.task_id
{quiet_joins}
WHERE t.finished_at IS NULL AND NOT {quiet}
"""
"""The loud tasks gathered from the indexes, then the shipped quiet test on those alone. It
counts them (the shipped query also sorts and reads them whole: read the two side by side)."""

SHIPPED_LOUD = """
SELECT count(*) AS loud
FROM tasks t
LEFT JOIN leases l ON l.task_id = t.task_id
LEFT JOIN heartbeats h ON h.task_id = t.task_id
{quiet_joins}
WHERE t.finished_at IS NULL AND NOT {quiet}
"""
"""The shipped pass of ``select_loud_tasks``, counting as ``INDEXED_LOUD`` does."""


async def timed(conn: asyncpg.Connection, query: _Query, params: dict[str, object]) -> float:
    started = time.perf_counter()
    await conn.fetch(query.sql, *query.args(params))
    return time.perf_counter() - started


async def queries(
    url: str, params: dict[str, object], rounds: int, indexed: bool
) -> dict[str, float]:
    conn = await asyncpg.connect(url)
    await conn.execute("SET jit = off")  # as the store's connections run
    shipped = Q["select_loud_tasks"]
    counted = {"shipped_count": _Query.parse(fill_columns(SHIPPED_LOUD))}
    if indexed:
        counted["indexed_count"] = _Query.parse(fill_columns(INDEXED_LOUD))
    try:
        row = {
            "loud_query_s": statistics.median(
                [await timed(conn, shipped, params) for _ in range(rounds)]
            )
        }
        for name, query in counted.items():
            row[f"{name}_s"] = statistics.median(
                [await timed(conn, query, params) for _ in range(rounds)]
            )
            loud = await conn.fetchval(query.sql, *query.args(params))
            row[f"{name}_loud"] = float(loud)
        return row
    finally:
        await conn.close()


async def beat_rate(url: str, task_ids: list[str], round_no: int) -> float:
    """Beats a second through the store from ``WRITERS`` writers, each over its share."""
    stores = [await PostgresStore.open(url) for _ in range(WRITERS)]

    async def writer(store: PostgresStore, share: list[str]) -> None:
        for task_id in share:
            await store.record_heartbeat(task_id, BeatLine(stage="work", progress=round_no / 100))

    try:
        started = time.perf_counter()
        await asyncio.gather(*(writer(s, task_ids[n::WRITERS]) for n, s in enumerate(stores)))
        return len(task_ids) / (time.perf_counter() - started)
    finally:
        for store in stores:
            await store.close()


async def measure(url: str, args: argparse.Namespace) -> list[dict[str, float]]:
    now = await fleet_store.fill_postgres(url, args.tasks)
    async with await PostgresStore.open(url) as store:
        for host_no in range(fleet_store.HOSTS):  # one round of every agent's samples
            await store.record_agent_round(
                f"host-{host_no:04d}",
                agent_id=f"agent@host-{host_no:04d}",
                pid=1,
                interval=10.0,
                reported_at=now,
                samples=fleet_store.host_samples(host_no, args.tasks, 0, now),
            )
    params: dict[str, object] = {
        **quiet_bounds(now, default_config(), "bench-host").params(),
        "limit": READ_AT_MOST,
    }
    conn = await asyncpg.connect(url)
    beaters = [
        row[0]
        for row in await conn.fetch(
            "SELECT h.task_id FROM heartbeats h JOIN tasks t USING (task_id)"
            " WHERE t.state = 'running' AND t.finished_at IS NULL AND h.source = 'reported'"
            " ORDER BY random() LIMIT $1",
            args.beats,
        )
    ]
    rows = []
    round_no = 0
    try:
        for indexed in (False, True):
            await conn.execute(DROP)
            if indexed:
                for sql in INDEXES:
                    await conn.execute(sql)
            await conn.execute("VACUUM ANALYZE")
            row: dict[str, float] = {"indexed": float(indexed)}
            row.update(await queries(url, params, args.rounds, indexed))
            rates = []
            for _ in range(args.rounds):
                round_no += 1
                rates.append(await beat_rate(url, beaters, round_no))
            row["beats_s"] = statistics.median(rates)
            size = await conn.fetchval(
                "SELECT pg_total_relation_size('heartbeats') + pg_total_relation_size('leases')"
            )
            row["beats_leases_mb"] = size / 2**20
            print(row, file=sys.stderr, flush=True)
            rows.append(row)
    finally:
        await conn.close()
    return rows


LINES = (
    ("loud_query_s", "select_loud_tasks (s)", "{:.2f}"),
    ("shipped_count_s", "the shipped pass, counting (s)", "{:.2f}"),
    ("indexed_count_s", "from the indexes, counting (s)", "{:.2f}"),
    ("shipped_count_loud", "loud tasks found", "{:,.0f}"),
    ("beats_s", "beats a second (8 writers)", "{:,.0f}"),
    ("beats_leases_mb", "beats and leases (MB)", "{:,.0f}"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--beats", type=int, default=16_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with bench_server("moment_indexes.py") as server:
        rows = asyncio.run(measure(asyncio.run(server.new_database()), args))
    print(f"{f'{args.tasks:,} tasks':32} {'without':>12}  {'with indexes':>12}")
    for key, label, form in LINES:
        cells = [form.format(row[key]) if key in row else "-" for row in rows]
        print(f"{label:32} {cells[0]:>12}  {cells[1]:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
