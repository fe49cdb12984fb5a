"""Messages up to the app: from the refresh worker, and what the screens' keys ask for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from textual.message import Message

from zombietop.actions import ActionOutcome
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.model import Event


@dataclass
class SnapshotReady(Message):
    """A poll finished: the snapshot, the tasks to show in order, and the kills it completed."""

    snapshot: Snapshot
    now: float
    views: Sequence[TaskView]
    """The snapshot's tasks filtered and sorted as ``order_key`` says."""
    order_key: tuple[object, ...]
    kill_outcomes: Sequence[ActionOutcome] = field(default_factory=list)
    events: Sequence[Event] | None = None
    """The latest events, when the events pane is open."""


class ScreenReady(Message):
    """The main screen's widgets exist: poll, so the first snapshot has somewhere to go."""


class TaskAction(StrEnum):
    """What a key can ask the app to do with one task (the names of the keys' actions)."""

    DETAIL = "detail"
    """Open the task's detail screen."""
    ACK = "ack"
    UNACK = "unack"
    SILENCE = "silence"
    NOTE = "note"
    RESUME = "resume"
    """Resume, discard and kill go to the executor, after a confirmation."""
    DISCARD = "discard"
    KILL = "kill"


@dataclass
class TaskAsked(Message):
    """A key asked the app to do something with one task."""

    action: TaskAction
    task_id: str


@dataclass
class OutputAsked(Message):
    """The detail screen opened its output pane: read the task's last output afresh."""

    task_id: str


class SortCycled(Message):
    pass


class RowsGrouped(Message):
    """``g``: one row per run, or one row per job."""


@dataclass
class FilterChanged(Message):
    text: str


class PauseToggled(Message):
    pass


@dataclass
class EventsToggled(Message):
    open: bool


class MarkAction(StrEnum):
    """What a key asks of the marks (``space``, ``*``, ``esc``)."""

    TOGGLE = "toggle"
    """Mark the task, or unmark it."""
    SHOWN = "shown"
    """Mark every task the filter shows."""
    CLEAR = "clear"


@dataclass
class MarksAsked(Message):
    """A key asked to change the marks; ``task_id`` is the task of ``TOGGLE``."""

    action: MarkAction
    task_id: str | None = None
