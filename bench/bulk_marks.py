"""Marks at incident scale: ``*`` on 10,000 filtered rows, and the bulk confirm's first frame,
each against a poll of the same store, in the same run.

    python bench/bulk_marks.py [--tasks 10000] [--runs 7]

A real SQLite store holds ``--tasks`` running tasks (``poll_tick.populate``); the dashboard
reads it through the real monitor, headless at 160x48, with a filter every row matches.
Three figures, median of ``--runs``, each also as a ratio to the poll:

- poll: ``Monitor.poll()`` of that store (read, probe, judge), what every refresh costs;
- mark all: from ``*`` until the marked rows are drawn (the marks of every shown row, the
  header's count, the rows in view redrawn);
- bulk confirm: from ``d`` with every row marked until the confirm is drawn (the plan of
  10,000 tasks, their health counts, the dialog);
- bulk plan alone: the bulk confirm's own work, without Textual (the marked rows, their
  plan, the dialog's texts);
- one-task confirm: ``d`` with no marks, the confirm of one task: what any dialog over the
  table costs Textual to draw (the table behind it is drawn again, dimmed), for comparison;
- a key that does nothing (``f12``, bound to nothing): the floor of every figure above, Pilot's
  own round trip from a key to an idle app (about 80 ms here, whatever the rows); the last
  column takes it off each key's figure.

The goal (issue 52): each under 100 ms on top of a poll. Key to frame goes through Textual's
Pilot, which waits for the app to be idle after the key: that wait is in the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from poll_tick import populate  # a bench beside this one

from zombietop.act.bulk import plan_action
from zombietop.actions import ActionKind
from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.judge.monitor import Monitor
from zombietop.procs import PsutilProbe
from zombietop.store.sqlite import SQLiteStore
from zombietop.tui.app import ZombietopApp
from zombietop.tui.screens.bulk import BulkConfirmScreen, plan_text, skipped_text
from zombietop.tui.screens.confirm import ConfirmScreen
from zombietop.tui.testing import NOW, RecordingExecutor
from zombietop.tui.textual_compat import install_cropped_updates


async def measure(db: Path, tasks: int, runs: int) -> dict[str, list[float]]:
    clock = FakeClock(NOW)
    store = await SQLiteStore.open(db, clock=clock)
    monitor = Monitor(store, default_config(), clock=clock, probe=PsutilProbe())
    times: dict[str, list[float]] = {
        "poll": [],
        "mark all": [],
        "bulk confirm": [],
        "one-task confirm": [],
        "bulk plan alone": [],
        "a key that does nothing": [],
    }
    try:
        for _ in range(runs):
            started = time.perf_counter()
            await monitor.poll()
            times["poll"].append(time.perf_counter() - started)
        install_cropped_updates()
        app = ZombietopApp(
            monitor, executor=RecordingExecutor(), clock=clock, refresh=3600, actor="bench"
        )
        async with app.run_test(size=(160, 48)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.press("slash", *"task-", "enter")
            await pilot.pause()
            assert len(app.rows.views) == tasks, len(app.rows.views)
            for _ in range(runs):
                started = time.perf_counter()
                await pilot.press("asterisk")
                await pilot.pause()
                times["mark all"].append(time.perf_counter() - started)
                assert len(app.bulk.marked) == tasks
                started = time.perf_counter()
                plan = plan_action(ActionKind.DISCARD, app.bulk.marked_views(), {})
                plan_text(plan), skipped_text(plan, "discarded")
                times["bulk plan alone"].append(time.perf_counter() - started)
                started = time.perf_counter()
                await pilot.press("d")
                while not isinstance(app.screen, BulkConfirmScreen):
                    await pilot.pause()
                await pilot.pause()
                times["bulk confirm"].append(time.perf_counter() - started)
                await pilot.press("n", "escape")  # cancel, then clear the marks
                await pilot.pause()
                assert not app.bulk.marked
                started = time.perf_counter()
                await pilot.press("d")
                while not isinstance(app.screen, ConfirmScreen):
                    await pilot.pause()
                await pilot.pause()
                times["one-task confirm"].append(time.perf_counter() - started)
                await pilot.press("n")
                await pilot.pause()
                started = time.perf_counter()
                await pilot.press("f12")
                await pilot.pause()
                times["a key that does nothing"].append(time.perf_counter() - started)
    finally:
        await store.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        populate(db, args.tasks, 0)
        times = asyncio.run(measure(db, args.tasks, args.runs))
    poll = statistics.median(times["poll"])
    floor = statistics.median(times["a key that does nothing"])
    keys = ("mark all", "bulk confirm", "one-task confirm")
    print(f"{args.tasks:,} running tasks, median of {args.runs} runs")
    print(f"{'':24}{'ms':>9}{'x poll':>9}{'ms over the floor':>19}")
    for name, samples in times.items():
        median = statistics.median(samples)
        over = f"{(median - floor) * 1000:19.1f}" if name in keys else ""
        print(f"{name:24}{median * 1000:9.1f}{median / poll:9.2f}{over}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
