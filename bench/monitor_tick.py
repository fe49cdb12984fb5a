"""Monitor tick: CPU per poll of the dashboard's monitor while a fleet of live tasks beats.

    python bench/monitor_tick.py [--tasks 1000] [--beat-every 10] [--polls 40] [--rounds 3]
                                 [--aiosqlite]

The fleet is scripts/fleet_store.py's: every task renews its lease and records a heartbeat
(progress and counters moving) once per ``--beat-every`` seconds, spread evenly, and one task
in ten never beats (stalled, then reclaimable). The monitor is opened as the dashboard's
``ThreadedMonitor`` opens it (read-only, SQLite read on its own thread, verdicts reused) and
polls once a (fake) second; the beats of each second are written between polls, outside the
measurement. ``--aiosqlite`` reads through aiosqlite's thread instead, for comparison.

Prints, per round, the median CPU of a poll on the monitor's thread and in the whole process
(aiosqlite's thread included). Not a test: the machine is shared and noisy; compare figures
from alternating runs.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.fleet_store import beat_once, enlist, is_silent
from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.judge.monitor import Monitor
from zombietop.store import Store, open_store

NOW = 1_796_000_000.0
SILENT = 10
"""One task in ten never beats, as in scripts/fleet_store.py's default fleet."""


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def beat(
    store: Store, leases: dict[str, tuple[str, int]], task_ids: list[str], tick: int
) -> None:
    """One beat and one renewal of each of ``task_ids``, as the fleet's workers record them."""
    for index, task_id in enumerate(task_ids):
        await beat_once(store, task_id, leases[task_id], tick, index)


async def run(path: Path, args: argparse.Namespace) -> tuple[float, float]:
    clock = FakeClock(NOW)
    period = round(args.beat_every)
    async with await open_store(path, create=True, clock=clock, inline=True) as writer:
        leases = await enlist(writer, args.tasks, SILENT)
        live = [task_id for i, task_id in enumerate(leases) if not is_silent(i, SILENT)]
        await beat(writer, leases, live, 0)
        async with await open_store(
            path, read_only=True, clock=clock, inline=not args.aiosqlite
        ) as store:
            monitor = Monitor(store, default_config(), reuse_verdicts=True, own_thread=True)
            await monitor.poll()
            thread, process = [], []
            for tick in range(1, args.polls + 1):
                clock.advance(1)
                await beat(writer, leases, live[tick % period :: period], tick)
                started_thread, started_process = time.thread_time(), process_cpu()
                snapshot = await monitor.poll()
                thread.append(time.thread_time() - started_thread)
                process.append(process_cpu() - started_process)
                assert snapshot.ok and len(snapshot.tasks) == args.tasks, snapshot.error
    return statistics.median(thread), statistics.median(process)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--beat-every", type=float, default=10.0, help="seconds (whole)")
    parser.add_argument("--polls", type=int, default=40, help="measured polls per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--aiosqlite", action="store_true", help="read through aiosqlite's thread")
    args = parser.parse_args()
    beats = round(args.tasks * 0.9 / round(args.beat_every))
    print(
        f"{args.tasks} tasks, ~{beats} beats and renewals a poll; median CPU per poll of"
        f" {args.polls} polls, {'aiosqlite' if args.aiosqlite else 'inline'} reads"
    )
    for round_ in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            thread, process = asyncio.run(run(Path(tmp) / "fleet.db", args))
        print(
            f"round {round_}: monitor thread {thread * 1e3:.2f} ms   process {process * 1e3:.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
