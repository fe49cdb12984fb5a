"""One poll of a Dagster source with 1,000 running runs, beside a bare read of the same rows,
in one run.

    python bench/dagster_poll.py [--runs 1000] [--polls 5]

Dagster (the venv of tests/dagster_env.py) writes ``--runs`` running runs into a fresh instance
folder through its own instance API, each with its start and its step's start naming one live
process of this host (a ``sleep``), as a host full of run workers would have them. The bare
read is what any reader of these runs must do: the unfinished runs from ``history/runs.db``,
then every row of each run's event log, with Python's sqlite3 and nothing else done (each file
opened read-only and immutable, as the source opens a quiet file). The source's poll reads the
same, checks each run worker's pid against the kernel, and builds the task records. Its first
poll reads every event log; the next ones read a file again only when it changed, so both are
shown.

Prints a table of medians; exits 0. Not a test: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.dagster_env import DagsterInstance, venv  # noqa: E402
from zombietop.sources.dagster import DagsterSource  # noqa: E402


def _immutable(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro&immutable=1", uri=True)


def bare_read(history: Path) -> int:
    """The same rows, read with nothing else done: the runs found."""
    conn = _immutable(history / "runs.db")
    try:
        runs = [
            row[0]
            for row in conn.execute(
                "SELECT run_id FROM runs WHERE status NOT IN ('SUCCESS', 'FAILURE', 'CANCELED')"
            )
        ]
    finally:
        conn.close()
    for run_id in runs:
        events = _immutable(history / "runs" / f"{run_id}.db")
        try:
            events.execute(
                "SELECT id, dagster_event_type, timestamp, step_key, event FROM event_logs"
            ).fetchall()
        finally:
            events.close()
    return len(runs)


def bare_polls(history: Path, polls: int) -> tuple[float, int]:
    samples, fewest = [], -1
    for _ in range(polls):
        start = time.perf_counter()
        found = bare_read(history)
        samples.append(time.perf_counter() - start)
        fewest = found if fewest < 0 else min(fewest, found)
    return statistics.median(samples), fewest


async def source_polls(url: str, polls: int) -> tuple[float, float, int]:
    """The first poll's time, the median of the next ones', and the fewest runs found."""
    source = DagsterSource(url)
    await source.open()
    samples, fewest = [], -1
    try:
        for _ in range(polls + 1):
            start = time.perf_counter()
            found = await source.poll(None, "bench")
            samples.append(time.perf_counter() - start)
            fewest = len(found) if fewest < 0 else min(fewest, len(found))
    finally:
        await source.close()
    return samples[0], statistics.median(samples[1:]), fewest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--polls", type=int, default=5)
    args = parser.parse_args()
    if venv() is None:
        sys.exit(
            "bench/dagster_poll.py needs Dagster in a venv of its own: .dagster-venv, or "
            "ZOMBIETOP_DAGSTER_VENV (see tests/dagster_env.py)"
        )
    folder = Path(tempfile.mkdtemp(prefix="zombietop-bench-dagster-"))
    sleeper = subprocess.Popen(["sleep", "86400"])
    try:
        instance = DagsterInstance(folder)
        made = time.perf_counter()
        instance.fleet(args.runs, sleeper.pid)
        print(f"Dagster wrote {args.runs} running runs in {time.perf_counter() - made:.0f} s")
        history = instance.home / "history"
        bare, bare_runs = bare_polls(history, args.polls)
        first, later, runs = asyncio.run(source_polls(instance.url, args.polls))
    finally:
        sleeper.kill()
        sleeper.wait()
    rows = [
        ("bare read of the same rows (sqlite3)", bare, bare_runs),
        ("dagster source, first poll", first, runs),
        ("dagster source, next polls", later, runs),
    ]
    print(f"{'read':<40} {'median ms':>10} {'runs':>6} {'x bare':>7}")
    for name, seconds, found in rows:
        print(f"{name:<40} {seconds * 1000:>10.1f} {found:>6} {seconds / bare:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
