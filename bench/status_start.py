"""`zombietop status` from start to exit, beside `python -c pass` and a bare fetch of the
store's rows in a process of its own, and (``--before DIR``) beside another checkout's
`status`, all in one run.

    python bench/status_start.py [--runs 9] [--tasks 5,10000] [--before DIR]

For each store size: ``python -c pass``; a bare fetch (a Python that imports sqlite3, opens
the store and fetches the rows the poll reads, ``select_tasks_for_poll``); two floors, a Python
that imports asyncio and aiosqlite (what the asynchronous store needs) and one that imports
what `status` imports before it reads anything, then exits; then plain
``status``, ``status --json`` and ``status --nagios``, for this checkout and for ``DIR``
(``git worktree add DIR main``: its core/ and tui/ copied into a folder laid out as installed,
put first on PYTHONPATH). Each is a whole process; the figure is the median wall time of
``--runs``, the runs of the rows interleaved so a burst of load falls on every row alike. The
stores are made through the store's API (scripts/fleet_store.py's fleet, no process on this
host) and bytecode is compiled first, as an installed copy has it.
Not a test: the machine is shared and noisy, so only ratios measured in the same run compare.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripts.fleet_store import beat_once, enlist  # noqa: E402
from zombietop.store import open_store  # noqa: E402
from zombietop.store.sqlite import POLL_SQL  # noqa: E402

BARE = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
rows = db.execute(sys.argv[2], {"finished_since": time.time() - 3600}).fetchall()
"""


STATUS_IMPORTS = "import zombietop.tui.cli.main, zombietop.tui.cli.status"
"""What `status` loads before it reads the store: with asyncio and aiosqlite, the floors a
`status` on the engine's own model cannot go below."""


def make_store(path: Path, tasks: int) -> None:
    async def fill() -> None:
        async with await open_store(path, create=True) as store:
            leases = await enlist(store, tasks, silent=50)
            for index, (task_id, lease) in enumerate(leases.items()):
                await beat_once(store, task_id, lease, 1, index)

    asyncio.run(fill())


def installed_layout(checkout: Path, into: Path) -> Path:
    """``checkout``'s code laid out as pip installs it (core/ as zombietop, tui/ inside)."""
    shutil.copytree(checkout / "core", into / "zombietop")
    shutil.copytree(checkout / "tui", into / "zombietop" / "tui")
    compileall.compile_dir(into, quiet=1)
    return into


def timings(rows: dict[str, tuple[list[str], dict[str, str]]], runs: int) -> dict[str, list[float]]:
    """Each row's wall times, the rows taking turns run by run."""
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(runs):
        for name, (argv, env) in rows.items():
            started = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            samples[name].append(time.perf_counter() - started)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--tasks", default="5,10000", help="store sizes, comma-separated")
    parser.add_argument("--before", type=Path, help="a checkout to time beside this one")
    args = parser.parse_args()
    python = sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    compileall.compile_dir(REPO / "core", quiet=1)
    compileall.compile_dir(REPO / "tui", quiet=1)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"now": env}
        if args.before is not None:
            old = installed_layout(args.before, Path(tmp) / "before")
            sides["before"] = {**env, "PYTHONPATH": str(old)}
        for size in (int(n) for n in args.tasks.split(",")):
            db = Path(tmp) / f"z{size}.db"
            make_store(db, size)
            rows = {
                "python -c pass": ([python, "-c", "pass"], env),
                "bare fetch": ([python, "-c", BARE, str(db), POLL_SQL], env),
                "asyncio + aiosqlite": ([python, "-c", "import asyncio, aiosqlite"], env),
                "status's imports": ([python, "-c", STATUS_IMPORTS], env),
            }
            for side, side_env in sides.items():
                for flags in ([], ["--json"], ["--nagios"]):
                    name = " ".join(["status", *flags, f"({side})"])
                    argv = [python, "-m", "zombietop.tui", "--db", str(db), "status", *flags]
                    rows[name] = (argv, side_env)
            samples = timings(rows, args.runs)
            results = {name: statistics.median(values) for name, values in samples.items()}
            base, bare = results["python -c pass"], results["bare fetch"]
            print(f"\n{size:,} tasks; median of {args.runs} runs, load {os.getloadavg()[0]:.2f}")
            print(f"{'':>26} {'seconds':>8} {'x python':>9} {'x bare fetch':>13} {'min s':>7}")
            for name, seconds in results.items():
                print(
                    f"{name:>26} {seconds:>8.3f} {seconds / base:>8.2f}x {seconds / bare:>12.2f}x"
                    f" {min(samples[name]):>7.3f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
