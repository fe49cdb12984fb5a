"""A deep ``--after`` chain: how a watchdog's look grows with the chain's length.

    python bench/after_chain.py [--depths 1000,4000] [--looks 3]

For each depth, a fresh SQLite store holds one chain: ``chain-0000`` runs and has stalled,
and every other task waits (queued, under a waiter's lease) behind the one before it, for
longer than ``queue_timeout``. So in the first look the watchdog opens the incident of the
first task, lists the tasks it blocks, and finds for each waiting task that it is held behind
that incident (``queued_too_long``, not paged). The later looks judge the same chain again.

Prints, per depth, the first look and the median of the later ones, and how each grows
against the smallest depth (1.0 per task would be linear). Not a test: the machine is shared
and noisy, so only the ratios measured in the same run mean anything.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.store import open_store
from zombietop.watch.watchdog import Watchdog

CONFIG = """\
[thresholds]
heartbeat_interval = "5s"
heartbeat_timeout = "20s"
lease_ttl = "6h"
progress_timeout = "7h"
start_grace = "10s"
queue_timeout = "1m"

[timeouts]
request = "90s"
stage = "7h"
task = "8h"
kill_grace = "30s"
"""


def task_name(number: int) -> str:
    return f"chain-{number:04d}"


async def chain(db: Path, depth: int) -> None:
    """One stalled task and ``depth - 1`` tasks queued behind it, each behind the one before."""
    clock = FakeClock(time.time() - 3600)
    async with await open_store(db, create=True, clock=clock, inline=True) as store:
        for number in range(depth):
            name = task_name(number)
            upstream = (task_name(number - 1),) if number else ()
            await store.create_task(
                task_id=name,
                run_id="nightly",
                step=f"step-{number}",
                step_type="batch",
                actor="bench",
                upstream=upstream,
            )
            lease = await store.acquire_lease(
                name, owner=f"w{number}", ttl=6 * 3600, queued=bool(number)
            )
            if not number:
                await store.record_heartbeat(
                    name, parse_line("stage=extract p=10"), owner="w0", token=lease.token
                )


async def looks(db: Path, config_path: Path, count: int) -> list[float]:
    """The length of each of ``count`` looks of one watchdog, in seconds."""
    config = load_config(config_path)
    taken: list[float] = []
    async with await open_store(db) as store:
        dog = Watchdog(
            Monitor(store, config, reuse_verdicts=True),
            config,
            executor=None,
            notifiers=[],
            log=lambda _: None,
        )
        for _ in range(count):
            started = time.perf_counter()
            report = await dog.tick()
            taken.append(time.perf_counter() - started)
            assert report.withheld is None, report.withheld
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--depths", default="1000,4000")
    parser.add_argument("--looks", type=int, default=3)
    args = parser.parse_args()
    depths = [int(part) for part in args.depths.split(",")]
    rows: list[tuple[int, float, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        config_path = Path(folder) / "config.toml"
        config_path.write_text(CONFIG)
        for depth in depths:
            db = Path(folder) / f"chain-{depth}.db"
            asyncio.run(chain(db, depth))
            taken = asyncio.run(looks(db, config_path, args.looks))
            later = statistics.median(taken[1:]) if len(taken) > 1 else float("nan")
            rows.append((depth, taken[0], later))
    base_depth, base_first, base_later = rows[0]
    print("depth  first look  growth  later looks  growth   (growth: per task, vs the first row)")
    for depth, first, later in rows:
        scale = depth / base_depth
        print(
            f"{depth:5}  {first:9.3f}s  {first / base_first / scale:6.2f}"
            f"  {later:10.3f}s  {later / base_later / scale:6.2f}"
        )


if __name__ == "__main__":
    main()
