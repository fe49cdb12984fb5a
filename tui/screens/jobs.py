"""The jobs view (``J``): one row per job, with its runs, success rate, median and p95, its
latest durations as a sparkline, how its latest run ended and when, and its next run.

Enter opens the job's history; ``a`` acks its open incident. The rows are built from the
app's snapshot and the store's latest ended runs (``zombietop.tui.job_rows``), read again only
when a job's summary changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from zombietop.config import Schedule, View
from zombietop.durations import format_age
from zombietop.errors import ZombietopError
from zombietop.judge.job_table import JOB_COLUMNS, JobRow, JobSort, matches, sorted_rows
from zombietop.judge.monitor import Snapshot
from zombietop.model import Task, TaskState
from zombietop.tui.cells import glance_age
from zombietop.tui.job_rows import TREND_RUNS, rate_words, rows_of
from zombietop.tui.keys import digit_bindings
from zombietop.tui.screen_state import ScreenState
from zombietop.tui.screens.help import HelpScreen
from zombietop.tui.screens.job_history import JobHistoryScreen
from zombietop.tui.source import SnapshotSource
from zombietop.tui.untrusted import escaped_markup, printable_text
from zombietop.tui.view_messages import JobsToggled, ViewAsked, ViewPickerAsked
from zombietop.tui.views import shown_keys
from zombietop.tui.widgets.banner import Banner
from zombietop.tui.widgets.header import StatusHeader

NO_JOB = (
    "No job here yet. A job is a name that runs again and again: `zombietop run --job NAME"
    " -- CMD` makes a new run of NAME each time, and an engine's source names its own (an"
    " Airflow DAG's task, a Celery task's name). A task started with `--task ID`, as the demo's"
    " are, is one run of no job: it shows in the task table (J goes back)."
)
"""What the jobs view says when it has no row, so that an empty table is not a puzzle."""

INCIDENT_MARK = "▲ "
"""Before the name of a job whose incident is open: a glyph, so it reads without colour."""

LABELS = {
    "job": "JOB",
    "runs": "RUNS",
    "success": "OK",
    "median": "MEDIAN",
    "p95": "P95",
    "trend": f"LAST {TREND_RUNS}",
    "last": "LAST RUN",
    "next": "NEXT",
}


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else format_age(seconds)


def job_cells(row: JobRow, now: float) -> dict[str, Text]:
    """Each column's cell of ``row``, by the column's key (ages as the task table reads them)."""
    summary = row.summary
    name = printable_text(row.name)
    if row.incident is not None:
        name = Text.assemble((INCIDENT_MARK, "bold red"), name)
    last = "-"
    if summary.last_outcome is not None and summary.last_finished_at is not None:
        last = f"{summary.last_outcome} {glance_age(now - summary.last_finished_at)} ago"
    failed = summary.last_outcome not in (None, TaskState.SUCCEEDED)
    upcoming = "-" if row.next_run_at is None else f"in {glance_age(row.next_run_at - now)}"
    return {
        "job": name,
        "runs": Text(str(summary.runs), justify="right"),
        "success": Text(rate_words(row), justify="right"),
        "median": Text(_age(summary.median_s), justify="right"),
        "p95": Text(_age(summary.p95_s), justify="right"),
        "trend": Text(row.trend),
        "last": Text(last, style="red" if failed else ""),
        "next": Text(upcoming),
    }


DROP_FIRST = ("next", "median", "runs", "p95", "success")
"""The columns a narrow terminal leaves out, in this order, until the rest fit."""


def fitting(keys: Sequence[str], cells: Sequence[dict[str, Text]], width: int) -> list[str]:
    """The columns of ``keys`` that fit in ``width`` cells, dropping ``DROP_FIRST`` in turn."""
    kept = list(keys)

    def need(key: str) -> int:
        widest = max((cell[key].cell_len for cell in cells), default=0)
        return max(len(LABELS[key]), widest) + 2  # the table's padding, one cell a side

    for key in DROP_FIRST:
        if sum(map(need, kept)) <= width:
            break
        if key in kept:
            kept.remove(key)
    return kept


class JobsScreen(Screen[None]):
    """One row per job; Enter: its history, ``a``: ack its open incident, ``J``/Esc: back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Before the table's own Enter, so that the footer shows it.
        Binding("enter", "history", "History", priority=True),
        Binding("a", "ack", "Ack"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("J,escape", "back", "Tasks"),
        Binding("v", "pick_view", "Views"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("j", "cursor('down')", "Down", show=False),
        Binding("k", "cursor('up')", "Up", show=False),
        *digit_bindings(),
    ]

    DEFAULT_CSS = """
    JobsScreen #jobs {
        height: 1fr;
    }
    JobsScreen #no-jobs {
        padding: 1 2;
        height: auto;
        display: none;
    }
    """

    def __init__(
        self,
        store_label: str,
        refresh_s: float,
        *,
        read_only: bool,
        schedules: Sequence[Schedule] = (),
        view: View | None = None,
    ) -> None:
        super().__init__()
        self.store_label = store_label
        self.refresh_s = refresh_s
        self.read_only = read_only
        self.schedules = tuple(schedules)
        self.view = view
        self.sort = JobSort(view.sort) if view is not None and view.sort else JobSort.URGENCY
        self.rows: tuple[JobRow, ...] = ()
        """Every job's row, in the order shown, the view's filter applied."""
        self._latest: Mapping[str, Sequence[Task]] = {}
        """By job, its latest ended runs, as last read."""
        self._read_to: float | None = None
        """The newest job summary when the runs were last read (None: not read yet); a
        summary changed after it means a run ended, and its job's runs are read again."""
        self._state: ScreenState | None = None
        self._drawn: tuple[object, ...] | None = None
        """The columns and the cells drawn last: a poll that changes none redraws nothing."""

    def compose(self) -> ComposeResult:
        yield StatusHeader()
        yield Banner()
        table: DataTable[Text] = DataTable(id="jobs", cursor_type="row", zebra_stripes=False)
        yield table
        yield Static(id="no-jobs", markup=False)
        yield Footer(compact=True, show_command_palette=False)

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#jobs", DataTable)

    @property
    def source(self) -> SnapshotSource:
        source: SnapshotSource = getattr(self.app, "source")  # noqa: B009 (the app's facade)
        return source

    def on_resize(self) -> None:
        self.show_rows()

    def on_mount(self) -> None:
        header = self.query_one(StatusHeader)
        header.store = self.store_label
        header.refresh_s = self.refresh_s
        header.read_only = self.read_only
        header.view_label = self.view.name if self.view is not None else "jobs"
        self.table.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (self.read_only and action == "ack")

    def show_state(self, state: ScreenState) -> None:
        """Show the app's snapshot: the header and banner now, the rows once the latest runs
        are read (again only when a job's summary changed)."""
        self._state = state
        snapshot = state.snapshot
        header = self.query_one(StatusHeader)
        text = self._filter()
        # As the task table's filter reads: quoted, so no character of it acts on the terminal.
        header.show(
            snapshot, state.now, sort_label=str(self.sort), filter_label=repr(text) if text else ""
        )
        banner = self.query_one(Banner)
        banner.now = state.now
        banner.snapshot = snapshot
        banner.paused_at = state.paused_at
        # The rows now, from the runs read so far; their trends follow the read.
        self.show_rows()
        newest = _newest_summary(snapshot)
        if self._read_to is None or (newest is not None and newest > self._read_to):
            self.read_latest(newest)

    def _filter(self) -> str:
        return self.view.filter if self.view is not None and self.view.filter else ""

    @work(exclusive=True, group="jobs", exit_on_error=False)
    async def read_latest(self, newest: float | None) -> None:
        """Read the latest ended runs from the store (off the UI's thread): every job's the
        first time, then only those of the jobs whose summary changed since (``newest``: the
        newest summary the snapshot holds)."""
        try:
            changed = await self.source.latest_ended_runs(TREND_RUNS, self._read_to)
        except ZombietopError as exc:
            # The banner says when the store cannot be read; keep the runs read before.
            self.notify(escaped_markup(f"jobs: {exc}"), severity="error", timeout=10)
        else:
            self._latest = {**self._latest, **changed}
            self._read_to = newest if newest is not None else 0.0
        self.show_rows()

    def show_rows(self) -> None:
        """Build the rows from the snapshot and the latest runs, and show them; the cursor
        stays on its job."""
        if self._state is None:
            return
        snapshot = self._state.snapshot
        selected = self.selected_job  # before the rows change under the cursor
        rows = rows_of(snapshot, self._latest, self.schedules)
        text = self._filter()
        if text:
            rows = tuple(row for row in rows if matches(row, text))
        self.rows = sorted_rows(rows, self.sort)
        now = snapshot.taken_at if snapshot.taken_at is not None else self._state.now
        chosen = shown_keys(self.view) or JOB_COLUMNS
        cells = [job_cells(row, now) for row in self.rows]
        keys = [key for key in JOB_COLUMNS if key in chosen]
        keys = fitting(keys, cells, self.size.width - 1)  # one cell for the scrollbar
        shown = [tuple(row_cells[key] for key in keys) for row_cells in cells]
        drawn = (tuple(keys), [tuple((c.plain, str(c.style)) for c in row) for row in shown])
        if drawn == self._drawn:
            return  # a poll that changed nothing here: the table stays as it is
        self._drawn = drawn
        self._say_when_empty(text)
        table = self.table
        table.clear(columns=True)
        for key in keys:
            table.add_column(LABELS[key], key=key)
        for row, row_cells in zip(self.rows, shown, strict=True):
            table.add_row(*row_cells, key=row.name)
        if selected is not None:
            index = next((i for i, row in enumerate(self.rows) if row.name == selected), 0)
            table.move_cursor(row=index, animate=False)

    def _say_when_empty(self, filter_text: str) -> None:
        """With no row, say why in place of the table: no job at all, or none the filter keeps."""
        empty = not self.rows
        note = self.query_one("#no-jobs", Static)
        note.display = empty
        if self.table.display == empty:
            self.table.display = not empty
            if not empty:
                self.table.focus()
        if empty:
            note.update(
                f"No job matches the view's filter {filter_text!r}." if filter_text else NO_JOB
            )

    @property
    def selected_job(self) -> str | None:
        table = self.table
        if not self.rows or table.row_count == 0:
            return None
        return self.rows[min(table.cursor_row, len(self.rows) - 1)].name

    def _selected_row(self) -> JobRow | None:
        name = self.selected_job
        return next((row for row in self.rows if row.name == name), None)

    # Keys ----------------------------------------------------------------------------------

    def action_history(self) -> None:
        row = self._selected_row()
        if row is None:
            self.notify("no job selected", severity="warning")
            return
        now = self._state.now if self._state is not None else 0.0
        self.app.push_screen(JobHistoryScreen(row.summary, now))

    def action_ack(self) -> None:
        """Ack the job's open incident, as ``zombietop ack JOB`` does."""
        row = self._selected_row()
        if row is None:
            self.notify("no job selected", severity="warning")
        elif row.incident is None:
            self.notify(
                f"{escaped_markup(row.name)} has no open incident to ack", severity="warning"
            )
        else:
            flow = getattr(self.app, "oncall_flow")  # noqa: B009 (the app's on-call keys)
            flow.request_ack(row.incident)

    def action_cycle_sort(self) -> None:
        members = list(JobSort)
        self.sort = members[(members.index(self.sort) + 1) % len(members)]
        self.notify(f"jobs sorted by {self.sort}", timeout=2)
        if self._state is not None:
            self.show_state(self._state)

    def action_cursor(self, direction: str) -> None:
        if direction == "down":
            self.table.action_cursor_down()
        else:
            self.table.action_cursor_up()

    def action_back(self) -> None:
        self.post_message(JobsToggled())

    def action_pick_view(self) -> None:
        self.post_message(ViewPickerAsked())

    def action_switch_view(self, number: int) -> None:
        self.post_message(ViewAsked(number=number))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.read_only))

    def action_quit(self) -> None:
        self.app.exit()


def _newest_summary(snapshot: Snapshot) -> float | None:
    """When the newest job summary changed (a run of that job ended then)."""
    return max((job.updated_at for job in snapshot.jobs.values()), default=None)
