"""The main screen: header, banner, the task table, the events pane, the filter and the footer."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.events import Resize
from textual.widgets import Footer, Input

from zombietop.config import View
from zombietop.judge.monitor import Snapshot
from zombietop.tui import messages
from zombietop.tui.cells import RowNotes, running_per_job
from zombietop.tui.keys import MARK_KEYS, TaskKeys, bindings, digit_bindings
from zombietop.tui.screen_state import Rows, ScreenState
from zombietop.tui.screens.wall import WallScreen
from zombietop.tui.task_order import PerSnapshot, SortMode
from zombietop.tui.unlisted_text import table_texts
from zombietop.tui.view_messages import JobsToggled, ViewAsked, ViewPickerAsked
from zombietop.tui.views import run_columns
from zombietop.tui.widgets.banner import Banner
from zombietop.tui.widgets.events_pane import EventsPane
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.task_list import TaskList


class DashboardScreen(TaskKeys):
    """Most urgent first; one key and ``y`` resume, discard or kill the task under the cursor."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings(),
        *bindings(MARK_KEYS),
        *digit_bindings(),
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
    DashboardScreen.-filtering ToastRack {
        margin-bottom: 4;  /* above the filter box and the footer, never over them */
    }
    """

    def __init__(
        self, store_label: str, refresh_s: float, read_only: bool, sort_mode: SortMode
    ) -> None:
        super().__init__(read_only=read_only)
        self.store_label = store_label
        self.refresh_s = refresh_s
        self._first_sort = sort_mode
        """What the header says until the first snapshot; then ``show_state`` says."""
        self._shown: ScreenState | None = None
        """The state shown last: its rows and events are shown again only when new."""
        self._runs_per_job = PerSnapshot(running_per_job)
        """By job, how many of its runs execute in the latest snapshot shown."""
        self.view: View | None = None
        """The saved view of runs shown (its columns), or None."""

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

    @property
    def key_task_id(self) -> str | None:
        return self.table.selected_task_id

    def on_mount(self) -> None:
        header = self.query_one(StatusHeader)
        header.store = self.store_label
        header.refresh_s = self.refresh_s
        header.read_only = self.read_only
        header.sort_label = str(self._first_sort)
        self.table.focus()
        self.post_message(messages.ScreenReady())

    def on_resize(self, event: Resize) -> None:
        self.fit_columns(event.size.width)

    def fit_columns(self, width: int) -> None:
        columns = run_columns(width - 1, self.view)  # one cell for the vertical scrollbar
        if columns != self.table.shown_columns:
            self.table.set_columns(columns)

    def show_state(self, state: ScreenState) -> None:
        """Show the app's state: the rows when they are new, the header, banner and events."""
        shown, self._shown = self._shown, state
        snapshot = state.snapshot
        if shown is None or state.rows is not shown.rows:
            self.show_rows(state.rows, snapshot)
        self.table.set_marked(state.marked)
        self.table.show_under(table_texts(snapshot.counted))
        filter_text = state.filter_text
        counted = f"({len(state.rows.views)} of {len(snapshot.tasks)})"
        header = self.query_one(StatusHeader)
        view = self.view
        if view is not None:
            # The view's own filter reads as the view's name, so the first line fits 80 columns.
            own = filter_text == view.filter
            header.view_label = f"{view.name} {counted}" if own and filter_text else view.name
            filter_text = "" if own else filter_text
        header.show(
            snapshot,
            state.now,
            sort_label=str(state.sort_mode),
            filter_label=f"{filter_text!r} {counted}" if filter_text else "",
            marked=len(state.marked),
        )
        banner = self.query_one(Banner)
        banner.now = state.now
        banner.snapshot = snapshot
        banner.paused_at = state.paused_at
        pane = self.query_one(EventsPane)
        pane.silences = snapshot.oncall.silences
        if state.events is not None and (shown is None or state.events is not shown.events):
            pane.set_events(state.events)

    def show_rows(self, rows: Rows, snapshot: Snapshot) -> None:
        """Show these rows, their ages as of ``rows.now``, each with its outcome and its
        on-call marks in ``snapshot``."""
        notes = RowNotes(rows.outcomes, snapshot.oncall, self._runs_per_job(snapshot.tasks))
        self.table.show(rows.views, rows.now, notes)

    # Keys (the task keys are TaskKeys') ------------------------------------------------------

    def action_quit(self) -> None:
        # The key table's "quit" binds on this screen, which Textual asks first.
        self.app.exit()

    def action_detail(self) -> None:
        task_id = self.table.selected_task_id
        if task_id is not None:
            self.post_message(messages.TaskAsked(messages.TaskAction.DETAIL, task_id))

    @on(TaskList.Selected)
    def _row_selected(self, event: TaskList.Selected) -> None:
        event.stop()
        self.post_message(messages.TaskAsked(messages.TaskAction.DETAIL, event.task_id))

    def action_toggle_mark(self) -> None:
        task_id = self.table.selected_task_id
        if task_id is not None:
            self.post_message(messages.MarksAsked(messages.MarkAction.TOGGLE, task_id))

    def action_mark_shown(self) -> None:
        self.post_message(messages.MarksAsked(messages.MarkAction.SHOWN))

    def action_clear_marks(self) -> None:
        """Esc: clear the marks; with none (or in the filter box), clear the filter."""
        marked = self._shown is not None and self._shown.marked
        if marked and not self.query_one("#filter", Input).has_focus:
            self.post_message(messages.MarksAsked(messages.MarkAction.CLEAR))
        else:
            self.action_clear_filter()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("-open")
        self.add_class("-filtering")
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.post_message(messages.FilterChanged(event.value.strip()))

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        box = self.query_one("#filter", Input)
        if not event.value.strip():
            box.remove_class("-open")
            self.remove_class("-filtering")
        self.table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("-open")
        self.remove_class("-filtering")
        self.table.focus()

    def action_cycle_sort(self) -> None:
        self.post_message(messages.SortCycled())

    def action_group_rows(self) -> None:
        self.post_message(messages.RowsGrouped())

    def action_toggle_pause(self) -> None:
        self.post_message(messages.PauseToggled())

    def action_toggle_events(self) -> None:
        pane = self.query_one(EventsPane)
        pane.toggle_class("-open")
        self.post_message(messages.EventsToggled(pane.has_class("-open")))

    def action_help(self) -> None:
        # The other screens are imported when first asked for: the first frame needs none.
        from zombietop.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self.read_only))

    def show_view(self, view: View | None) -> None:
        """Show a saved view of runs (its columns and its name; the app sets its filter and
        sort), or none."""
        self.view = view
        self.query_one(StatusHeader).view_label = "" if view is None else view.name
        self.fit_columns(self.size.width)

    def action_jobs_view(self) -> None:
        self.post_message(JobsToggled())

    def action_pick_view(self) -> None:
        self.post_message(ViewPickerAsked())

    def action_switch_view(self, number: int) -> None:
        self.post_message(ViewAsked(number=number))

    def action_wall(self) -> None:
        wall = WallScreen(self.store_label, self.refresh_s, back=True, read_only=self.read_only)
        self.app.push_screen(wall)

    def action_workers(self) -> None:
        from zombietop.tui.screens.workers import WorkersScreen

        self.app.push_screen(WorkersScreen())
