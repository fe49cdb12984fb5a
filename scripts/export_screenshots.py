"""Write the documentation's screenshots (SVG) from the sample fleet the snapshot tests use.

python scripts/export_screenshots.py [OUTDIR]     (default: screenshots/)
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot

from zombietop.clock import FakeClock
from zombietop.tui.app import ZombietopApp
from zombietop.tui.testing import (
    NOW,
    RecordingDesk,
    RecordingExecutor,
    SampleSource,
    sample_snapshot,
)
from zombietop.tui.testing.engines import engines_snapshot


def engines() -> ZombietopApp:
    """Airflow's, Celery's and zombietop's own tasks side by side."""
    return ZombietopApp(
        SampleSource([engines_snapshot()]),
        executor=RecordingExecutor(),
        clock=FakeClock(NOW),
        refresh=2,
        store_label="~/.local/state/zombietop/zombietop.db",
        actor="you@laptop",
        desk=RecordingDesk(),
    )


Steps = Callable[[Pilot[None]], Awaitable[None]]


def app(
    *, wall: bool = False, read_only: bool = False, kill: bool = False, oncall: bool = False
) -> ZombietopApp:
    snapshots = [sample_snapshot(kill_pending={"thumbs-7781"} if kill else (), oncall=oncall)]
    return ZombietopApp(
        SampleSource(snapshots, read_only=read_only),
        executor=None if read_only else RecordingExecutor(),
        clock=FakeClock(NOW),
        refresh=2,
        wall=wall,
        store_label="~/.local/state/zombietop/zombietop.db",
        actor="you@laptop",
        desk=None if read_only else RecordingDesk(),
    )


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
