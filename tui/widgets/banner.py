"""The one-line banner under the header: stale data after a failed poll, a source that cannot
be read, tasks left unread, or paused."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from zombietop.durations import format_age
from zombietop.judge.monitor import Snapshot
from zombietop.judge.unlisted import unread_line
from zombietop.printable import printable


class Banner(Widget):
    """Says why the data on screen may be old; hidden while everything is fresh."""

    DEFAULT_CSS = """
    Banner {
        height: auto;
        display: none;
        padding: 0 1;
        background: $error;
        color: $text;
        text-style: bold;
    }
    Banner.-shown {
        display: block;
    }
    Banner.-paused {
        background: $warning;
        color: $background;
    }
    """

    snapshot: reactive[Snapshot] = reactive(Snapshot(taken_at=None), repaint=False)
    now: reactive[float] = reactive(0.0, repaint=False)
    paused_at: reactive[float | None] = reactive(None, repaint=False)

    def __init__(self) -> None:
        super().__init__()
        self._lines: list[str] = []

    def _build(self) -> list[str]:
        lines: list[str] = []
        snapshot = self.snapshot
        if snapshot.error is not None:
            age = snapshot.age(self.now)
            old = "no data yet" if age is None else f"data {format_age(age)} old"
            lines.append(f"⚠ {old}: {snapshot.error}")
        # A source that cannot be read hides only its own tasks: say which, and why.
        lines.extend(f"⚠ {error}" for _, error in sorted(snapshot.source_errors.items()))
        lines.extend(f"⚠ {note}" for _, note in sorted(snapshot.source_notes.items()))
        # Past [monitor] read_at_most the table cannot hold every task that may need a human.
        unread = None if snapshot.counted is None else unread_line(snapshot.counted)
        if unread is not None:
            lines.append(f"⚠ {unread}")
        if self.paused_at is not None:
            lines.append("‖ PAUSED: the table is frozen; press p to resume refreshing")
        return lines

    def _watch_any(self) -> None:
        lines = self._build()
        if lines == self._lines:
            return
        self._lines = lines
        self.set_class(bool(lines), "-shown")
        self.set_class(self.snapshot.error is None and self.paused_at is not None, "-paused")
        self.refresh(layout=True)

    watch_snapshot = watch_now = watch_paused_at = _watch_any

    def render(self) -> Text:
        return Text("\n".join(printable(line) for line in self._lines))
