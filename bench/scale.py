"""How the dashboard's cost grows with the work: 1,000, 10,000 and 100,000 active tasks of a
beating fleet (1 in 50 silent), each measured on a real terminal.

    python bench/scale.py [--sizes 1000,10000,100000] [--rest 20] [--plot docs/scale.svg]

For each size, ``scripts/fleet_store.py`` fills a store and keeps it beating (about 1,000
beats a second at most, so a big fleet beats less often per task), and the dashboard runs in
a pseudo-terminal of 100x30 against it:

- first frame: from its start to the first task id on the terminal (a glance, at these sizes);
- whole: to the first line of counts (the first whole poll, read and judged);
- key: ``s`` pressed, to the header's new sort label on the terminal, median of 3 presses;
- CPU: its share of one core over ``--rest`` seconds after that, the fleet beating;
- RSS: its resident memory after those seconds, and its peak (VmHWM);
- ``status --json``: seconds and peak RSS of a whole run, its output thrown away.

Prints a table and, with ``--plot``, draws the curves as SVG (matplotlib, which only this
bench needs: ``pip install matplotlib``). Not a test: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from first_frame import Terminal  # a bench beside this one

ROOT = Path(__file__).resolve().parents[1]
SORT_LABELS = (b"oldest heartbeat", b"least progress", b"task id")
"""The header's sort labels ``s`` cycles through (only the cells that change are written)."""
COUNTS = (b"quarantined", b"all clear")
"""On the header's counts line (every count, or the all-clear and the counts not zero), never
in a row of this read-only fleet: the first whole poll is on screen."""
SETTLE_S = 95.0
"""The fleet's silent tasks are reclaimable 90 s in (``fleet_store.SILENT_TTL_S`` and the
grace after it): measured from then, as a fleet looks in steady state."""
BEATS_PER_S = 1000


def fleet(db: Path, tasks: int) -> subprocess.Popen[str]:
    """A beating fleet of ``tasks``; returns once every task is in the store."""
    beat_every = max(10.0, tasks / BEATS_PER_S)
    argv = [sys.executable, str(ROOT / "scripts" / "fleet_store.py"), "--db", str(db),
            "--tasks", str(tasks), "--beat-every", f"{beat_every:g}", "--silent", "50"]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if "beating" not in line:
        raise SystemExit(f"fleet_store.py did not start: {line!r}")
    return process


STATUS_PEAK = """
import resource, subprocess, sys
subprocess.run([sys.executable, "-m", "zombietop.tui", *sys.argv[1:]], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
"""Run ``zombietop`` with these arguments and print its peak RSS (KB): a process of its own,
whose only child it is."""


def status_json(db: Path) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of one ``zombietop status --json``."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", STATUS_PEAK, "--db", str(db), "status", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - started, int(done.stdout.split()[-1]) / 1024


def measure(tasks: int, rest: float, tmp: Path) -> dict[str, float]:
    db = tmp / f"fleet-{tasks}.db"
    beating = fleet(db, tasks)
    try:
        time.sleep(SETTLE_S)
        terminal = Terminal([sys.executable, "-m", "zombietop.tui", "--db", str(db), "--read-only"])
        try:
            row = {"tasks": float(tasks), "first_frame_s": terminal.until(b"job-")}
            row["whole_s"] = terminal.until(*COUNTS)
            keys = [terminal.key(b"s", label) for label in SORT_LABELS]
            row["key_ms"] = statistics.median(keys) * 1000
            cpu, started = terminal.cpu_seconds(), time.perf_counter()
            time.sleep(rest)
            row["cpu_pct"] = (terminal.cpu_seconds() - cpu) / (time.perf_counter() - started) * 100
            row["rss_mb"], row["peak_rss_mb"] = terminal.memory_mb()
        finally:
            terminal.close()
        row["status_json_s"], row["status_json_peak_mb"] = status_json(db)
        return row
    finally:
        # SIGTERM, not SIGINT: a shell that starts this bench in the background has its
        # children ignore SIGINT, and the fleet would beat on.
        os.killpg(beating.pid, signal.SIGTERM)
        beating.wait()


def plot(rows: list[dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    sizes = [row["tasks"] for row in rows]
    figure, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    panels = (
        ("seconds", [("first frame", "first_frame_s"), ("whole first poll", "whole_s"),
                     ("status --json", "status_json_s")]),
        ("% of a core at rest", [("dashboard", "cpu_pct")]),
        ("MB", [("dashboard RSS", "rss_mb"), ("dashboard peak", "peak_rss_mb"),
                ("status --json peak", "status_json_peak_mb")]),
    )  # fmt: skip
    for ax, (unit, lines) in zip(axes, panels, strict=True):
        for label, key in lines:
            ax.plot(sizes, [row[key] for row in rows], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("active tasks")
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    figure.suptitle("zombietop's dashboard against the size of a beating fleet (1 in 50 silent)")
    figure.tight_layout()
    figure.savefig(path, format="svg")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rest", type=float, default=20.0)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(int(size), args.rest, Path(tmp)) for size in args.sizes.split(",")]
    keys = list(rows[0])
    print(" ".join(f"{key:>19}" for key in keys))
    for row in rows:
        print(" ".join(f"{row[key]:>19.3f}" for key in keys))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
