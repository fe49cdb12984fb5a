"""Run the dashboard on 1,000 synthetic live tasks without a store, to measure the UI alone.

    python scripts/bench_dashboard.py [--tasks 1000] [--refresh 1]

Snapshots are built up front (one per second for ten seconds, ages ticking), so the process's CPU
is the app's own: the refresh worker, the table diff and the rendering; no SQL, no classify.
Compare with ``zombietop --db fleet.db`` (scripts/fleet_store.py) to see the monitor's share.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from core.clock import SystemClock
from core.config import default_config
from core.model import Heartbeat, Lease, Task, TaskRecord, TaskState
from core.monitor import Snapshot, build_snapshot
from tui.app import ZombietopApp
from tui.sample import SampleSource


def records(n: int, now: float) -> list[TaskRecord]:
    out = []
    for i in range(n):
        task_id = f"job-{i:04d}"
        out.append(
            TaskRecord(
                task=Task(
                    task_id=task_id,
                    run_id="run",
                    step="job",
                    step_type="batch",
                    state=TaskState.RUNNING,
                    host="h",
                    pid=1000 + i,
                    created_at=now - 900,
                    claimed_at=now - 890,
                    started_at=now - 890,
                    updated_at=now,
                ),
                lease=Lease(task_id=task_id, owner="o@h", token=1, expires_at=now + 300 - i % 10),
                heartbeat=Heartbeat(
                    task_id=task_id,
                    stage="work",
                    progress=float(i % 100),
                    written_at=now - i % 10,
                    progress_changed_at=now - i % 10,
                    stage_started_at=now - 600,
                ),
            )
        )
    return out


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
    base = records(args.tasks, start)
    config = default_config()
    snapshots = [
        replace(build_snapshot(start + second, base, config, {}), taken_at=start + second)
        for second in range(10)
    ]
    ZombietopApp(
        TickingSource(snapshots, start),
        executor=None,
        clock=SystemClock(),
        refresh=args.refresh,
        store_label=f"{args.tasks} synthetic tasks",
    ).run()


if __name__ == "__main__":
    main()
