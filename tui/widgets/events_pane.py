"""The events pane: the latest transitions and actions, newest first."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from zombietop.model import Event
from zombietop.tui.untrusted import shown


def event_line(event: Event) -> Text:
    stamp = time.strftime("%H:%M:%S", time.gmtime(event.at))
    line = Text(f"{stamp} ", style="dim")
    line.append_text(shown(f"{event.task_id or '-':<16} ", style="bold"))
    line.append_text(shown(f"{event.kind:<12} ", style="cyan"))
    line.append_text(shown(f"{event.actor}: ", style="dim"))
    line.append_text(shown(event.message))
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

    def on_mount(self) -> None:
        self.border_title = "events, newest first"

    def set_events(self, events: Sequence[Event]) -> None:
        self.events = tuple(events)

    def render(self) -> Text:
        if not self.events:
            return Text("no events yet", style="dim")
        lines = Text()
        for index, event in enumerate(self.events[: max(self.size.height, 1)]):
            if index:
                lines.append("\n")
            lines.append_text(event_line(event))
        lines.no_wrap = True
        lines.overflow = "ellipsis"
        return lines
