"""Messages the refresh worker posts to the app."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from textual.message import Message

from core.actions import ActionOutcome
from core.model import Event
from core.monitor import Snapshot
from tui.widgets.task_table import Row


@dataclass
class SnapshotReady(Message):
    """A poll finished: the snapshot, the table rows computed from it, and kills it completed."""

    snapshot: Snapshot
    now: float
    rows: Sequence[Row] | None
    """Rows for the dashboard table, or None when computed for other columns than shown now."""
    columns_key: tuple[str, ...]
    kill_outcomes: Sequence[ActionOutcome] = field(default_factory=list)
    events: Sequence[Event] | None = None
    """The latest events, when the events pane is open."""
