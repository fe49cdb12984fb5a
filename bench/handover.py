"""``zombietop handover`` with many open incidents: 1,000 and 10,000 side by side in one run.

    python bench/handover.py [--sizes 1000 10000] [--runs 3]

Each size is a store of its own, filled directly (fast) with that many open incidents, as the
watchdog leaves them after a mass outage: per task, its first page and two notices again,
among a thousand events of other kinds (heartbeat errors, leases) that handover must not read.
The real command runs as a person runs it, ``zombietop --db PATH handover`` (Markdown) and
``--format json``, in a process of its own: the time includes starting Python.

Prints, per size, the median time of each format and the output's size, and the time of the
read and the Markdown alone in this process (no Python start): that part should grow near
linearly from the smallest size to the largest. Exits 0. Not a test:
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

from zombietop.oncall.handover import read_handover  # noqa: E402
from zombietop.store import open_store  # noqa: E402
from zombietop.tui.handover_text import handover_markdown  # noqa: E402

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


def measure_inside(path: Path, runs: int, now: float) -> float:
    """The median seconds of the read and the Markdown alone, in this process: the part that
    grows with the incidents, without Python's start."""

    async def once() -> float:
        async with await open_store(path, read_only=True) as store:
            start = time.perf_counter()
            found = await read_handover(store, now=now, since=now - 8 * HOUR)
            handover_markdown(found)
            return time.perf_counter() - start

    return statistics.median(asyncio.run(once()) for _ in range(runs))


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
            results[size]["inside"] = measure_inside(path, args.runs, now)
    print(f"zombietop handover, median of {args.runs} runs each (a process each, Python included)")
    print(f"{'open incidents':>15} {'markdown':>10} {'bytes':>10} {'json':>10} {'bytes':>12}"
          f" {'read+md inside':>15}")  # fmt: skip
    for size, f in results.items():
        print(
            f"{size:>15,} {f['md']:>9.2f}s {int(f['md_bytes']):>10,} {f['json']:>9.2f}s"
            f" {int(f['json_bytes']):>12,} {f['inside']:>14.3f}s"
        )
    small, large = min(results), max(results)
    if small != large:
        for name in ("md", "json", "inside"):
            growth = results[large][name] / results[small][name]
            print(f"{name}: {large / small:.0f}x the incidents took {growth:.1f}x the time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
