"""Job history: what reading the jobs' summaries costs each poll, side by side with the poll.

    python bench/job_history.py [--active 10000] [--finished 100000] [--jobs 1000] [--runs 9]

A store with ``--active`` running tasks (each a run of one of ``--jobs`` jobs, so every poll
judges it against its job's history) and ``--finished`` finished runs across the jobs, whose
summaries sit in the ``jobs`` table as the store keeps them (folded in as each run ended).
Between ticks ``--ending`` runs end (their jobs' summaries change). In one run, alternated:

- a poll of the monitor (read, probe-less classify, snapshot), which includes the refresh;
- the history refresh alone (``JobBook.refresh``: the summaries changed since its last read);
- the first refresh (every summary), as a new watchdog or ``status`` pays once;
- for contrast, a full scan of the finished runs (what a summary computed each poll would read);
- the jobs view's first read of every job's latest 20 ended runs (``Store.latest_ended_runs``),
  and its read at each tick of those of the jobs whose runs ended since.

Prints a table of medians; exits 0. Not a test: the machine is shared and noisy, so only the
ratios measured in the same run mean anything.
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
from zombietop.job_summary import HISTORY_WINDOW
from zombietop.judge.job_book import JobBook
from zombietop.judge.job_table import TREND_RUNS
from zombietop.judge.monitor import Monitor
from zombietop.store import open_store

NOW = 1_796_000_000.0
FULL_SCAN = (
    "SELECT job, finished_at - started_at FROM tasks WHERE job IS NOT NULL "
    "AND state = 'succeeded' ORDER BY job, finished_at"
)


def populate(path: Path, active: int, finished: int, jobs: int) -> None:
    """Fill a fresh store directly (fast): finished runs, their jobs' summaries, running runs
    with leases and heartbeats."""

    async def create() -> None:
        async with await open_store(path, create=True):
            pass

    asyncio.run(create())
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")
    per_job = finished // jobs
    with db:
        db.executemany(
            "INSERT INTO tasks (task_id, run_id, step, step_type, state, attempt, upstream, host,"
            " created_at, claimed_at, started_at, finished_at, updated_at, exit_code, job,"
            " run_number) VALUES (?, ?, ?, ?, 'succeeded', 1, '[]', 'host', ?, ?, ?, ?, ?, 0, ?, ?)",
            (
                (
                    f"job-{j}/run-{n}",
                    f"run-{n}",
                    f"job-{j}",
                    f"job-{j}",
                    start := NOW - 86400 * (per_job - n) - 3600,
                    start,
                    start,
                    start + 600 + (n % 60),
                    start + 600 + (n % 60),
                    f"job-{j}",
                    n + 1,
                )
                for j in range(jobs)
                for n in range(per_job)
            ),
        )
        window = [600.0 + (n % 60) for n in range(max(per_job - HISTORY_WINDOW, 0), per_job)]
        db.executemany(
            "INSERT INTO jobs (job, runs, succeeded, last_outcome, last_finished_at,"
            " last_success_at, durations, updated_at) VALUES (?, ?, ?, 'succeeded', ?, ?, ?, ?)",
            (
                (
                    f"job-{j}",
                    per_job,
                    per_job,
                    NOW - 3000,
                    NOW - 3000,
                    json.dumps(window),
                    NOW - 3000,
                )
                for j in range(jobs)
            ),
        )
        db.executemany(
            "INSERT INTO tasks (task_id, run_id, step, step_type, state, attempt, upstream, host,"
            " pid, pid_start_time, created_at, claimed_at, started_at, updated_at, job,"
            " run_number) VALUES (?, 'now', ?, ?, 'running', 1, '[]', 'host', ?, ?, ?, ?, ?, ?, ?,"
            " ?)",
            (
                (
                    f"job-{i % jobs}/now-{i}",
                    f"job-{i % jobs}",
                    f"job-{i % jobs}",
                    2000 + i,
                    NOW - 900,
                    NOW - 900,
                    NOW - 900,
                    NOW - 890,
                    NOW - 5,
                    f"job-{i % jobs}",
                    per_job + 1 + i // jobs,
                )
                for i in range(active)
            ),
        )
        db.executemany(
            "INSERT INTO leases (task_id, owner, token, acquired_at, renewed_at, expires_at)"
            " VALUES (?, 'worker@host', 1, ?, ?, ?)",
            ((f"job-{i % jobs}/now-{i}", NOW - 900, NOW - 10, NOW + 290) for i in range(active)),
        )
        db.executemany(
            "INSERT INTO heartbeats (task_id, stage, progress, counters, written_at,"
            " progress_changed_at, stage_started_at, seq) VALUES (?, 'copy', ?, '{}', ?, ?, ?, 40)",
            (
                (f"job-{i % jobs}/now-{i}", i % 100, NOW - (i % 60), NOW - (i % 600), NOW - 600)
                for i in range(active)
            ),
        )
    db.close()


def end_runs(path: Path, jobs: int, tick: int, ending: int) -> None:
    """``ending`` runs end between two ticks: their jobs' summaries change, as the store's
    ``_count_run`` leaves them."""
    db = sqlite3.connect(path)
    with db:
        db.executemany(
            "UPDATE jobs SET runs = runs + 1, succeeded = succeeded + 1, updated_at = ?"
            " WHERE job = ?",
            ((NOW + tick, f"job-{(tick * ending + k) % jobs}") for k in range(ending)),
        )
    db.close()


def measure(path: Path, jobs: int, runs: int, ending: int) -> dict[str, float]:
    clock = FakeClock(NOW)

    async def run() -> dict[str, float]:
        polls: list[float] = []
        refreshes: list[float] = []
        firsts: list[float] = []
        trends: list[float] = []
        changes: list[float] = []
        async with await open_store(path, clock=clock) as store:
            monitor = Monitor(store, default_config())
            snapshot = await monitor.poll()
            assert snapshot.ok and len(snapshot.jobs) == jobs, snapshot.error
            book = JobBook()
            await book.refresh(store)
            for _ in range(runs):
                tick = int(clock.advance(1) - NOW)
                end_runs(path, jobs, tick, ending)
                start = time.perf_counter()
                snapshot = await monitor.poll()
                polls.append(time.perf_counter() - start)
                assert snapshot.ok, snapshot.error
                start = time.perf_counter()
                await book.refresh(store)
                refreshes.append(time.perf_counter() - start)
                start = time.perf_counter()
                await JobBook().refresh(store)
                firsts.append(time.perf_counter() - start)
                start = time.perf_counter()
                latest = await store.latest_ended_runs(TREND_RUNS)
                trends.append(time.perf_counter() - start)
                assert len(latest) == jobs
                start = time.perf_counter()
                changed = await store.latest_ended_runs(TREND_RUNS, changed_after=NOW + tick)
                changes.append(time.perf_counter() - start)
                assert len(changed) == ending
        return {
            "poll": statistics.median(polls),
            "refresh": statistics.median(refreshes),
            "first": statistics.median(firsts),
            "trend": statistics.median(trends),
            "changed": statistics.median(changes),
        }

    figures = asyncio.run(run())
    db = sqlite3.connect(path)
    scans = []
    for _ in range(runs):
        start = time.perf_counter()
        rows = db.execute(FULL_SCAN).fetchall()
        scans.append(time.perf_counter() - start)
    db.close()
    assert rows
    figures["scan"] = statistics.median(scans)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--active", type=int, default=10_000)
    parser.add_argument("--finished", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=1_000)
    parser.add_argument("--ending", type=int, default=10, help="runs that end between ticks")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        populate(path, args.active, args.finished, args.jobs)
        figures = measure(path, args.jobs, args.runs, args.ending)
    print(
        f"{args.active:,} running runs, {args.finished:,} finished runs across {args.jobs:,} "
        f"jobs, {args.ending} runs ending between ticks; median of {args.runs}"
    )
    poll = figures["poll"]
    for label, key in (
        ("poll (includes the refresh)", "poll"),
        ("history refresh, each poll", "refresh"),
        ("first read of every summary", "first"),
        ("full scan of the finished runs", "scan"),
        ("jobs view: first read, 20 a job", "trend"),
        ("jobs view: the changed jobs'", "changed"),
    ):
        value = figures[key]
        print(f"{label:<32} {value * 1000:>9.2f} ms {value / poll:>8.1%} of a poll")
    return 0


if __name__ == "__main__":
    sys.exit(main())
