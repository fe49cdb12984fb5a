"""First frame: from the start of the process to the first rows on a real terminal, for the
dashboard at 1,000 and 10,000 active tasks, against a Textual hello-world's first frame on the
same terminal, in the same run.

    python bench/first_frame.py [--runs 7] [--sizes 1000,10000] [--before DIR]

Each command runs in a pseudo-terminal of 100x30 (as over SSH), and the clock stops when the
terminal has been sent what a person looks for: ``hello`` for the hello-world, a task id for
the dashboard. The process is then killed: how long it takes to exit is no part of a first
frame. Two rows are floors, processes that import and print one word: the engine's modules
the dashboard loads (no Textual), and every module it loads (Textual too). "no glance" is the
same dashboard with its first glance turned off (every row read and judged before the first
frame), which is what it did before. The commands take turns run by run, so a machine that
gets busier slows them alike; the ratios to the hello-world are what the issue's goals are
measured by. ``--before DIR`` adds the floors and the dashboard of another checkout (as
bench/status_start.py lays it out) to the same turns, to time a change against its parent.
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
from poll_tick import populate  # benches beside this one
from status_start import installed_layout

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

ENGINE_IMPORTS = """
import zombietop.tui.cli.main, zombietop.tui.launch
print("imported")
"""
"""What the dashboard imports of the engine (the store, the monitor, the executor), without
Textual: next to the hello-world, the floor the dashboard cannot go below while it judges
its first rows with the engine's own model."""

DASHBOARD_IMPORTS = """
import zombietop.tui.cli.main, zombietop.tui.launch, zombietop.tui.app
print("imported")
"""
"""Everything the dashboard imports, Textual with it, before it opens the store."""

SIZE = (30, 100)
TIMEOUT_S = 60.0


class Terminal:
    """A command on a pseudo-terminal, read as it writes."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        """Start ``argv`` on a fresh terminal of ``SIZE``, in ``env`` (this one's by default)."""
        self.started = time.perf_counter()
        controller, terminal = pty.openpty()
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", *SIZE, 0, 0))
        env = {**(os.environ if env is None else env), "TERM": "xterm-256color"}
        env.update(COLUMNS="", LINES="")
        self.child = subprocess.Popen(
            argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env, start_new_session=True
        )
        os.close(terminal)
        self.controller = controller
        self.seen = b""

    def until(self, *markers: bytes, timeout: float = 300.0) -> float:
        """Seconds from the start until one of ``markers`` has been written (since the last
        call)."""
        deadline = time.perf_counter() + timeout
        while not any(marker in self.seen for marker in markers):
            left = deadline - time.perf_counter()
            if left <= 0:
                raise SystemExit(f"none of {markers!r} on the terminal within {timeout:g}s")
            ready, _, _ = select.select([self.controller], [], [], min(left, 1.0))
            if ready:
                try:
                    self.seen = self.seen[-4096:] + os.read(self.controller, 1 << 16)
                except OSError:  # the child closed the terminal: it died
                    raise SystemExit(f"the command exited before {markers!r}") from None
        marker = next(marker for marker in markers if marker in self.seen)
        self.seen = self.seen[self.seen.index(marker) + len(marker) :]
        return time.perf_counter() - self.started

    def key(self, data: bytes, marker: bytes) -> float:
        """Seconds from typing ``data`` until ``marker`` is on the terminal."""
        self.seen = b""
        pressed = time.perf_counter()
        os.write(self.controller, data)
        self.until(marker)
        return time.perf_counter() - pressed

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.child.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def memory_mb(self) -> tuple[float, float]:
        """Resident and peak resident memory, in MB."""
        status = dict(
            line.split(":", 1)
            for line in Path(f"/proc/{self.child.pid}/status").read_text().splitlines()
        )
        return tuple(int(status[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))  # type: ignore[return-value]

    def close(self) -> None:
        os.killpg(self.child.pid, signal.SIGKILL)
        self.child.wait()
        os.close(self.controller)


def first_frame(argv: list[str], marker: bytes, env: dict[str, str] | None = None) -> float:
    """Seconds from spawning ``argv`` on a fresh terminal until it has written ``marker``."""
    terminal = Terminal(argv, env)
    try:
        return terminal.until(marker, timeout=TIMEOUT_S)
    finally:
        terminal.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--before", type=Path, help="a checkout to time beside this one")
    args = parser.parse_args()
    python = sys.executable
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"": dict(os.environ)}
        if args.before is not None:
            old = installed_layout(args.before, Path(tmp) / "before")
            sides[" (before)"] = {**os.environ, "PYTHONPATH": str(old)}
        rows: dict[str, tuple[list[str], bytes, dict[str, str] | None]] = {
            "textual hello": ([python, "-c", HELLO], b"hello", None),
        }
        for side, env in sides.items():
            rows[f"the engine's imports{side}"] = ([python, "-c", ENGINE_IMPORTS], b"imported", env)
            rows[f"the dashboard's imports{side}"] = (
                [python, "-c", DASHBOARD_IMPORTS],
                b"imported",
                env,
            )
        for size in sizes:
            db = Path(tmp) / f"{size}.db"
            populate(db, size, 0)
            dashboard = ["-m", "zombietop.tui", "--db", str(db), "--read-only"]
            for side, env in sides.items():
                rows[f"dashboard, {size:,} tasks{side}"] = ([python, *dashboard], b"task-", env)
            no_glance = [python, "-c", NO_GLANCE, *dashboard[2:]]
            rows[f"  no glance, {size:,} tasks"] = (no_glance, b"task-", None)
        samples: dict[str, list[float]] = {name: [] for name in rows}
        for _ in range(args.runs):
            for name, (argv, marker, env) in rows.items():
                samples[name].append(first_frame(argv, marker, env))
    hello = statistics.median(samples["textual hello"])
    print(f"first frame on a {SIZE[1]}x{SIZE[0]} terminal, median (min) of {args.runs} runs")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(f"{'':>38} {'median s':>9} {'x hello':>8} {'min s':>7}")
    for name, runs in samples.items():
        seconds = statistics.median(runs)
        print(f"{name:>38} {seconds:>9.3f} {seconds / hello:>7.2f}x {min(runs):>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
