"""Start-up: `zombietop status` and the dashboard's first frame, side by side with `python -c pass`
and a bare Textual hello-world's first frame. Whole processes, wall clock, median of N.

    python bench/startup.py [--runs 7] [--tasks 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HELLO = """
from textual.app import App
from textual.widgets import Static
class Hello(App):
    def compose(self):
        yield Static("hello")
    def on_mount(self):
        self.call_after_refresh(self.exit)
Hello().run(headless=True)
"""

DASHBOARD = """
import asyncio, sys
from pathlib import Path
from zombietop.config import default_config
from zombietop.tui.app import ZombietopApp
from zombietop.tui.poller import ThreadedMonitor
from zombietop.tui.textual_compat import install_cropped_updates

async def main():
    install_cropped_updates()  # as `zombietop` runs it (tui/launch.py)
    source = await ThreadedMonitor.open(Path(sys.argv[1]), default_config(), read_only=True)
    app = ZombietopApp(source, refresh=1.0)

    async def first_frame(pilot):
        while app.snapshot.taken_at is None:
            await pilot.pause(0.01)
        await pilot.pause()
        app.exit()

    try:
        await app.run_async(headless=True, auto_pilot=first_frame)
    finally:
        await source.close()
asyncio.run(main())
"""


def make_store(path: Path, tasks: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from zombietop.heartbeat_line import parse_line
    from zombietop.store import open_store

    async def fill() -> None:
        async with await open_store(path, create=True) as store:
            for i in range(tasks):
                task_id = f"job-{i:04d}"
                await store.create_task(
                    task_id=task_id, run_id="r", step="s", step_type="default", actor="bench"
                )
                lease = await store.acquire_lease(task_id, owner="bench", ttl=3600)
                await store.record_heartbeat(
                    task_id, parse_line(f"stage=s p={i % 100}"), owner="bench", token=lease.token
                )

    asyncio.run(fill())


def timed(argv: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tasks", type=int, default=1000)
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "z.db"
        make_store(db, args.tasks)
        rows = [
            ("python -c pass", [python, "-c", "pass"]),
            ("zombietop status", [python, "-m", "zombietop.tui", "--db", str(db), "status"]),
            ("textual hello, first frame", [python, "-c", HELLO]),
            ("dashboard, first frame", [python, "-c", DASHBOARD, str(db)]),
        ]
        results = {name: timed(argv, args.runs) for name, argv in rows}
    base = results["python -c pass"]
    print(f"median of {args.runs} runs; store with {args.tasks:,} tasks; headless Textual")
    print(f"{'':>28} {'seconds':>8} {'x python':>9}")
    for name, seconds in results.items():
        print(f"{name:>28} {seconds:>8.3f} {seconds / base:>8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
