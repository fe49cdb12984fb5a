"""Pass-through: how fast `zombietop run` copies a command's output, against `cat` and the
command alone.

First, against `cat`: a file of MB megabytes of log lines is read by `cat FILE`, by
`zombietop run -- cat FILE` and, for the wrapper's start-up alone, by `zombietop run -- true`,
the three alternated run by run, each read to its end through a pipe by this script. Printed:
wall clock and CPU time (user and system, of the whole process tree), median of N, and the
rate of the copy itself: MB over the wrapped run less the start-up, against MB over `cat`.

Then each kind of output is written by the same small Python program, once straight to a pipe
and once under `zombietop run`. The CPU time the wrapper adds is what the pass-through costs;
on a busy machine it is also the steadier figure. The kinds: plain log lines; lines with `p=`
inside (URLs), which make the wrapper search each chunk for heartbeat lines; lines that begin
with `p=` and are no heartbeat line, which make it parse them until it gives up; real heartbeat
lines, which make it give the hint once and stop.

    python bench/passthrough.py [--runs 5] [--mb 200] [--cat-only]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = {
    "plain": "INFO copying block 1234 of /data/export/part-0007.csv to the bucket\n",
    "p= inside": "GET /items?page=3&p=41 200 0.012s from 10.0.0.7 user=export\n",
    "p= first": "p=41 is not a heartbeat line, only a log line that starts the same way\n",
    "beats": "stage=copy p=41 rows=8200000\n",
}

WRITER = """
import sys
line = sys.argv[1].encode() * 1000
left = int(sys.argv[2]) * 1024 * 1024
out = sys.stdout.buffer
while left > 0:
    out.write(line[:left])
    left -= len(line)
out.flush()
"""


def timed(argv: list[str]) -> tuple[float, float]:
    """Run ``argv``, read all it writes; return its wall clock and its tree's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    while proc.stdout.read(1 << 16):
        pass
    assert proc.wait() == 0
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    wall, cpu = (statistics.median(x) for x in zip(*runs, strict=True))
    return wall, cpu


def against_cat(tmp: Path, db: Path, runs: int, mb: int) -> None:
    data = tmp / "log.txt"
    with data.open("wb") as out:
        line = KINDS["plain"].encode() * 1000
        left = mb * 1024 * 1024
        while left > 0:
            out.write(line[:left])
            left -= len(line)
    run = [sys.executable, "-m", "zombietop.tui", "--db", str(db), "run", "--"]
    commands = {
        "cat FILE": ["cat", str(data)],
        "zombietop run -- cat FILE": [*run, "cat", str(data)],
        "zombietop run -- true": [*run, "true"],
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):  # alternated, so that a busy moment hits all three
        for name, argv in commands.items():
            times[name].append(timed(argv))
    print(f"against cat: {mb} MB of log lines per run, median of {runs}")
    print(f"{'command':<28} {'wall':>7} {'cpu':>7}")
    for name in commands:
        wall, cpu = medians(times[name])
        print(f"{name:<28} {wall:>6.2f}s {cpu:>6.2f}s")
    cat_wall, _ = medians(times["cat FILE"])
    wrapped_wall, _ = medians(times["zombietop run -- cat FILE"])
    start_wall, _ = medians(times["zombietop run -- true"])
    copy = max(wrapped_wall - start_wall, 1e-9)
    print(
        f"whole run: {wrapped_wall / cat_wall:.1f}x cat's wall clock; the copy alone "
        f"(less the start-up): {mb / copy:.0f} MB/s against cat's {mb / cat_wall:.0f} MB/s, "
        f"{copy / cat_wall:.1f}x"
    )
    print()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--cat-only", action="store_true", help="only the run against cat")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "z.db"
        against_cat(Path(tmp), db, args.runs, args.mb)
        if args.cat_only:
            return
        print(f"{args.mb} MB per run, median of {args.runs}")
        print(
            f"{'output':<10} {'wall alone':>10} {'wrapped':>8} {'cpu alone':>10} {'wrapped':>8}"
            f" {'added cpu/GB':>13}"
        )
        for kind, line in KINDS.items():
            write = [sys.executable, "-c", WRITER, line, str(args.mb)]
            wrap = [sys.executable, "-m", "zombietop.tui", "--db", str(db), "run", "--", *write]
            alone, wrapped = [], []
            for _ in range(args.runs):  # alternated, so that a busy moment hits both
                alone.append(timed(write))
                wrapped.append(timed(wrap))
            wall_a, cpu_a = (statistics.median(x) for x in zip(*alone, strict=True))
            wall_w, cpu_w = (statistics.median(x) for x in zip(*wrapped, strict=True))
            added = (cpu_w - cpu_a) * 1024 / args.mb
            print(
                f"{kind:<10} {wall_a:>9.2f}s {wall_w:>7.2f}s {cpu_a:>9.2f}s {cpu_w:>7.2f}s"
                f" {added:>12.2f}s"
            )


if __name__ == "__main__":
    main()
