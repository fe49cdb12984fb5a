"""The zombietop dashboard: a Textual app over the monitor (reads) and the executor (actions)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, ClassVar

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from zombietop.actions import ActionExecutor, ActionKind, ActionOutcome, ActionRequest
from zombietop.clock import Clock, SystemClock
from zombietop.config import OnCallSettings, Schedule, View
from zombietop.config.settings import COPY_LINES
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.model import Event
from zombietop.oncall.acks import OnCallDesk
from zombietop.output import LastOutput
from zombietop.printable import printable
from zombietop.tui import messages
from zombietop.tui.bulk_flow import BulkFlow
from zombietop.tui.keys import QUIT_KEYS, TaskKeys, display_key, keys_for
from zombietop.tui.messages import TaskAction
from zombietop.tui.oncall_flow import OnCallFlow
from zombietop.tui.screen_state import (
    NO_ROWS,
    Rows,
    ScreenState,
    ShowsState,
    TaskRecord,
    detail_state,
)
from zombietop.tui.screens.confirm import ConfirmScreen
from zombietop.tui.screens.dashboard import DashboardScreen
from zombietop.tui.screens.detail import DetailScreen
from zombietop.tui.screens.wall import WallScreen
from zombietop.tui.source import SnapshotSource
from zombietop.tui.task_order import (
    PerSnapshot,
    SortMode,
    in_snapshot_order,
    one_per_job,
    ordered,
)
from zombietop.tui.textual_compat import quiet_driver
from zombietop.tui.toasts import ToastsWait
from zombietop.tui.view_flow import ViewFlow
from zombietop.tui.view_messages import JobsToggled, ViewAsked, ViewPickerAsked
from zombietop.tui.views import narrowed

NOTE_SECONDS = 60.0
"""How long a row shows the outcome of the last action taken on it."""
GLANCE_ROWS = 40
"""The fewest tasks a first glance reads (more when the terminal is taller)."""
FIND_DELAY = 0.3
"""Seconds from a change of the filter to the poll that searches a large store for it: one
poll when the typing pauses, not one a key."""


class ZombietopApp(ToastsWait):
    """Poll in a worker, show the snapshot, and send every action through one executor."""

    CSS_PATH = "app.tcss"
    TITLE = "zombietop"
    # ctrl+c quits from any screen, as in htop and k9s, instead of Textual's "press q" hint.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(QUIT_KEYS, "quit", "Quit", show=False, priority=True)
    ]

    # No repaint: an App-level repaint redraws the whole screen every poll. The screens push
    # the snapshot into their widgets, which repaint only what changed.
    snapshot: reactive[Snapshot] = reactive(
        Snapshot(taken_at=None), init=False, always_update=True, repaint=False
    )

    def __init__(
        self,
        source: SnapshotSource,
        *,
        executor: ActionExecutor | None = None,
        clock: Clock | None = None,
        refresh: float = 2.0,
        wall: bool = False,
        store_label: str = "",
        actor: str = "zombietop",
        terminal_alive: Callable[[], bool] | None = None,
        desk: OnCallDesk | None = None,
        oncall: OnCallSettings | None = None,
        mouse: bool = True,
        copy_lines: int = COPY_LINES,
        views: Sequence[View] = (),
        schedules: Sequence[Schedule] = (),
        view: View | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        # The wall never acts, whatever it was handed.
        self.executor = None if wall else executor
        self.oncall_flow = OnCallFlow(self, None if wall else desk, oncall or OnCallSettings())
        """The on-call keys (ack, unack, silence, note) and their screens."""
        self.bulk = BulkFlow(self)
        """The marks, and what the action keys do with them."""
        self.mouse = mouse
        """False: the terminal keeps the mouse (``--no-mouse``, ``[monitor] mouse``)."""
        self.view_flow = ViewFlow(self, views, schedules, view)
        """The jobs view (J) and the saved views (v, 1-9, --view)."""
        self.clock = clock or SystemClock()
        self.refresh_interval = refresh
        self.copy_lines = copy_lines
        """How many output lines ``c`` copies in the detail view (``[monitor] copy_lines``)."""
        self.wall = wall
        self.actor = actor
        self.terminal_alive = terminal_alive
        self.on_terminal_lost: Callable[[], None] = self.exit
        self.on_first_snapshot: Callable[[], None] | None = None
        """Called once, after the first snapshot is on screen (the dashboard settles the heap)."""
        self.read_only = self.executor is None or self.executor.read_only or source.read_only
        if wall:
            self.use_command_palette = False
        self.sort_mode = SortMode.URGENCY
        self.filter_text = ""
        self.per_run = False
        """One row per run (``g``); by default one row per job."""
        self.job_rows = PerSnapshot(one_per_job)
        """The rows of one per job of the latest snapshot, kept for the keys that re-sort it."""
        self.paused_at: float | None = None
        self._glance_first = not wall
        """The first poll is preceded by a glance (``SnapshotSource.glance``); the wall, which
        shows counts, waits for the whole poll."""
        self.events_open = False
        self._find_due = False
        """The filter changed on a store that counts quiet tasks: poll soon to search it."""
        self._timer: Timer | None = None
        self.notes: dict[str, tuple[str, float]] = {}
        """Task id -> (outcome word, until when): the last action's outcome, shown in its row."""
        self.rows = NO_ROWS
        """The table's rows as the last poll or change of order left them."""
        self.events: Sequence[Event] | None = None
        """The latest events, read while the events pane is open."""
        self.main: DashboardScreen | WallScreen = (
            WallScreen(store_label, refresh)
            if wall
            else DashboardScreen(store_label, refresh, self.read_only, self.sort_mode)
        )

    def get_driver_class(self) -> type[Driver]:
        return quiet_driver(super().get_driver_class())

    def get_default_screen(self) -> Screen[None]:
        return self.main

    # Polling --------------------------------------------------------------------------------

    def data_now(self, now: float) -> float:
        """The moment the shown data speaks for: the snapshot's, by the store's clock.

        Ages and countdowns are read as of then, so a snapshot kept through a failed poll reads
        as it was (the header says how old it is) instead of ageing under a frozen health.
        """
        return self.snapshot.taken_at if self.snapshot.taken_at is not None else now

    def current_outcomes(self, now: float) -> dict[str, str]:
        """Each task's last action's outcome, while it is still shown (``NOTE_SECONDS``)."""
        self.notes = {k: v for k, v in self.notes.items() if v[1] > now}
        return {task_id: word for task_id, (word, _) in self.notes.items()}

    def ordered_views(self, snapshot: Snapshot) -> tuple[TaskView, ...]:
        return ordered(snapshot, self.sort_mode, self.filter_text, self.per_run, self.job_rows)

    def _new_rows(self, views: Sequence[TaskView], now: float) -> None:
        self.rows = Rows(views=views, now=self.data_now(now), outcomes=self.current_outcomes(now))

    def screen_state(self, now: float) -> ScreenState:
        """The app's snapshot, rows, events and choices, with ``now`` for the clock."""
        return ScreenState(
            snapshot=self.snapshot,
            now=now,
            rows=self.rows,
            events=self.events,
            sort_mode=self.sort_mode,
            filter_text=self.filter_text,
            paused_at=self.paused_at,
            marked=self.bulk.marked,
        )

    def _show_state(self, now: float) -> None:
        """Hand the app's state to every screen that shows it: the main screen, whichever it
        is, and a wall opened over the dashboard."""
        state = self.screen_state(now)
        if self.wall:
            state = replace(state, snapshot=narrowed(state.snapshot, self.view_flow.current))
        for screen in self.screen_stack:
            if isinstance(screen, ShowsState):
                screen.show_state(state)

    def _order_key(self) -> tuple[object, ...]:
        return (self.sort_mode, self.filter_text, self.per_run)

    @work(exclusive=True, group="refresh", exit_on_error=False)
    async def poll(self) -> None:
        """Read one snapshot, finish due kills, filter and sort; post the result to the UI.

        The first time, a glance comes first: a screenful of the tasks most likely stalled,
        shown while the whole poll of a big store is still being read and judged.
        """
        if self._glance_first:
            self._glance_first = False
            glance = await self.source.glance(max(self.size.height, GLANCE_ROWS))
            if glance is not None:
                await self._post_snapshot(glance)
        self._find_due = False  # this poll reads the filter as it is now
        snapshot = await self.source.poll()
        outcomes: list[ActionOutcome] = []
        if self.executor is not None and not self.read_only:
            outcomes = list(await self.executor.complete_pending_kills())
        await self._post_snapshot(snapshot, outcomes)

    async def _post_snapshot(
        self, snapshot: Snapshot, outcomes: Sequence[ActionOutcome] = ()
    ) -> None:
        """Filter and sort the snapshot's views, and post them to the UI with it."""
        key = self._order_key()
        # Filtering and sorting thousands of views is CPU work: off the UI's loop. In the
        # snapshot's order (always, on the wall) the views are the snapshot's own tuple.
        views = (
            snapshot.tasks
            if in_snapshot_order(self.sort_mode, self.filter_text, self.per_run)
            else await asyncio.to_thread(self.ordered_views, snapshot)
        )
        events = await self.source.events(limit=50) if self.events_open else None
        self.post_message(
            messages.SnapshotReady(
                snapshot, self.clock.now(), views, key, kill_outcomes=outcomes, events=events
            )
        )

    def on_screen_ready(self, message: messages.ScreenReady) -> None:
        self.view_flow.begin()
        if self.paused_at is None:
            self.poll()
        else:
            # A wall opened over a paused dashboard shows the paused data; it polls nothing.
            self._show_state(self.clock.now())

    def on_snapshot_ready(self, message: messages.SnapshotReady) -> None:
        # The first whole snapshot (a glance before it is not one).
        whole = message.snapshot.taken_at is not None and message.snapshot.glance_of is None
        first = whole and (self.snapshot.taken_at is None or self.snapshot.glance_of is not None)
        for outcome in message.kill_outcomes:
            self.report(outcome)
        self.snapshot = message.snapshot
        self.bulk.follow(message.snapshot)
        views = message.views
        if message.order_key != self._order_key():
            views = self.ordered_views(message.snapshot)
        self._new_rows(views, message.now)
        if message.events is not None:
            self.events = message.events
        self._show_state(message.now)
        for screen in self._details():
            self._show_detail(screen, screen.record, message.now)
        if first and self.on_first_snapshot is not None:
            self.on_first_snapshot()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group == "refresh" and event.state in (WorkerState.SUCCESS, WorkerState.ERROR):
            if event.state is WorkerState.ERROR:
                # Not a store hiccup (the monitor reports those itself): keep the data, say why.
                self.snapshot = replace(
                    self.snapshot,
                    error=f"refresh failed: {worker.error}",
                    failed_at=self.clock.now(),
                )
                self._show_state(self.clock.now())
            self._arm()
        elif worker.group == "action" and event.state is WorkerState.ERROR:
            self.notify(
                printable(f"action failed: {worker.error}"),
                severity="error",
                timeout=15,
                markup=False,
            )

    def _tick(self) -> None:
        if self.terminal_alive is not None and not self.terminal_alive():
            self.on_terminal_lost()
            return
        if self.paused_at is None:
            self.poll()
        else:
            # Paused: no poll, but keep watching for a lost terminal.
            self._arm()

    def _arm(self) -> None:
        """Schedule the next tick; one timer at a time, so polls never pile up."""
        if self._timer is not None:
            self._timer.stop()
        delay = FIND_DELAY if self._find_due else self.refresh_interval
        self._timer = self.set_timer(delay, self._tick)

    # What the dashboard asks for ----------------------------------------------------------

    def on_pause_toggled(self, message: messages.PauseToggled) -> None:
        if self.paused_at is None:
            self.paused_at = self.clock.now()
        else:
            self.paused_at = None
            self.poll()
        self._show_state(self.clock.now())

    def on_sort_cycled(self, message: messages.SortCycled) -> None:
        self.sort_mode = self.sort_mode.next()
        self._reorder()
        self.notify(f"sorted by {self.sort_mode}", timeout=2)

    def on_rows_grouped(self, message: messages.RowsGrouped) -> None:
        self.per_run = not self.per_run
        self._reorder()
        self.notify("one row per run" if self.per_run else "one row per job", timeout=2)

    def on_filter_changed(self, message: messages.FilterChanged) -> None:
        self.filter_text = message.text
        self._reorder()
        self._find_in_store()

    def _find_in_store(self) -> None:
        """Have the source read, from its next poll on, the tasks the filter holds that a large
        store only counts; on such a store, poll soon rather than a refresh later."""
        self.source.find(self.filter_text)
        if self.snapshot.counted is None or self.paused_at is not None:
            return
        self._find_due = True
        polling = any(w.group == "refresh" and not w.is_finished for w in self.workers)
        if not polling:  # else the poll under way arms the next when it ends
            self._arm()

    def _reorder(self) -> None:
        """Re-filter and re-sort now (after a filter or sort change; not on a poll)."""
        now = self.clock.now()
        self._new_rows(self.ordered_views(self.snapshot), now)
        self._show_state(now)

    def on_jobs_toggled(self, message: JobsToggled) -> None:
        self.view_flow.toggle_jobs()

    def on_view_asked(self, message: ViewAsked) -> None:
        self.view_flow.ask(message.number, message.name)

    def on_view_picker_asked(self, message: ViewPickerAsked) -> None:
        self.view_flow.pick()

    def on_events_toggled(self, message: messages.EventsToggled) -> None:
        self.events_open = message.open
        if self.events_open:
            self.load_events()

    @work(exclusive=True, group="events", exit_on_error=False)
    async def load_events(self) -> None:
        self.events = await self.source.events(limit=50)
        self._show_state(self.clock.now())

    # What a key asks for a task -------------------------------------------------------------

    def on_marks_asked(self, message: messages.MarksAsked) -> None:
        self.bulk.change(message.action, message.task_id)
        self.show_marks()

    def show_marks(self) -> None:
        self._show_state(self.clock.now())

    def on_task_asked(self, message: messages.TaskAsked) -> None:
        task_id = message.task_id
        if self.bulk.takes(message.action):
            self.bulk.request(message.action)
            return
        match message.action:
            case TaskAction.DETAIL:
                self.open_detail(task_id)
            case TaskAction.ACK:
                self.oncall_flow.request_ack(task_id)
            case TaskAction.UNACK:
                self.oncall_flow.request_unack(task_id)
            case TaskAction.SILENCE:
                self.oncall_flow.request_silence(task_id)
            case TaskAction.NOTE:
                self.oncall_flow.request_note(task_id)
            case TaskAction.RESUME:
                self.request_action(ActionKind.RESUME, task_id)
            case TaskAction.DISCARD:
                self.request_action(ActionKind.DISCARD, task_id)
            case TaskAction.KILL:
                self.request_action(ActionKind.KILL, task_id)

    # The detail screen ----------------------------------------------------------------------

    def open_detail(self, task_id: str) -> None:
        """Show the task as the snapshot has it, then read its record from the source."""
        now = self.data_now(self.clock.now())
        state = detail_state(self.snapshot, task_id, now)
        self.push_screen(DetailScreen(task_id, self.read_only, state, copy_lines=self.copy_lines))
        self.load_record(task_id)

    def _details(self, task_id: str | None = None) -> list[DetailScreen]:
        """The detail screens open (of ``task_id``), a detail under a dialog too: it shows
        what is true when the dialog closes."""
        return [
            screen
            for screen in self.screen_stack
            if isinstance(screen, DetailScreen) and task_id in (None, screen.task_id)
        ]

    def _show_detail(self, screen: DetailScreen, record: TaskRecord, now: float) -> None:
        state = detail_state(self.snapshot, screen.task_id, self.data_now(now), record)
        screen.show_detail(state)

    async def _last_output(self, task_id: str) -> LastOutput | None:
        view = self.snapshot.by_id().get(task_id)
        return None if view is None else await self.source.last_output(view.task)

    @work(exclusive=True, group="detail", exit_on_error=False)
    async def load_record(self, task_id: str) -> None:
        """Read the task's heartbeat history, events and last output (store reads, off the
        UI's thread) and show them in its detail screen."""
        history = await self.source.history(task_id)
        events = await self.source.events(task_id, limit=50)
        record = TaskRecord(
            history=tuple(history),
            events=tuple(events),
            last_output=await self._last_output(task_id),
        )
        for screen in self._details(task_id):
            self._show_detail(screen, record, self.clock.now())

    def on_output_asked(self, message: messages.OutputAsked) -> None:
        self.load_output(message.task_id)

    @work(exclusive=True, group="detail-output", exit_on_error=False)
    async def load_output(self, task_id: str) -> None:
        """Read the task's last output afresh for its detail screen's output pane."""
        last = await self._last_output(task_id)
        for screen in self._details(task_id):
            self._show_detail(screen, replace(screen.record, last_output=last), self.clock.now())

    # Actions --------------------------------------------------------------------------------

    def request_action(self, kind: ActionKind, task_id: str) -> None:
        """Capture the task and its lease token now, then ask; act only on ``y``."""
        if self.read_only or self.executor is None:
            self.notify(f"{kind} refused: zombietop is read-only", severity="error")
            return
        view = self.snapshot.by_id().get(task_id)
        if view is None:
            self.notify(
                printable(f"{task_id} is no longer on screen"), severity="warning", markup=False
            )
            return
        request = ActionRequest(
            kind=kind, task_id=task_id, expected_token=view.token, actor=self.actor
        )

        def decided(confirmed: bool | None) -> None:
            if confirmed:
                self.run_request(request)
            else:
                self.notify(printable(f"{kind} {task_id}: cancelled"), timeout=3, markup=False)

        self.push_screen(ConfirmScreen(request, view, self.data_now(self.clock.now())), decided)

    @work(group="action", exit_on_error=False)
    async def run_request(self, request: ActionRequest) -> None:
        assert self.executor is not None
        outcome = await self.executor.run(request)
        self.report(outcome)
        self.show_effect()

    def show_effect(self) -> None:
        """After an action: poll now so its effect shows, unless the screen is paused."""
        if self.paused_at is None:
            self.poll()

    def report(self, outcome: ActionOutcome) -> None:
        """Every outcome is a notification, and a note in the task's row for a minute."""
        request = outcome.request
        self.notify(
            printable(f"{request.kind} {request.task_id}: {outcome.message}"),
            title=str(outcome.outcome),
            markup=False,
            severity="information" if outcome.ok else "error",
            timeout=10,
        )
        self.remember_outcome(outcome)

    def remember_outcome(self, outcome: ActionOutcome) -> str:
        """Show the outcome in its task's row for a minute; return its word (``term sent``)."""
        word = str(outcome.outcome).replace("_", " ")
        self.notes[outcome.request.task_id] = (word, self.clock.now() + NOTE_SECONDS)
        return word

    # Command palette ------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """zombietop's own commands: every key of the screen, the wall and back, the theme and
        quit; none of Textual's others (its key panel, maximize, screenshots)."""
        if self.wall:
            return
        yield SystemCommand("Theme", "Change the colours", self.action_change_theme)
        if isinstance(screen, WallScreen):
            yield SystemCommand("Table", "Back to the task table \\[w]", screen.action_back)
        else:
            target = screen if isinstance(screen, TaskKeys) else self.main
            for key in keys_for(self.read_only):
                if key.action == "quit" or not hasattr(target, f"action_{key.action}"):
                    continue
                yield SystemCommand(
                    key.label,
                    # The palette reads help as markup: "[/]" would close a tag that is not open.
                    f"{key.description} \\[{display_key(key.key)}]",
                    partial(target.run_action, key.action),
                )
        yield SystemCommand("Quit", "Quit zombietop \\[q, ctrl+c]", self.action_quit)

    def palette_titles(self, screen: Screen[Any] | None = None) -> Sequence[str]:
        """The titles the command palette offers on ``screen`` (for tests)."""
        return [command.title for command in self.get_system_commands(screen or self.main)]
