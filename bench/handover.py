"""``zombietop handover`` with many open incidents: 1,000 and 10,000 side by side in one run.

    python bench/handover.py [--sizes 1000 10000] [--runs 3]

Each size is a store of its own, filled directly (fast) with that many open incidents, as the
watchdog leaves them after a mass outage: per task, its first page and two notices again,
among a thousand events of other kinds (heartbeat errors, leases) that handover must not read.
The real command runs as a person runs it, ``zombietop --db PATH handover`` (Markdown) and
``--format json``, in a process of its own: the time includes starting Python.

Prints, per size, the median time of each format, the time per incident and the output's size;
the growth from the smallest size to the largest should be near linear. Exits 0. Not a test:
the machine is shared and noisy, so only the figures of the same run compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from zombietop.store import open_store  # noqa: E402

HOUR = 3600.0
SCRIPT = Path(sys.executable).with_name("zombietop")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "zombietop.tui"]


def populate(path: Path, incidents: int, now: float) -> None:
    """A fresh store with ``incidents`` open incidents opened over the last 6 hours."""

    async def create() -> None:
        async with await open_store(path, create=True):
            pass

    asyncio.run(create())
    rows = []
    for n in range(incidents):
        task_id = f"export-{n:06}"
        health = "stalled" if n % 4 else "dead"
        opened = now - 6 * HOUR + n * (5 * HOUR / incidents)
        incident = f"{task_id}@{opened}"
        line = f"{task_id} {health}: stage=copy p=61% heartbeat 4h12m old - resume or discard"
        rows.append(
            (opened, task_id, "page", "watchdog", line, _data("incident", health, incident))
        )
        for notice in (1, 2):
            rows.append(
                (
                    opened + notice * 1800,
                    task_id,
                    "page",
                    "watchdog",
                    f"{line} ({('2nd', '3rd')[notice - 1]} notice)",
                    _data("renotify", health, incident),
                )
            )
    rows += [(now - n, None, "lease_renewed", "w@h", "renewed", "{}") for n in range(1000)]
    db = sqlite3.connect(path)
    with db:
        db.executemany(
            "INSERT INTO events (at, task_id, kind, actor, message, data)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            sorted(rows, key=lambda row: row[0]),
        )
    db.close()


def _data(page: str, health: str, incident: str) -> str:
    return json.dumps({"page": page, "health": health, "incident": incident})


def measure(path: Path, runs: int) -> dict[str, float]:
    """The median seconds of each format over ``runs``, and the bytes each prints."""
    figures: dict[str, float] = {}
    for name, extra in (("md", []), ("json", ["--format", "json"])):
        times = []
        size = 0
        for _ in range(runs):
            start = time.perf_counter()
            done = subprocess.run(
                [*COMMAND, "--db", str(path), "handover", "--since", "8h", *extra],
                capture_output=True,
                check=True,
            )
            times.append(time.perf_counter() - start)
            size = len(done.stdout)
        figures[name] = statistics.median(times)
        figures[f"{name}_bytes"] = size
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    now = time.time()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"handover-{size}.db"
            populate(path, size, now)
            results[size] = measure(path, args.runs)
    print(f"zombietop handover, median of {args.runs} runs each (a process each, Python included)")
    print(f"{'open incidents':>15} {'markdown':>10} {'per 1,000':>10} {'bytes':>10}"
          f" {'json':>10} {'per 1,000':>10} {'bytes':>12}")  # fmt: skip
    for size, f in results.items():
        print(
            f"{size:>15,} {f['md']:>9.2f}s {f['md'] * 1000 / size:>9.3f}s {int(f['md_bytes']):>10,}"
            f" {f['json']:>9.2f}s {f['json'] * 1000 / size:>9.3f}s {int(f['json_bytes']):>12,}"
        )
    small, large = min(results), max(results)
    if small != large:
        for name in ("md", "json"):
            growth = results[large][name] / results[small][name]
            print(f"{name}: {large / small:.0f}x the incidents took {growth:.1f}x the time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
