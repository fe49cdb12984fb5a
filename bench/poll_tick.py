"""Poll tick: store read + classify for 1k, 10k and 100k active tasks over 1M finished rows,
side by side with a bare sqlite3 query + fetch of the same rows (the limit).

    python bench/poll_tick.py [--finished 1000000] [--events 200000] [--runs 7] [--changed 0.1]

Four figures per size: the building of the engine's records from the fetched rows alone (the
floor a first poll adds to the fetch before it judges anything), the first poll (reads and
classifies every task), and a tick one second later with a share of the tasks having beaten
since, classified afresh (every task, every poll) or reusing verdicts until they can change
(what the dashboard and the watchdog do). The SQLite store reads only the tasks stamped since
its last read, so only the first poll pays for every row.

The event log holds ``--events`` events, one in twenty of them a watchdog's transition (every
tenth active task flips). A poll reads the transitions it has not read yet, for the flag
``flapping`` (``zombietop.judge.flip_book``); the last two columns are the first poll and the
reusing tick of the watchdog's own monitor, which reads none (as every poll did before).

Prints a table of medians; exits 0. Not a test: the machine is shared and noisy, so only the
ratio measured in the same run means anything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.judge.monitor import Monitor
from zombietop.store import open_store
from zombietop.store.poll_cache import task_record
from zombietop.store.sqlite import POLL_SQL

NOW = 1_796_000_000.0


def populate(path: Path, active: int, finished: int, events: int = 0) -> None:
    """Fill a fresh store directly (fast), with realistic rows: leases, heartbeats, counters."""

    async def create() -> None:
        async with await open_store(path, create=True):
            pass

    asyncio.run(create())
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")
    with db:
        db.executemany(
            "INSERT INTO tasks (task_id, run_id, step, step_type, state, attempt, upstream, host, pid,"
            " pid_start_time, created_at, claimed_at, started_at, finished_at, updated_at, exit_code)"
            " VALUES (?, 'run', 'step', 'default', ?, 1, '[]', 'host', ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    f"done-{i}",
                    "succeeded",
                    1000 + i % 30000,
                    NOW - 90000,
                    NOW - 90000 - i,
                    NOW - 90000 - i,
                    NOW - 90000 - i,
                    NOW - 86400 - i,
                    NOW - 86400 - i,
                    0,
                )
                for i in range(finished)
            ),
        )
        db.executemany(
            "INSERT INTO tasks (task_id, run_id, step, step_type, state, attempt, upstream, host, pid,"
            " pid_start_time, created_at, claimed_at, started_at, updated_at)"
            " VALUES (?, 'run', 'step', 'default', 'running', 1, '[]', 'host', ?, ?, ?, ?, ?, ?)",
            (
                (f"task-{i}", 2000 + i, NOW - 900, NOW - 900, NOW - 900, NOW - 890, NOW - 5)
                for i in range(active)
            ),
        )
        db.executemany(
            "INSERT INTO leases (task_id, owner, token, acquired_at, renewed_at, expires_at)"
            " VALUES (?, 'worker@host', 1, ?, ?, ?)",
            (
                (f"task-{i}", NOW - 900, NOW - 10, NOW + (290 if i % 7 else -30))
                for i in range(active)
            ),
        )
        counters = json.dumps({"rows": 8_200_000, "bytes": 1 << 30})
        db.executemany(
            "INSERT INTO heartbeats (task_id, stage, progress, counters, written_at, progress_changed_at,"
            " stage_started_at, seq) VALUES (?, 'transform', ?, ?, ?, ?, ?, 40)",
            (
                (f"task-{i}", i % 100, counters, NOW - (i % 300), NOW - (i % 2400), NOW - 600)
                for i in range(active)
            ),
        )
        db.executemany(
            "INSERT INTO events (at, task_id, kind, actor, message, data) VALUES (?, ?, ?, ?, ?, ?)",
            (_event(i, active, events) for i in range(events)),
        )
    db.close()


def _event(i: int, active: int, events: int) -> tuple[float, str, str, str, str, str]:
    """Event ``i`` of the log, oldest first over the last two days: a transition one time in
    twenty (into or out of stalled, of one active task in ten), a lease renewal otherwise."""
    at = NOW - 2 * 86400 * (1 - i / events)
    if i % 20:
        return (at, f"task-{i % active}", "lease_renewed", "worker@host", "renewed", "{}")
    j = i // 20
    before, after = ("healthy", "stalled") if j % 2 else ("stalled", "healthy")
    data = json.dumps({"from": before, "to": after})
    return (at, f"task-{(j * 10) % active}", "transition", "watchdog", "flip", data)


def time_limit(path: Path, runs: int) -> tuple[float, float]:
    """The bare fetch of the poll's rows, and the building of the engine's records from those
    rows alone (no judging): together, the floor of a first poll on the engine's own model."""
    db = sqlite3.connect(path)
    fetches, builds = [], []
    for _ in range(runs):
        start = time.perf_counter()
        rows = db.execute(POLL_SQL, {"finished_since": NOW - 3600}).fetchall()
        fetches.append(time.perf_counter() - start)
        start = time.perf_counter()
        records = [task_record(row) for row in rows]
        builds.append(time.perf_counter() - start)
    db.close()
    assert rows and len(records) == len(rows)
    return statistics.median(fetches), statistics.median(builds)


