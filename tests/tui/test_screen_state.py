"""One contract for the screens: the app hands the dashboard and the wall a ``ScreenState``, the
detail screen a ``DetailState``; a wall opened over the dashboard is handed the same state as
a wall on its own, and the detail screen reads nothing itself."""

from __future__ import annotations

import contextlib

from textual import on
from textual.app import App
from textual.widgets import Static
from textual.worker import WorkerFailed

from tests.tui.helpers import make_app, settle
from zombietop.judge.monitor import Snapshot
from zombietop.output import LastOutput
from zombietop.tui import messages
from zombietop.tui.screen_state import ShowsState, TaskRecord, detail_state, page_line
from zombietop.tui.screens.dashboard import DashboardScreen
from zombietop.tui.screens.detail import DetailScreen
from zombietop.tui.screens.wall import WallScreen
from zombietop.tui.testing import (
    NOW,
    SampleSource,
    sample_events,
    sample_history,
    sample_snapshot,
)
from zombietop.tui.widgets.banner import Banner
from zombietop.tui.widgets.health_card import HealthCard

OUTPUT = LastOutput(
    line="retrying the partner API",
    written_at=NOW - 90,
    lines=("connecting", "retrying the partner API"),
    attempt=1,
)


class BrokenSource(SampleSource):
    """Polls fine until ``broken``; then each poll raises, as a bug in a source would."""

    broken = False

    async def poll(self) -> Snapshot:
        if self.broken:
            raise RuntimeError("the source broke")
        return await super().poll()


def test_the_dashboard_and_the_wall_take_the_state_and_the_detail_does_not() -> None:
    assert issubclass(DashboardScreen, ShowsState) and issubclass(WallScreen, ShowsState)
    assert not issubclass(DetailScreen, ShowsState)


async def test_a_wall_opened_over_the_dashboard_shows_a_failed_poll_too() -> None:
    """The failed poll reaches every screen that shows the state, not only the main one."""
    source = BrokenSource()
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        wall = app.screen
        assert isinstance(wall, WallScreen)
        source.broken = True
        with contextlib.suppress(WorkerFailed):
            await app.poll().wait()
        await pilot.pause()
        assert "refresh failed: the source broke" in str(wall.query_one(Banner).render())
        assert "refresh failed" in str(app.main.query_one(Banner).render())


async def test_a_wall_opened_while_paused_shows_the_paused_data_and_polls_nothing() -> None:
    """Paused, the table is frozen: opening the wall over it must not refresh it."""
    later = sample_snapshot(oncall=True)
    source = SampleSource([sample_snapshot(), later])
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        polls = source.polls
        await pilot.press("p")
        await pilot.press("w")
        await settle(pilot)
        wall = app.screen
        assert isinstance(wall, WallScreen)
        assert source.polls == polls
        assert app.snapshot is not later
        cards = {card.health: card.count for card in wall.query(HealthCard)}
        assert cards and any(cards.values())


def test_the_page_line_ends_with_the_last_output_only_for_a_task_that_needs_a_human() -> None:
    snapshot = sample_snapshot()
    dead = snapshot.by_id()["etl-0417"]
    healthy = snapshot.by_id()["resize-9001"]
    assert page_line(dead, OUTPUT, NOW).endswith(
        "; last output 1m30s ago: retrying the partner API"
    )
    assert page_line(healthy, OUTPUT, NOW) == healthy.verdict.context(NOW)
    assert detail_state(snapshot, "gone-0000", NOW).page_line == ""


class Recorder(App[None]):
    """Any app: records what the detail screen asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    @on(messages.OutputAsked)
    def record(self, message: messages.OutputAsked) -> None:
        self.asked.append(message.task_id)


async def test_the_detail_screen_shows_the_record_it_is_handed_and_asks_for_the_output() -> None:
    """No source anywhere: the history, events and output come in the state; ``o`` asks the
    app to read the output afresh."""
    snapshot = sample_snapshot()
    task_id = "etl-0417"
    record = TaskRecord(
        history=tuple(sample_history(task_id)),
        events=tuple(sample_events(task_id)),
        last_output=OUTPUT,
    )
    app = Recorder()
    async with app.run_test(size=(110, 40)) as pilot:
        state = detail_state(snapshot, task_id, NOW, record)
        screen = DetailScreen(task_id, False, state)
        await app.push_screen(screen)
        await pilot.pause()

        def said(widget_id: str) -> str:
            return str(screen.query_one(widget_id, Static).render())

        assert "last output 1m30s ago: retrying the partner API" in said("#context")
        assert "progress over the last 18 heartbeats" in said("#spark-label")
        assert "pid 3907 is gone" in said("#events")
        assert "retrying the partner API" in said("#output")
        await pilot.press("o")
        await pilot.pause()
        screen.show_detail(detail_state(snapshot, task_id, NOW, TaskRecord()))
        await pilot.pause()
        assert "no output kept" in said("#output")
    assert app.asked == [task_id]
