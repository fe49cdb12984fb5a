"""Run the dashboard on 1,000 synthetic live tasks without a store, to measure the UI alone.

    python bench/dashboard_app.py [--tasks 1000] [--refresh 1]

Snapshots are built up front (one per second for ten seconds, ages ticking), so the process's CPU
is the app's own: the refresh worker, the table diff and the rendering; no SQL, no classify.
Compare with ``zombietop --db fleet.db`` (scripts/fleet_store.py) to see the monitor's share.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from zombietop.clock import SystemClock
from zombietop.config import default_config
from zombietop.judge.monitor import Snapshot, build_snapshot
from zombietop.tui.app import ZombietopApp
from zombietop.tui.testing import SampleSource, synthetic_records
from zombietop.tui.textual_compat import install_cropped_updates


class TickingSource(SampleSource):
    """Hands out the snapshot for the current second, so ages tick as they would live."""

    def __init__(self, snapshots: list[Snapshot], start: float) -> None:
        super().__init__(snapshots, read_only=True)
        self.start = start

    async def poll(self) -> Snapshot:
        index = int(time.time() - self.start) % len(self.snapshots)
        return self.snapshots[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--refresh", type=float, default=1.0)
    args = parser.parse_args()
    start = time.time()
    base = synthetic_records(args.tasks, start)
    config = default_config()
    snapshots = [
        replace(build_snapshot(start + second, base, config, {}), taken_at=start + second)
        for second in range(10)
    ]
    install_cropped_updates()  # as `zombietop` runs it (tui/launch.py)
    ZombietopApp(
        TickingSource(snapshots, start),
        executor=None,
        clock=SystemClock(),
        refresh=args.refresh,
        store_label=f"{args.tasks} synthetic tasks",
    ).run()


if __name__ == "__main__":
    main()
