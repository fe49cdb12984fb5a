"""Detection latency: from a job's last heartbeat to its `stalled` verdict and to its page,
against the configured heartbeat_timeout and watch interval. Real clock, real store.

    python bench/detection_latency.py [--trials 5] [--timeout 2] [--interval 0.5]

Target: verdict and page within heartbeat_timeout + one interval, never later.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zombietop.config import WatchSettings, default_config
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.paging.notify import Page
from zombietop.store import open_store
from zombietop.watch.watchdog import Watchdog


class Stopwatch:
    """A notifier that notes when each page arrives."""

    name = kind = "stopwatch"
    keeps_incidents = False

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}

    async def send(self, page: Page) -> None:
        if page.kind == "incident" and page.task_id:
            self.arrived.setdefault(page.task_id, time.time())


async def trial(db: Path, number: int, timeout: float, interval: float) -> tuple[float, float]:
    base = default_config()
    limits = replace(
        base.defaults,
        heartbeat_interval=timeout / 4,
        heartbeat_timeout=timeout,
        lease_ttl=timeout * 10,
        progress_timeout=timeout * 20,
    )
    config = replace(base, defaults=limits, watch=WatchSettings(interval=interval))
    task_id = f"job-{number}"
    async with await open_store(db, create=True) as store:
        await store.create_task(
            task_id=task_id, run_id="bench", step="s", step_type="default", actor="bench"
        )
        lease = await store.acquire_lease(task_id, owner="bench", ttl=timeout * 10)
        stopwatch = Stopwatch()
        monitor = Monitor(store, config)
        dog = Watchdog(monitor, config, executor=None, notifiers=[stopwatch], log=lambda _: None)
        stop = asyncio.Event()
        runner = asyncio.create_task(dog.run(stop=stop))
        for p in range(3):
            await store.record_heartbeat(
                task_id, parse_line(f"stage=s p={p}"), owner="bench", token=lease.token
            )
            await asyncio.sleep(timeout / 4)
        last = (await store.get_record(task_id)).heartbeat.written_at  # type: ignore[union-attr]
        verdict_at = None
        while task_id not in stopwatch.arrived:
            snapshot = monitor.last
            view = snapshot.by_id().get(task_id)
            if verdict_at is None and view is not None and view.health == "stalled":
                verdict_at = snapshot.taken_at
            await asyncio.sleep(0.01)
        stop.set()
        await runner
        verdict_at = verdict_at or stopwatch.arrived[task_id]
        return verdict_at - last, stopwatch.arrived[task_id] - last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args()
    bound = args.timeout + args.interval
    with tempfile.TemporaryDirectory() as tmp:
        results = [
            asyncio.run(trial(Path(tmp) / "z.db", n, args.timeout, args.interval))
            for n in range(args.trials)
        ]
    verdicts = [v for v, _ in results]
    pages = [p for _, p in results]
    print(
        f"heartbeat_timeout {args.timeout:g}s, watch interval {args.interval:g}s, bound {bound:g}s, {args.trials} trials"
    )
    print(f"{'':>8} {'median':>8} {'max':>8} {'max/bound':>10}")
    for name, values in (("verdict", verdicts), ("page", pages)):
        print(
            f"{name:>8} {statistics.median(values):>7.2f}s {max(values):>7.2f}s {max(values) / bound:>9.2f}x"
        )
    print("within bound" if max(pages) <= bound else "OVER BOUND")
    return 0


if __name__ == "__main__":
    sys.exit(main())
