"""One poll of a Dramatiq source with 1,000 held messages, beside a bare read of the same keys,
in one run.

    python bench/dramatiq_poll.py [--held 1000] [--polls 5]

A throwaway redis-server (Debian's ``redis-server``, as the tests use) and one real Dramatiq
worker process (tests/dramatiq_env.py) with ``--held / 2`` threads, so that it holds ``--held``
messages (Dramatiq prefetches two per thread), each asleep for an hour. The bare read is what
any reader of these messages must send: the keys found with SCAN, the queue lists and the acks
sets, each message's data and each worker's last beat, pipelined with redis-py. The source's
poll reads the same, decodes each message's names and builds the task records; its first poll
also reads ``MONITOR`` to find the worker's process, which is shown apart.

Prints a table of medians; exits 0. Not a test: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.dramatiq_env import DramatiqWorkers, missing  # noqa: E402
from tests.queues_env import wait_for  # noqa: E402
from tests.redis_server import ThrowawayRedis, find_server  # noqa: E402
from zombietop.sources.dramatiq import DramatiqSource  # noqa: E402

NS = "dramatiq"


def held_count(client: Any) -> int:
    return sum(client.scard(key) for key in client.scan_iter(f"{NS}:__acks__.*"))


def bare_read(client: Any) -> int:
    """The same keys, read with nothing else done: the held messages found."""
    queues = [key.decode()[len(NS) + 1 : -5] for key in client.scan_iter(f"{NS}:*.msgs")]
    acks = [key.decode() for key in client.scan_iter(f"{NS}:__acks__.*")]
    pipe = client.pipeline(transaction=False)
    for queue in queues:
        pipe.lrange(f"{NS}:{queue}", 0, 999)
    for key in acks:
        pipe.srandmember(key, 1000)
    got = pipe.execute()[len(queues) :]
    pipe = client.pipeline(transaction=False)
    held = 0
    for key, ids in zip(acks, got, strict=True):
        worker, _, queue = key[len(NS) + len(":__acks__.") :].partition(".")
        pipe.zscore(f"{NS}:__heartbeats__", worker)
        for found in ids:
            pipe.hget(f"{NS}:{queue}.msgs", found)
            held += 1
    pipe.execute()
    return held


def bare_polls(client: Any, polls: int) -> tuple[float, int]:
    samples, fewest = [], -1
    for _ in range(polls):
        start = time.perf_counter()
        found = bare_read(client)
        samples.append(time.perf_counter() - start)
        fewest = found if fewest < 0 else min(fewest, found)
    return statistics.median(samples), fewest


async def source_polls(url: str, polls: int) -> tuple[float, float, int]:
    source = DramatiqSource(url)
    await source.open()
    samples, fewest = [], -1
    try:
        start = time.perf_counter()
        await source.poll(None, "bench")
        first = time.perf_counter() - start
        for _ in range(polls):
            start = time.perf_counter()
            found = await source.poll(None, "bench")
            samples.append(time.perf_counter() - start)
            running = [r for r in found if r.record.task.state.value == "running"]
            fewest = len(running) if fewest < 0 else min(fewest, len(running))
    finally:
        await source.close()
    return first, statistics.median(samples), fewest


def send_many(workers: DramatiqWorkers, count: int, marker: Path) -> None:
    """Send ``count`` hour-long messages through Dramatiq's own ``send``, from one process."""
    code = f"import zqdram\nfor _ in range({count}):\n    zqdram.nap.send(3600, {str(marker)!r})\n"
    subprocess.run(
        [sys.executable, "-c", code], cwd=workers.folder, env=workers.env, check=True, timeout=300
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held", type=int, default=1000)
    parser.add_argument("--polls", type=int, default=5)
    args = parser.parse_args()
    binary = find_server()
    why = missing()
    if binary is None or why is not None:
        sys.exit(
            f"bench/dramatiq_poll.py needs redis-server and Dramatiq: {why or 'no redis-server'}"
        )
    import redis

    server = ThrowawayRedis(binary)
    server.start()
    folder = Path(tempfile.mkdtemp(prefix="zombietop-bench-dramatiq-"))
    workers = DramatiqWorkers(folder, server.url(1))
    try:
        client = redis.Redis.from_url(server.url(1))
        send_many(workers, args.held, folder / "marker")
        workers.start(threads=max(args.held // 2, 1))
        wait_for(
            f"{args.held} held messages",
            lambda: held_count(client) == args.held,
            timeout=120,
        )
        first, median, seen = asyncio.run(source_polls(server.url(1, "dramatiq+redis"), args.polls))
        rows = [
            ("bare read of the same keys (redis-py)", *bare_polls(client, args.polls)),
            ("dramatiq source poll", median, seen),
        ]
        client.close()
    finally:
        workers.stop()
        server.stop()
    print(f"{args.held} held messages on one worker process, median of {args.polls} polls")
    print(f"{'read':<40} {'median':>10} {'held seen (fewest)':>20}")
    for label, seconds, found in rows:
        print(f"{label:<40} {seconds * 1000:>7.1f} ms {found:>20}")
    print(f"ratio: {rows[1][1] / rows[0][1]:.2f}x")
    print(f"the source's first poll (with MONITOR to find the worker): {first * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
