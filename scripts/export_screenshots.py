"""Write the documentation's screenshots (SVG) from the sample fleet the snapshot tests use.

python scripts/export_screenshots.py [OUTDIR]     (default: screenshots/)
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from zombietop.clock import FakeClock
from zombietop.output import LastOutput
from zombietop.tui.app import ZombietopApp
from zombietop.tui.testing import (
    NOW,
    RecordingDesk,
    RecordingExecutor,
    SampleSource,
    sample_snapshot,
)
from zombietop.tui.testing.engines import engines_snapshot
from zombietop.tui.testing.jobs import (
    SAMPLE_VIEWS,
    SCHEDULES,
    sample_job_runs,
    sample_jobs_snapshot,
)
from zombietop.tui.testing.workers import workers_snapshot


def sample_app(source: SampleSource, **options: Any) -> ZombietopApp:
    """The dashboard on ``source`` as the screenshots show it: a frozen clock, actions recorded."""
    read_only = options.pop("read_only", False)
    return ZombietopApp(
        source,
        executor=None if read_only else RecordingExecutor(),
        clock=FakeClock(NOW),
        refresh=2,
        store_label="~/.local/state/zombietop/zombietop.db",
        actor="you@laptop",
        desk=None if read_only else RecordingDesk(),
        **options,
    )


def engines() -> ZombietopApp:
    """Airflow's, Celery's and zombietop's own tasks side by side."""
    return sample_app(SampleSource([engines_snapshot()]))


def jobs() -> ZombietopApp:
    """The sample fleet with its jobs' runs, schedules and saved views."""
    source = SampleSource([sample_jobs_snapshot()], job_runs=sample_job_runs())
    return sample_app(source, views=SAMPLE_VIEWS, schedules=SCHEDULES)


def workers() -> ZombietopApp:
    """Tasks on zombietop's agents and on Celery's, RQ's and BullMQ's workers, one gone."""
    return sample_app(SampleSource([workers_snapshot()]))


def output() -> ZombietopApp:
    """The sample fleet, with export-2031's last 120 lines of output, three of them errors."""
    lines = tuple(
        f"12:{n // 60:02d}:{n % 60:02d} ERROR timeout talking to warehouse (batch {n})"
        if n in (17, 58, 101)
        else f"12:{n // 60:02d}:{n % 60:02d} loaded batch {n} of 120"
        for n in range(120)
    )
    last = LastOutput(line=lines[-1], written_at=NOW - 30, lines=lines, attempt=2)
    return sample_app(SampleSource(outputs={"export-2031": last}))


Steps = Callable[[Pilot[None]], Awaitable[None]]


def app(
    *, wall: bool = False, read_only: bool = False, kill: bool = False, oncall: bool = False
) -> ZombietopApp:
    snapshots = [sample_snapshot(kill_pending={"thumbs-7781"} if kill else (), oncall=oncall)]
    return sample_app(SampleSource(snapshots, read_only=read_only), wall=wall, read_only=read_only)


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(2):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def keys(*pressed: str) -> Steps:
    async def run(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press(*pressed)
        await settle(pilot)

    return run


SHOTS: list[tuple[str, Callable[[], ZombietopApp], tuple[int, int], Steps]] = [
    ("dashboard", app, (160, 40), settle),
    ("dashboard-80x24", app, (80, 24), settle),
    ("detail", app, (110, 40), keys("down", "enter")),
    ("kill-confirm", app, (100, 30), keys("down", "down", "K")),
    ("kill-countdown", lambda: app(kill=True), (100, 24), settle),
    ("filter", app, (100, 24), keys("slash", *"export", "enter")),
    ("events", app, (120, 30), keys("e")),
    ("help", app, (100, 48), keys("question_mark")),
    ("read-only", lambda: app(read_only=True), (100, 24), settle),
    ("wall", lambda: app(wall=True), (120, 40), settle),
    ("wall-80x24", lambda: app(wall=True), (80, 24), settle),
    ("oncall", lambda: app(oncall=True), (120, 30), keys("e")),
    ("oncall-wall", lambda: app(wall=True, oncall=True), (120, 40), settle),
    ("ack", app, (100, 30), keys("down", "down", "a")),
    ("engines", engines, (160, 30), settle),
    ("marked", app, (120, 30), keys("space", "down", "down", "space", "down", "space")),
    ("bulk-confirm", app, (100, 30), keys("slash", *"export", "enter", "asterisk", "d")),
    ("jobs", jobs, (120, 30), keys("J")),
    ("view-picker", jobs, (100, 30), keys("v")),
    ("output-search", output, (120, 40), keys("down", "enter", "o", "slash", *"error", "enter")),
    ("workers", workers, (120, 30), keys("W")),
]


async def export(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    for name, make, size, steps in SHOTS:
        the_app = make()
        async with the_app.run_test(size=size) as pilot:
            await steps(pilot)
            the_app.save_screenshot(filename=f"{name}.svg", path=str(outdir))
        print(outdir / f"{name}.svg")


if __name__ == "__main__":
    asyncio.run(export(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("screenshots")))
