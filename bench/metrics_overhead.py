"""Metrics overhead: what `watch --metrics` adds to a watchdog round, with 1,000 live tasks.

    python bench/metrics_overhead.py [--tasks 1000] [--rounds 30] [--runs 3]

The fleet is scripts/fleet_store.py's (every task beats and renews every 10 s, one in ten never
does: stalled, then reclaimable), written between rounds, outside the measurement. The watchdog
is opened as `zombietop watch` opens it (aiosqlite, verdicts reused, a real store) and looks
once a (fake) second. Three ways, alternated within each run:

- ``off``: no metrics at all;
- ``update``: the metrics are handed each round's snapshot (what `--metrics` costs the round
  itself when nobody scrapes);
- ``scraped``: the same, with the endpoint up and a client scraping it back to back on another
  thread for the whole run: the worst case, where every round competes with scrapes for the GIL.

Prints the median wall time of a round for each, the CPU of handing a round to the metrics, the
median wall time of one scrape, and the CPU one collection and rendering takes. Not a test: the machine is shared and noisy; compare figures
from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.fleet_store import beat_once, enlist, is_silent
from zombietop.clock import FakeClock
from zombietop.config import default_config, parse_listen
from zombietop.judge.monitor import Monitor
from zombietop.store import Store, open_store
from zombietop.watch.metrics import Metrics
from zombietop.watch.metrics_endpoint import MetricsEndpoint, MetricsUpdate
from zombietop.watch.watchdog import Watchdog

NOW = 1_796_000_000.0
SILENT = 10
PERIOD = 10
MODES = ("off", "update", "scraped")


class Scraper(threading.Thread):
    """Scrape ``url`` back to back until stopped; keep how long each scrape took."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stopping = threading.Event()
        self.took: list[float] = []

    def run(self) -> None:
        while not self.stopping.is_set():
            started = time.perf_counter()
            with urllib.request.urlopen(self.url, timeout=10) as response:
                response.read()
            self.took.append(time.perf_counter() - started)


async def beat(store: Store, leases: dict[str, tuple[str, int]], tick: int) -> None:
    for index, (task_id, lease) in enumerate(leases.items()):
        if not is_silent(index, SILENT) and index % PERIOD == tick % PERIOD:
            await beat_once(store, task_id, lease, tick, index)


async def run_mode(
    path: Path, clock: FakeClock, leases: dict[str, tuple[str, int]], mode: str, rounds: int
) -> tuple[list[float], list[float], list[float], float | None]:
    """Rounds' wall times, update calls', scrapes', and one collection's CPU (seconds)."""
    config = default_config()
    async with (
        await open_store(path, clock=clock, inline=True) as writer,
        await open_store(path, clock=clock) as store,
    ):
        monitor = Monitor(store, config, reuse_verdicts=True)
        dog = Watchdog(
            monitor, config, executor=None, notifiers=[], clock=clock, log=lambda _: None
        )
        metrics = Metrics()
        # Every mode renders once a look (on a thread); only "scraped" has a scraper.
        endpoint = await MetricsEndpoint.start(metrics, parse_listen("0"))
        update = MetricsUpdate(dog, endpoint, then=lambda _: None)
        scraper = Scraper(endpoint.url) if mode == "scraped" else None
        try:
            update(await dog.tick())  # the first look reads and judges everything: not measured
            if scraper is not None:
                scraper.start()
            took, updates = [], []
            for _ in range(rounds):
                clock.advance(1)
                await beat(writer, leases, round(clock.now()))
                started = time.perf_counter()
                report = await dog.tick()
                if mode != "off":
                    # CPU on this thread (the wall time would count waits for the GIL), and
                    # not freeing the snapshot it replaces: without metrics one is freed each
                    # round too, when the monitor lets go of it.
                    previous = metrics.latest
                    handed = time.thread_time()
                    update(report)
                    updates.append(time.thread_time() - handed)
                    del previous
                took.append(time.perf_counter() - started)
            started_cpu = time.thread_time()
            rendered = metrics.render()
            collect_cpu = time.thread_time() - started_cpu if mode != "off" else None
            assert mode == "off" or rendered.count(b"zombietop_task_info{") == len(leases)
        finally:
            if scraper is not None:
                scraper.stopping.set()
                scraper.join()
            await endpoint.close()
    return took, updates, scraper.took if scraper is not None else [], collect_cpu


async def run(path: Path, args: argparse.Namespace) -> dict[str, tuple[float, float, float, float]]:
    clock = FakeClock(NOW)
    async with await open_store(path, create=True, clock=clock, inline=True) as writer:
        leases = await enlist(writer, args.tasks, SILENT)
        # Past the silent tasks' lease: the fleet has settled before the first look.
        clock.advance(2 * 60)
        for _ in range(PERIOD):
            clock.advance(1)
            await beat(writer, leases, round(clock.now()))
    figures = {}
    for mode in MODES:
        took, updates, scrapes, collect = await run_mode(path, clock, leases, mode, args.rounds)
        figures[mode] = (
            statistics.median(took),
            statistics.median(updates) if updates else float("nan"),
            statistics.median(scrapes) if scrapes else float("nan"),
            collect if collect is not None else float("nan"),
        )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30, help="measured rounds per way")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.tasks} tasks; median wall time of {args.rounds} watchdog rounds per way")
    print(
        "run  round off   round update   round scraped   update call   scrape     one collection CPU"
    )
    for number in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory() as tmp:
            figures = asyncio.run(run(Path(tmp) / "fleet.db", args))
        off, update, scraped = (figures[mode][0] * 1e3 for mode in MODES)
        call = figures["update"][1] * 1e6
        scrape = figures["scraped"][2] * 1e3
        collect = figures["update"][3] * 1e3
        print(
            f"{number:>3}  {off:8.2f} ms  {update:10.2f} ms  {scraped:11.2f} ms"
            f"  {call:8.1f} us  {scrape:6.2f} ms  {collect:8.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
