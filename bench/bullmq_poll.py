"""One poll of a BullMQ source with 1,000 active jobs, beside a bare read of the same keys, in
one run.

    python bench/bullmq_poll.py [--active 1000] [--polls 5]

A throwaway redis-server (Debian's ``redis-server``, as the tests use) and one real BullMQ
worker (Node, tests/bullmq_env.py) with a concurrency of ``--active``, each job asleep for an
hour. The bare read is what any reader of these jobs must send: the queue's lists and sets, each
job's hash and its lock's time to live, and CLIENT LIST, in two pipelined round trips with
redis-py. The source's poll reads the same (and finds the queues with SCAN), asks the kernel
which process holds each worker connection, and builds the task records.

Prints a table of medians; exits 0. Not a test: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.bullmq_env import BullWorkers, missing  # noqa: E402
from tests.queues_env import wait_for  # noqa: E402
from tests.redis_server import ThrowawayRedis, find_server  # noqa: E402
from zombietop.sources.bullmq import BullMQSource  # noqa: E402
from zombietop.sources.bullmq_reads import JOB_FIELDS  # noqa: E402

QUEUE = "bench"


def bare_read(client: Any) -> int:
    """The same keys, read with nothing else done: the jobs found."""
    pipe = client.pipeline(transaction=False)
    base = f"bull:{QUEUE}:"
    pipe.lrange(base + "active", 0, 999)
    for name in ("wait", "paused"):
        pipe.lrange(base + name, 0, 999)
    for name in ("prioritized", "waiting-children"):
        pipe.zrange(base + name, 0, 999)
    pipe.zrange(base + "delayed", 0, 999, withscores=True)
    for name in ("completed", "failed"):
        pipe.zrevrangebyscore(base + name, "+inf", "-inf", start=0, num=1000)
    pipe.hget(base + "meta", "paused")
    active = pipe.execute()[0]
    pipe = client.pipeline(transaction=False)
    for job_id in active:
        key = base + job_id.decode()
        pipe.hmget(key, JOB_FIELDS)
        pipe.pttl(key + ":lock")
    pipe.execute()
    client.client_list()
    return len(active)


def bare_polls(client: Any, polls: int) -> tuple[float, int]:
    samples, fewest = [], -1
    for _ in range(polls):
        start = time.perf_counter()
        found = bare_read(client)
        samples.append(time.perf_counter() - start)
        fewest = found if fewest < 0 else min(fewest, found)
    return statistics.median(samples), fewest


async def source_polls(url: str, polls: int) -> tuple[float, int]:
    source = BullMQSource(url)
    await source.open()
    samples, fewest = [], -1
    try:
        for _ in range(polls):
            start = time.perf_counter()
            found = await source.poll(None, "bench")
            samples.append(time.perf_counter() - start)
            fewest = len(found) if fewest < 0 else min(fewest, len(found))
    finally:
        await source.close()
    return statistics.median(samples), fewest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--active", type=int, default=1000)
    parser.add_argument("--polls", type=int, default=5)
    args = parser.parse_args()
    binary = find_server()
    why = missing()
    if binary is None or why is not None:
        sys.exit(f"bench/bullmq_poll.py needs redis-server and BullMQ: {why or 'no redis-server'}")
    import redis

    server = ThrowawayRedis(binary)
    server.start()
    folder = Path(tempfile.mkdtemp(prefix="zombietop-bench-bullmq-"))
    workers = BullWorkers(folder, server.port, 1)
    try:
        client = redis.Redis.from_url(server.url(1))
        marker = folder / "marker"
        workers.add_many(QUEUE, "nap", args.active, {"seconds": 3600, "marker": str(marker)})
        workers.start(QUEUE, lock_ms=30000, stalled_ms=30000, concurrency=args.active)
        wait_for(
            f"{args.active} active jobs",
            lambda: client.llen(f"bull:{QUEUE}:active") == args.active,
            timeout=120,
        )
        rows = [
            ("bare read of the same keys (redis-py)", *bare_polls(client, args.polls)),
            ("bullmq source poll", *asyncio.run(source_polls(server.url(1, "bullmq+redis"), args.polls))),
        ]  # fmt: skip
        client.close()
    finally:
        workers.stop()
        server.stop()
    print(f"{args.active} active jobs on one worker, median of {args.polls} polls")
    print(f"{'read':<40} {'median':>10} {'jobs seen (fewest)':>20}")
    for label, seconds, seen in rows:
        print(f"{label:<40} {seconds * 1000:>7.1f} ms {seen:>20}")
    print(f"ratio: {rows[1][1] / rows[0][1]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
