"""Dashboard update: time to apply a snapshot to the task table, headless, for 1k and 10k tasks
when 1%, 10% and 100% of them changed. Target: the cost follows changed-and-visible rows, not
total rows.

    python bench/table_update.py [--runs 5]

"same second" applies new data at the same clock reading (only changed rows are stale); "next
second" also moves the clock, so every row's ages are stale but only visible rows are formatted.
Snapshots are built as the dashboard's monitor builds them, keeping the views of unchanged tasks
(``build_snapshot(previous=...)``): a snapshot of all-new views would have the table free every
view of the one before, which is the snapshot's cost, not the table's.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from dataclasses import replace

from textual.app import App, ComposeResult

from zombietop.judge.monitor import build_snapshot
from zombietop.tui.cells import COLUMNS
from zombietop.tui.testing import NOW, sample_config, synthetic_records
from zombietop.tui.widgets.task_list import TaskList


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TaskList()


async def measure(size: int, fraction: float, runs: int) -> tuple[float, float, int]:
    config = sample_config()
    records = synthetic_records(size)
    step = max(1, round(1 / fraction))
    same, moved, touched = [], [], 0
    app = TableApp()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(TaskList)
        table.set_columns(COLUMNS)
        first = build_snapshot(NOW, records, config, {})
        table.show(first.tasks, NOW)
        previous = first.by_id()
        await pilot.pause()
        for run in range(runs):
            changed = [
                replace(
                    r,
                    heartbeat=replace(
                        r.heartbeat, progress=(run * 7 + i) % 100, written_at=NOW - run
                    ),
                )
                if i % step == 0 and r.heartbeat is not None
                else r
                for i, r in enumerate(records)
            ]
            snapshot = build_snapshot(NOW, changed, config, {}, previous=previous)
            views, previous = snapshot.tasks, snapshot.by_id()
            gc.collect()  # the garbage of building the snapshot is not the table's to pay
            started = time.perf_counter()
            table.show(views, NOW)
            same.append(time.perf_counter() - started)
            touched = table.cells_touched
            await pilot.pause()
            snapshot = build_snapshot(NOW + run + 1, changed, config, {}, previous=previous)
            views, previous = snapshot.tasks, snapshot.by_id()
            gc.collect()
            started = time.perf_counter()
            table.show(views, NOW + run + 1)
            moved.append(time.perf_counter() - started)
            await pilot.pause()
    return statistics.median(same), statistics.median(moved), touched


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"median of {args.runs} applications, terminal 160x48")
    print(
        f"{'tasks':>6} {'changed':>8} {'same second':>12} {'next second':>12} {'cells written':>14}"
    )
    for size in (1_000, 10_000):
        for fraction in (0.01, 0.10, 1.0):
            same, moved, touched = asyncio.run(measure(size, fraction, args.runs))
            print(
                f"{size:>6} {fraction:>7.0%} {same * 1000:>9.1f} ms {moved * 1000:>9.1f} ms {touched:>14}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
