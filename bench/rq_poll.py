"""One poll of an RQ source with busy workers and 1,000 queued jobs, beside one poll of the store
with as many tasks, in one run.

    python bench/rq_poll.py [--queued 1000] [--workers 8] [--polls 5]

A throwaway redis-server (Debian's ``redis-server``, as the tests use) and real ``rq worker``
processes, each running one ``time.sleep`` job in its work horse (RQ runs one job per worker);
the queued jobs wait behind them. Each poll of the RQ source reads the started registries, the
workers, the started jobs' hashes and the queues; it asks no worker anything, so it costs Redis
round trips, not a timeout. The store is a SQLite file filled as ``bench/poll_tick.py`` fills it.

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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from poll_tick import populate  # noqa: E402

from tests.queues_env import RQWorkers, wait_for  # noqa: E402
from tests.redis_server import ThrowawayRedis, find_server  # noqa: E402
from zombietop.clock import FakeClock  # noqa: E402
from zombietop.config import default_config  # noqa: E402
from zombietop.judge.monitor import Monitor  # noqa: E402
from zombietop.sources.rq import RQSource  # noqa: E402
from zombietop.store import open_store  # noqa: E402


async def rq_polls(url: str, polls: int) -> tuple[float, int]:
    """The median time of a poll, and the fewest tasks a poll found."""
    source = RQSource(url)
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


async def store_polls(path: Path, polls: int, tasks: int) -> tuple[float, int]:
    samples = []
    async with await open_store(path, clock=FakeClock()) as store:
        for _ in range(polls):
            monitor = Monitor(store, default_config())  # a new monitor reads every task
            start = time.perf_counter()
            snapshot = await monitor.poll()
            samples.append(time.perf_counter() - start)
            assert snapshot.ok and len(snapshot.tasks) == tasks, snapshot.error
    return statistics.median(samples), tasks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queued", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--polls", type=int, default=5)
    args = parser.parse_args()
    binary = find_server()
    if binary is None:
        sys.exit("bench/rq_poll.py needs redis-server (Debian: apt-get install redis-server)")
    import redis
    import rq

    server = ThrowawayRedis(binary)
    server.start()
    folder = Path(tempfile.mkdtemp(prefix="zombietop-bench-rq-"))
    url = server.url(1)
    workers = RQWorkers(folder, url)
    total = args.workers + args.queued
    try:
        conn = redis.Redis.from_url(url)
        queue = rq.Queue("default", connection=conn)
        for _ in range(args.workers):
            queue.enqueue("time.sleep", 3600, job_timeout=7200)
        for n in range(args.workers):
            workers.start(f"w{n}")
        started = rq.registry.StartedJobRegistry("default", connection=conn)
        wait_for(f"{args.workers} started jobs", lambda: started.count == args.workers, timeout=120)
        for _ in range(args.queued):
            queue.enqueue("time.sleep", 3600, job_timeout=7200)
        rows = [("rq source", *asyncio.run(rq_polls(server.url(1, "rq+redis"), args.polls)))]
        populate(folder / "store.db", total, 0)
        rows.append(("store, a fresh monitor (every task read)", *asyncio.run(
            store_polls(folder / "store.db", args.polls, total)
        )))  # fmt: skip
        conn.close()
    finally:
        workers.stop()
        server.stop()
    print(f"{args.workers} started jobs, {args.queued} queued, median of {args.polls} polls")
    print(f"{'poll':<46} {'median':>10} {'tasks seen (fewest)':>20}")
    for label, seconds, seen in rows:
        print(f"{label:<46} {seconds * 1000:>7.1f} ms {seen:>20}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
