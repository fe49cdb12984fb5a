"""The screens without ZombietopApp: handed their data, they draw it, and every key they do not
handle themselves becomes a message to whichever app holds them."""

from __future__ import annotations

from textual import on
from textual.app import App
from textual.message import Message

from zombietop.tui import messages
from zombietop.tui.screen_state import Rows, ScreenState, detail_state
from zombietop.tui.screens.dashboard import DashboardScreen
from zombietop.tui.screens.detail import DetailScreen
from zombietop.tui.task_order import SortMode
from zombietop.tui.testing import NOW, SampleSource, sample_snapshot
from zombietop.tui.widgets.task_list import TaskList


class Recorder(App[None]):
    """Any app: records what its screens ask for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[object, ...]] = []

    @on(messages.TaskAsked)
    @on(messages.SortCycled)
    @on(messages.FilterChanged)
    @on(messages.PauseToggled)
    @on(messages.EventsToggled)
    @on(messages.ScreenReady)
    def record(self, message: Message) -> None:
        fields = getattr(message, "__dataclass_fields__", {})
        self.asked.append((type(message).__name__, *(getattr(message, f) for f in fields)))


async def test_the_dashboard_shows_what_it_is_handed_and_asks_by_message() -> None:
    app = Recorder()
    snapshot = sample_snapshot()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = DashboardScreen("store", 2.0, False, SortMode.URGENCY)
        await app.push_screen(screen)
        await pilot.pause()
        rows = Rows(views=snapshot.tasks, now=NOW, outcomes={})
        screen.show_state(ScreenState(snapshot=snapshot, now=NOW, rows=rows))
        await pilot.pause()
        first = screen.query_one(TaskList).selected_task_id
        assert first == snapshot.tasks[0].task_id
        await pilot.press("s", "p", "e", "K", "a", "enter")
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
    assert app.asked == [
        ("ScreenReady",),
        ("SortCycled",),
        ("PauseToggled",),
        ("EventsToggled", True),
        ("TaskAsked", "kill", first),
        ("TaskAsked", "ack", first),
        ("TaskAsked", "detail", first),
        ("FilterChanged", "x"),
    ]


async def test_read_only_the_detail_screen_asks_nothing_and_shows_no_action_keys() -> None:
    app = Recorder()
    source = SampleSource(read_only=True)
    snapshot = await source.poll()
    task_id = snapshot.tasks[0].task_id
    async with app.run_test(size=(100, 40)) as pilot:
        await app.push_screen(DetailScreen(task_id, True, detail_state(snapshot, task_id, NOW)))
        await pilot.press("r", "d", "K", "a", "A")
        await pilot.pause()
        shown = {active.binding.action for active in app.screen.active_bindings.values()}
        assert not shown & {"resume", "discard", "kill", "ack", "silence"}
    assert app.asked == []


async def test_the_detail_screen_asks_for_its_task() -> None:
    app = Recorder()
    source = SampleSource()
    snapshot = await source.poll()
    task_id = snapshot.tasks[1].task_id
    async with app.run_test(size=(100, 40)) as pilot:
        await app.push_screen(DetailScreen(task_id, False, detail_state(snapshot, task_id, NOW)))
        await pilot.press("r", "A")
        await pilot.pause()
    assert app.asked == [
        ("TaskAsked", "resume", task_id),
        ("TaskAsked", "silence", task_id),
    ]
