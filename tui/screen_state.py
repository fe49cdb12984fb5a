"""What the app hands its screens: the data, the clock and the person's choices, as one value.

The app holds the snapshot and every choice (sort, filter, pause); its screens hold nothing
they could not be handed again. The dashboard and the wall take a ``ScreenState`` through
``show_state``, whichever of them is the main screen and whether the wall was opened over the
dashboard; the detail screen takes a ``DetailState``. Screens ask for changes by message
(``messages``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.model import Event, HistoryPoint
from zombietop.output import LastOutput, with_last_output
from zombietop.tui.task_order import SortMode


@dataclass(frozen=True, slots=True, kw_only=True)
class Rows:
    """The task table's rows as the last poll or change of order left them.

    A poll or a new sort or filter makes a new ``Rows``; a pause, a failed poll or new events
    hand the same one again, so a screen shows the rows again only when they are new.
    """

    views: Sequence[TaskView]
    """The snapshot's tasks that match the filter, in the chosen order."""
    now: float
    """The moment the rows' ages are read at: the moment the snapshot speaks for."""
    outcomes: Mapping[str, str]
    """Task id -> the outcome of the last action taken on it from this dashboard, while it
    is shown (``term sent``, ``resumed``)."""


NO_ROWS = Rows(views=(), now=0.0, outcomes={})


@dataclass(frozen=True, slots=True, kw_only=True)
class ScreenState:
    """What the dashboard and the wall show. Each shows the parts it has room for: the wall
    has no table, no events pane, no sort, no filter and no pause."""

    snapshot: Snapshot
    now: float
    """The app's clock: the header's time, and the age of the data in the banner."""
    rows: Rows = NO_ROWS
    events: Sequence[Event] | None = None
    """The latest events, for the events pane; None until the pane was first opened."""
    sort_mode: SortMode = SortMode.URGENCY
    filter_text: str = ""
    paused_at: float | None = None
    """When the person paused refreshing, or None when the data refreshes."""
    marked: frozenset[str] = frozenset()
    """The marked tasks' ids (``space``, ``*``): the action keys act on them all."""


@runtime_checkable
class ShowsState(Protocol):
    """A screen the app hands its ``ScreenState`` to at every change: the dashboard, the wall."""

    def show_state(self, state: ScreenState) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """What the source keeps of one task beyond the snapshot, read when its detail opens."""

    history: tuple[HistoryPoint, ...] = ()
    """Its heartbeats' progress over time, oldest first."""
    events: tuple[Event, ...] = ()
    """Its events, newest first."""
    last_output: LastOutput | None = None
    """The last lines it wrote, kept by ``zombietop run`` on this host; read again each time
    the output pane opens."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DetailState:
    """What the detail screen shows of its task."""

    snapshot: Snapshot
    view: TaskView | None
    """The task as the snapshot has it; None once it is no longer among the recent tasks."""
    now: float
    """The moment the snapshot speaks for: the task's ages are read as of then."""
    page_line: str
    """The task's line as a page says it (``page_line``); empty when the task is gone."""
    record: TaskRecord


def page_line(view: TaskView, last_output: LastOutput | None, now: float) -> str:
    """The task's one-line context as the watchdog pages it: a task that needs a human ends
    with its last output and how old that is."""
    line = view.verdict.context(now)
    if view.health.asks_a_human:
        line = with_last_output(line, last_output, now)
    return line


def detail_state(
    snapshot: Snapshot, task_id: str, now: float, record: TaskRecord | None = None
) -> DetailState:
    """The detail of ``task_id`` as ``snapshot`` has it, its ages read as of ``now``."""
    record = record or TaskRecord()
    view = snapshot.by_id().get(task_id)
    line = "" if view is None else page_line(view, record.last_output, now)
    return DetailState(snapshot=snapshot, view=view, now=now, page_line=line, record=record)
