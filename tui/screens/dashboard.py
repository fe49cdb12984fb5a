"""The main screen: header, banner, the task table, the events pane, the filter and the footer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer, Input

from zombietop.actions import ActionKind
from zombietop.monitor import TaskView
from zombietop.tui.cells import columns_for_width
from zombietop.tui.keys import MUTATING_ACTIONS, bindings
from zombietop.tui.widgets.banner import Banner
from zombietop.tui.widgets.events_pane import EventsPane
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.task_list import TaskList

if TYPE_CHECKING:
    from zombietop.tui.app import ZombietopApp


class DashboardScreen(Screen[None]):
    """Most urgent first; one key and ``y`` resume, discard or kill the task under the cursor."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings(),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    DEFAULT_CSS = """
    DashboardScreen #filter {
        dock: bottom;
        display: none;
        height: 3;
    }
    DashboardScreen #filter.-open {
        display: block;
    }
    """

    @property
    def zapp(self) -> ZombietopApp:
        return cast("ZombietopApp", self.app)

    def compose(self) -> ComposeResult:
        yield StatusHeader()
        yield Banner()
        yield TaskList(id="tasks")
        yield EventsPane()
        yield Input(
            placeholder="filter: task id, stage or health (Enter keeps it, Esc clears)", id="filter"
        )
        # ^p still opens the palette; help lists it, and the footer keeps room for q at 80 columns.
        yield Footer(compact=True, show_command_palette=False)

    @property
    def table(self) -> TaskList:
        return self.query_one(TaskList)

    def on_mount(self) -> None:
        header = self.query_one(StatusHeader)
        header.store = self.zapp.store_label
        header.refresh_s = self.zapp.refresh_interval
        header.read_only = self.zapp.read_only
        header.sort_label = str(self.zapp.sort_mode)
        self.table.focus()
        # Poll once the widgets exist, so the first snapshot has somewhere to go.
        self.zapp.poll()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Hidden from the footer and never run: read-only means no action keys at all.
        if action in MUTATING_ACTIONS and self.zapp.read_only:
            return False
        return True

    def on_resize(self, event: Resize) -> None:
        self.fit_columns(event.size.width)

    def fit_columns(self, width: int) -> None:
        columns = columns_for_width(width - 1)  # one cell for the vertical scrollbar
        if columns != self.table.shown_columns:
            self.table.set_columns(columns)

    def redraw(self) -> None:
        """Re-filter and re-sort now (after a filter or sort change; not on a poll)."""
        self.show_views(self.zapp.ordered_views(self.zapp.snapshot), self.zapp.clock.now())

    def show_views(self, views: Sequence[TaskView], now: float) -> None:
        self.table.show(views, self.zapp.data_now(now), self.zapp.current_notes(now))

    def show_state(self, now: float) -> None:
        """Push the app's snapshot and clock into the header and banner."""
        self.query_one(StatusHeader).show(
            self.zapp.snapshot,
            now,
            sort_label=str(self.zapp.sort_mode),
            filter_label=(
                f"{self.zapp.filter_text!r} "
                f"({self.table.row_count} of {len(self.zapp.snapshot.tasks)})"
                if self.zapp.filter_text
                else ""
            ),
        )
        banner = self.query_one(Banner)
        banner.now = now
        banner.snapshot = self.zapp.snapshot
        banner.paused_at = self.zapp.paused_at

    # Keys -----------------------------------------------------------------------------------

    def _act(self, kind: ActionKind) -> None:
        task_id = self.table.selected_task_id
        if task_id is None:
            self.notify("no task selected", severity="warning")
            return
        self.zapp.request_action(kind, task_id)

    def action_quit(self) -> None:
        # The key table's "quit" binds on this screen, which Textual asks first.
        self.app.exit()

    def action_resume(self) -> None:
        self._act(ActionKind.RESUME)

    def action_discard(self) -> None:
        self._act(ActionKind.DISCARD)

    def action_kill(self) -> None:
        self._act(ActionKind.KILL)

    def action_ack(self) -> None:
        task_id = self.table.selected_task_id
        if task_id is None:
            self.notify("no task selected", severity="warning")
            return
        self.zapp.request_ack(task_id)

    def action_silence(self) -> None:
        task_id = self.table.selected_task_id
        if task_id is None:
            self.notify("no task selected", severity="warning")
            return
        self.zapp.request_silence(task_id)

    def action_detail(self) -> None:
        task_id = self.table.selected_task_id
        if task_id is not None:
            self.zapp.open_detail(task_id)

    @on(TaskList.Selected)
    def _row_selected(self, event: TaskList.Selected) -> None:
        event.stop()
        self.zapp.open_detail(event.task_id)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("-open")
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.zapp.filter_text = event.value.strip()
        self.redraw()
        self.show_state(self.zapp.clock.now())

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        box = self.query_one("#filter", Input)
        if not event.value.strip():
            box.remove_class("-open")
        self.table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("-open")
        self.table.focus()

    def action_cycle_sort(self) -> None:
        self.zapp.sort_mode = self.zapp.sort_mode.next()
        self.redraw()
        self.show_state(self.zapp.clock.now())
        self.notify(f"sorted by {self.zapp.sort_mode}", timeout=2)

    def action_toggle_pause(self) -> None:
        self.zapp.toggle_pause()

    def action_toggle_events(self) -> None:
        pane = self.query_one(EventsPane)
        pane.toggle_class("-open")
        self.zapp.events_open = pane.has_class("-open")
        if self.zapp.events_open:
            self.zapp.load_events()

    def action_help(self) -> None:
        self.zapp.open_help()