def touch(path: Path, active: int, tick: int, share: float) -> None:
    """A worker's beat on ``share`` of the active tasks, as the store would record it."""
    db = sqlite3.connect(path)
    step = max(int(1 / share), 1)
    with db:
        db.executemany(
            "UPDATE heartbeats SET written_at = ?, seq = seq + 1 WHERE task_id = ?",
            ((NOW + tick, f"task-{i}") for i in range(tick % step, active, step)),
        )
    db.close()


def time_zombietop(path: Path, active: int, runs: int, share: float) -> dict[str, float]:
    """The first poll (reads and classifies everything), then ticks one second apart with
    ``share`` of the tasks beating between them: every task classified afresh, and as the
    dashboard and the watchdog poll (verdicts reused until they can change)."""

    clock = FakeClock(NOW)

    async def measure() -> dict[str, float]:
        figures: dict[str, float] = {}
        for label, reuse, flips in (
            ("afresh", False, True),
            ("reusing", True, True),
            ("no flips", True, False),
        ):
            # A store of its own for each: its first poll reads every row, as a new process's.
            async with await open_store(path, clock=clock) as store:
                monitor = Monitor(store, default_config(), reuse_verdicts=reuse, count_flips=flips)
                start = time.perf_counter()
                snapshot = await monitor.poll()
                first = "first" if flips else "first no flips"
                figures.setdefault(first, time.perf_counter() - start)
                assert snapshot.ok, snapshot.error
                samples = []
                for _ in range(runs):
                    touch(path, active, int(clock.advance(1) - NOW), share)
                    start = time.perf_counter()
                    snapshot = await monitor.poll()
                    samples.append(time.perf_counter() - start)
                    assert snapshot.ok and len(snapshot.tasks) == active, snapshot.error
                figures[label] = statistics.median(samples)
        return figures

    return asyncio.run(measure())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--changed", type=float, default=0.1, help="share of tasks beating between ticks"
    )
    args = parser.parse_args()
    print(
        f"finished rows in history: {args.finished:,}; events: {args.events:,};"
        f" {args.changed:.0%} of tasks beat between ticks; median of {args.runs} runs"
    )
    print(
        f"{'active':>14} {'bare sqlite3':>13} {'records':>10} {'first poll':>11}"
        f" {'tick afresh':>12} {'tick reusing':>13} {'no flips: first':>16} {'tick':>10}"
        "   ratios to bare"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            for finished in sorted({0, args.finished}):
                path = Path(tmp) / f"bench-{size}-{finished}.db"
                populate(path, size, finished, args.events)
                limit, build = time_limit(path, args.runs)
                ours = time_zombietop(path, size, args.runs, args.changed)
                ours["records"] = build
                label = f"{size:,}" + (" +hist" if finished else "")
                ratios = " / ".join(
                    f"{ours[k] / limit:.2f}x"
                    for k in ("records", "first", "afresh", "reusing", "first no flips", "no flips")
                )
                print(
                    f"{label:>14} {limit * 1000:>10.1f} ms {build * 1000:>7.1f} ms"
                    f" {ours['first'] * 1000:>8.1f} ms {ours['afresh'] * 1000:>9.1f} ms"
                    f" {ours['reusing'] * 1000:>10.1f} ms"
                    f" {ours['first no flips'] * 1000:>13.1f} ms {ours['no flips'] * 1000:>7.1f} ms"
                    f"   {ratios}"
                )
                path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
