"""Page storm: 10,000 tasks go stalled at once under one watchdog that pages through a command.

    python bench/page_storm.py [--tasks 10000] [--hosts 10] [--looks 10] [--interval 10]

The tasks (spread over ``--hosts`` hosts, none of them this one) each take a lease and beat
once, then never again: ``heartbeat_timeout`` (20 s here) later they are all stalled in the
same look. The watchdog is the one `zombietop watch` runs (a real SQLite store, the executor,
the loop of ``Watchdog.run`` every ``--interval`` seconds), and its channel is a real command
(``sh -c 'cat >> pages.log'``). A thread samples this process's threads, children and RSS
every 50 ms.

Prints each look's start and length, the pages the command received (digests and single
pages), how many times each task was paged (at most once, alone or in a digest), and the
peaks. Not a test: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zombietop.act.executor import Executor
from zombietop.config import load_config
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind
from zombietop.paging.notify import CommandNotifier
from zombietop.store import open_store
from zombietop.watch.watchdog import LookReport, Watchdog

CONFIG = """\
[thresholds]
heartbeat_interval = "5s"
heartbeat_timeout = "20s"
lease_ttl = "6h"
progress_timeout = "7h"
start_grace = "10s"

[timeouts]
request = "90s"
stage = "7h"
task = "8h"
kill_grace = "30s"

[watch]
interval = "{interval}s"
renotify = "0s"
"""


class Peaks(threading.Thread):
    """Sample this process's threads, children and RSS until told to stop."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stopping = threading.Event()
        self.threads = self.children = self.rss = 0

    def run(self) -> None:
        me = psutil.Process()
        while not self.stopping.wait(0.05):
            self.threads = max(self.threads, me.num_threads())
            self.children = max(self.children, len(me.children(recursive=True)))
            self.rss = max(self.rss, me.memory_info().rss)


async def fleet(db: Path, tasks: int, hosts: int) -> None:
    async with await open_store(db, create=True, inline=True) as store:
        for i in range(tasks):
            task_id = f"job-{i:05d}"
            await store.create_task(
                task_id=task_id,
                run_id=f"run-{i}",
                step="export",
                step_type="batch",
                actor="bench",
                host=f"batch-{i % hosts:02d}",
            )
            lease = await store.acquire_lease(task_id, owner=f"w{i}", ttl=6 * 3600)
            await store.record_heartbeat(
                task_id, parse_line(f"stage=load p={i % 100}"), owner=f"w{i}", token=lease.token
            )


async def storm(db: Path, folder: Path, looks: int, interval: float) -> None:
    config_path = folder / "config.toml"
    config_path.write_text(CONFIG.format(interval=interval))
    config = load_config(config_path)
    pages_log = folder / "pages.log"
    command = CommandNotifier(["sh", "-c", f"cat >> {pages_log}"], timeout=10)
    peaks = Peaks()
    peaks.start()
    seen: list[tuple[float, float, LookReport]] = []
    async with await open_store(db) as store:
        monitor = Monitor(store, config, reuse_verdicts=True)
        dog = Watchdog(
            monitor,
            config,
            executor=Executor(store, config),
            notifiers=[command],
            log=lambda _: None,
        )
        stop = asyncio.Event()
        begun = time.monotonic()
        last_end = [begun]

        def after(report: LookReport) -> None:
            now = time.monotonic()
            seen.append((last_end[0] - begun, now - begun, report))
            last_end[0] = now
            if len(seen) >= looks:
                stop.set()

        await dog.run(stop=stop, after_tick=after)
        await dog.outbox.settle(60)
        delivered = await store.events(kind=EventKind.DELIVERY, limit=1_000_000)
        paged = await store.events(kind=EventKind.PAGE, limit=1_000_000)
    peaks.stopping.set()
    peaks.join()

    print("look  ended at  took   withheld")
    previous = 0.0
    for number, (_, ended, report) in enumerate(seen, 1):
        took = ended - previous - (interval if number > 1 else 0.0)
        previous = ended
        print(f"{number:4}  {ended:7.1f}s  {max(took, 0.0):5.1f}s  {report.withheld or ''}"[:120])
    times = collections.Counter[str]()
    messages = digests = 0
    for event in delivered:
        if not event.data.get("ok"):
            continue
        messages += 1
        covered = event.data.get("tasks") or [event.task_id]
        digests += bool(event.data.get("tasks"))
        times.update(str(task) for task in covered if task)
    failed = sum(1 for event in delivered if not event.data.get("ok"))
    incidents = sum(1 for event in paged if event.data.get("page") == "incident")
    lines = pages_log.read_text().splitlines() if pages_log.exists() else []
    print(
        f"incident pages recorded (one per task): {incidents}; "
        f"messages delivered: {messages} ({digests} digests); failed attempts: {failed}"
    )
    print(f"lines the command received: {len(lines)}")
    spread = collections.Counter(times.values())
    print(f"tasks paged: {len(times)}; times each was paged: {dict(sorted(spread.items()))}")
    print(
        f"peaks: {peaks.threads} threads, {peaks.children} children, "
        f"RSS {peaks.rss / 2**20:.0f} MiB"
    )
    if lines:
        print("a digest as received:", max(lines, key=len)[:300])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--looks", type=int, default=10)
    parser.add_argument("--interval", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "storm.db"
        started = time.monotonic()
        asyncio.run(fleet(db, args.tasks, args.hosts))
        print(
            f"{args.tasks} tasks on {args.hosts} hosts written in "
            f"{time.monotonic() - started:.0f}s; they beat once and stop"
        )
        asyncio.run(storm(db, Path(folder), args.looks, args.interval))


if __name__ == "__main__":
    main()
