"""One poll of a Celery source with 1,000 active tasks over 4 workers, beside one poll of the
store with 1,000 active tasks, in one run.

    python bench/celery_poll.py [--tasks 1000] [--workers 4] [--polls 5]

A throwaway redis-server (Debian's ``redis-server``, as the tests use) and real Celery workers
(thread pools, so 1,000 sleeping tasks fit on a small machine) run ``zq.nap`` tasks. Each poll
of the Celery source asks the workers (``inspect active``, ``reserved`` and ``scheduled`` at
once) and reads the transport's unacked messages. An inspect waits its whole timeout for
answers, so the poll's time is about the timeout: it is measured at two timeouts. The store
is a SQLite file filled as ``bench/poll_tick.py`` fills it.

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

from tests.queues_env import Workers, wait_for  # noqa: E402
from tests.redis_server import ThrowawayRedis, find_server  # noqa: E402
from zombietop.clock import FakeClock  # noqa: E402
from zombietop.config import default_config  # noqa: E402
from zombietop.judge.monitor import Monitor  # noqa: E402
from zombietop.sources.celery import CelerySource  # noqa: E402
from zombietop.store import open_store  # noqa: E402


async def celery_polls(url: str, timeout: float, polls: int) -> tuple[float, int]:
    """The median time of a poll, and the fewest tasks a poll found (a worker whose answer
    came after the timeout is missing from that poll's answers)."""
    source = CelerySource(f"{url}?inspect_timeout={timeout}")
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
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--polls", type=int, default=5)
    args = parser.parse_args()
    binary = find_server()
    if binary is None:
        sys.exit("bench/celery_poll.py needs redis-server (Debian: apt-get install redis-server)")
    server = ThrowawayRedis(binary)
    server.start()
    folder = Path(tempfile.mkdtemp(prefix="zombietop-bench-celery-"))
    workers = Workers(folder, server.url(1))
    try:
        # Room to spare: the broker does not share the tasks out evenly among the workers.
        each = -(-args.tasks // args.workers) * 3 // 2
        for n in range(args.workers):
            workers.start(f"w{n}", pool="threads", concurrency=each)
        app = workers.app()
        for n in range(args.tasks):
            app.send_task("zq.nap", args=(3600, str(folder / f"m{n}")))

        def all_active() -> bool:
            answer = app.control.inspect(timeout=2.0).active() or {}
            return sum(len(v) for v in answer.values()) == args.tasks

        wait_for(f"{args.tasks} active tasks", all_active, timeout=120)
        url = server.url(1, "celery+redis")
        rows = [
            (
                f"celery source, inspect timeout {t:g} s",
                *asyncio.run(celery_polls(url, t, args.polls)),
            )
            for t in (3.0, 1.0)
        ]
        populate(folder / "store.db", args.tasks, 0)
        store = asyncio.run(store_polls(folder / "store.db", args.polls, args.tasks))
        rows.append(("store, a fresh monitor (every task read)", *store))
    finally:
        workers.stop()
        server.stop()
    print(f"{args.tasks} active tasks, {args.workers} workers, median of {args.polls} polls")
    print(f"{'poll':<46} {'median':>10} {'tasks seen (fewest)':>20}")
    for label, seconds, seen in rows:
        print(f"{label:<46} {seconds * 1000:>7.1f} ms {seen:>20}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
