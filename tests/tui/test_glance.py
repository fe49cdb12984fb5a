"""The dashboard's first frame on a big store: a glance (the tasks silent longest) while the
whole first poll is read; never a count, an all-clear or a zero it has not seen."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from textual.pilot import Pilot

from tests.tui.helpers import make_app, settle
from zombietop.judge.monitor import Snapshot
from zombietop.tui.testing import SampleSource
from zombietop.tui.testing.fleet import sample_snapshot
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.task_list import TaskList


class SlowSource(SampleSource):
    """A big store: a glance at once, the whole poll once ``read`` is set."""

    def __init__(self, glance: Snapshot | None) -> None:
        super().__init__()
        self._glance = glance
        self.read = asyncio.Event()
        self.glanced: list[int] = []

    async def glance(self, limit: int) -> Snapshot | None:
        self.glanced.append(limit)
        return self._glance

    async def poll(self) -> Snapshot:
        await self.read.wait()
        return await super().poll()


def header_text(pilot: Pilot[None]) -> str:
    header = pilot.app.screen.query_one(StatusHeader)
    return "\n".join(line.plain for line in header._build())


async def until(pilot: Pilot[None], check: object) -> None:
    for _ in range(200):
        if callable(check) and check():
            return
        await pilot.pause(0.01)
    raise AssertionError("the screen never showed it")


async def test_the_first_frame_is_a_glance_then_the_whole_poll() -> None:
    whole = sample_snapshot()
    glance = replace(whole, tasks=whole.tasks[:3], glance_of=12_000)
    source = SlowSource(glance)
    app = make_app(source)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.snapshot.glance_of is not None)
        await pilot.pause()
        text = header_text(pilot)
        assert "first glance: the 3 of 12,000 active tasks silent longest" in text
        assert "all clear" not in text and "stalled 1" not in text
        assert app.query_one(TaskList).row_count == 3
        assert source.glanced == [40]  # a screenful: at least 40 rows
        source.read.set()
        await settle(pilot)
        assert app.snapshot.glance_of is None and app.snapshot.tasks == whole.tasks
        assert "first glance" not in header_text(pilot)
        assert app.query_one(TaskList).row_count == len(whole.tasks)


async def test_before_anything_is_read_the_header_counts_nothing() -> None:
    source = SlowSource(None)
    app = make_app(source)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: source.glanced)
        await pilot.pause()
        text = header_text(pilot)
        assert "reading the store..." in text and " 0" not in text.split("\n", 1)[1]
        source.read.set()
        await settle(pilot)
        assert "reading the store" not in header_text(pilot)


async def test_the_wall_never_glances() -> None:
    source = SlowSource(replace(sample_snapshot(), glance_of=12_000))
    source.read.set()
    app = make_app(source, wall=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert source.glanced == [] and app.snapshot.glance_of is None
