"""First frame: from the start of the process to the first rows on a real terminal, for the
dashboard at 1,000 and 10,000 active tasks, against a Textual hello-world's first frame on the
same terminal, in the same run.

    python bench/first_frame.py [--runs 7] [--sizes 1000,10000]

Each command runs in a pseudo-terminal of 100x30 (as over SSH), and the clock stops when the
terminal has been sent what a person looks for: ``hello`` for the hello-world, a task id for
the dashboard. The process is then killed: how long it takes to exit is no part of a first
frame. "no glance" is the same dashboard with its first glance turned off (every row read and
judged before the first frame), which is what it did before. The commands take turns run by
run, so a machine that gets busier slows them alike; the ratios to the hello-world are what
the issue's goals are measured by.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from poll_tick import populate  # a bench beside this one

HELLO = """
from textual.app import App
from textual.widgets import Static
class Hello(App):
    def compose(self):
        yield Static("hello")
Hello().run()
"""

NO_GLANCE = """
import sys
from zombietop.tui.cli.main import main
from zombietop.tui.poller import ThreadedMonitor
async def no_glance(self, limit):
    return None
ThreadedMonitor.glance = no_glance
sys.exit(main())
"""

SIZE = (30, 100)
TIMEOUT_S = 60.0


def open_terminal(argv: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``argv`` on a fresh terminal of ``SIZE``; return it and the terminal's other end."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", *SIZE, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "", "LINES": ""}
    child = subprocess.Popen(
        argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env, start_new_session=True
    )
    os.close(terminal)
    return child, controller


def first_frame(argv: list[str], marker: bytes) -> float:
    """Seconds from spawning ``argv`` on a fresh terminal until it has written ``marker``."""
    started = time.perf_counter()
    child, controller = open_terminal(argv)
    seen = b""
    try:
        while marker not in seen:
            if time.perf_counter() - started > TIMEOUT_S:
                raise SystemExit(f"no {marker!r} within {TIMEOUT_S:g}s from {argv[:3]}")
            ready, _, _ = select.select([controller], [], [], 1.0)
            if ready:
                try:
                    seen = seen[-256:] + os.read(controller, 65536)
                except OSError:  # the child closed the terminal: it died
                    raise SystemExit(f"{argv[:3]} exited before {marker!r}") from None
        return time.perf_counter() - started
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        os.close(controller)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sizes", default="1000,10000")
    args = parser.parse_args()
    python = sys.executable
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        rows: dict[str, tuple[list[str], bytes]] = {
            "textual hello": ([python, "-c", HELLO], b"hello")
        }
        for size in sizes:
            db = Path(tmp) / f"{size}.db"
            populate(db, size, 0)
            dashboard = ["-m", "zombietop.tui", "--db", str(db), "--read-only"]
            rows[f"dashboard, {size:,} tasks"] = ([python, *dashboard], b"task-")
            no_glance = [python, "-c", NO_GLANCE, *dashboard[2:]]
            rows[f"  no glance, {size:,} tasks"] = (no_glance, b"task-")
        samples: dict[str, list[float]] = {name: [] for name in rows}
        for _ in range(args.runs):
            for name, (argv, marker) in rows.items():
                samples[name].append(first_frame(argv, marker))
    hello = statistics.median(samples["textual hello"])
    print(f"first frame on a {SIZE[1]}x{SIZE[0]} terminal, median of {args.runs} runs")
    print(f"{'':>28} {'seconds':>8} {'x hello':>8}")
    for name, runs in samples.items():
        seconds = statistics.median(runs)
        print(f"{name:>28} {seconds:>8.3f} {seconds / hello:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
