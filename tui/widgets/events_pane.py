"""The events pane: the silences in force, then the latest transitions and actions, newest
first."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from zombietop.model import Event, Silence
from zombietop.oncall.acks import capped_words
from zombietop.printable import printable
from zombietop.tui.cells import MARKS, SILENCED
from zombietop.tui.untrusted import printable_text


def silence_line(silence: Silence) -> Text:
    """``⊘ silence 3 task export-* until 02:53:20 by ana: maintenance night``, and when this
    dashboard's max_silence ends it sooner than it was set to, that it does."""
    until = time.strftime("%H:%M:%S", time.gmtime(silence.until))
    line = Text()
    mark = MARKS[SILENCED]
    line.append(f"{mark.glyph} silence ", style=mark.style)
    line.append(f"{silence.silence_id} {silence.matcher} {printable(silence.pattern)} ", "bold")
    line.append(f"until {until} by {printable(silence.by)}: ", style="dim")
    line.append(printable(silence.reason))
    line.append(capped_words(silence), style="bold")
    return line


def event_line(event: Event) -> Text:
    stamp = time.strftime("%H:%M:%S", time.gmtime(event.at))
    line = Text(f"{stamp} ", style="dim")
    line.append_text(printable_text(f"{event.task_id or '-':<16} ", style="bold"))
    line.append_text(printable_text(f"{event.kind:<12} ", style="cyan"))
    line.append_text(printable_text(f"{event.actor}: ", style="dim"))
    line.append_text(printable_text(event.message))
    return line


class EventsPane(Widget):
    """A fixed-height list of events; assign ``events`` to re-render."""

    DEFAULT_CSS = """
    EventsPane {
        height: 8;
        border-top: solid $primary;
        padding: 0 1;
        display: none;
    }
    EventsPane.-open {
        display: block;
    }
    """

    events: reactive[tuple[Event, ...]] = reactive(())
    silences: reactive[tuple[Silence, ...]] = reactive(())
    """The silences in force, listed above the events (each one ends)."""

    def on_mount(self) -> None:
        self.border_title = "events, newest first"

    def set_events(self, events: Sequence[Event]) -> None:
        self.events = tuple(events)

    def render(self) -> Text:
        rows = [silence_line(silence) for silence in self.silences]
        rows += [event_line(event) for event in self.events]
        if not rows:
            return Text("no events yet", style="dim")
        lines = Text()
        for index, row in enumerate(rows[: max(self.size.height, 1)]):
            if index:
                lines.append("\n")
            lines.append_text(row)
        lines.no_wrap = True
        lines.overflow = "ellipsis"
        return lines
