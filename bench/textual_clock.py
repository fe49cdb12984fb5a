"""The floor under the dashboard's CPU at rest: a bare Textual app that redraws one line a second.

    python bench/textual_clock.py

A clock in the first line and a footer, nothing else: what Textual itself costs to stay alive and
repaint a few cells every second in a terminal. bench/dashboard_rest.py runs it beside the
dashboard and htop, in the same tmux and rounds. Not a test; quit with q.
"""

from __future__ import annotations

import time
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.widgets import Footer, Static


class ClockApp(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [("q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Static(id="clock")
        yield Footer()

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(1.0, self.tick)

    def tick(self) -> None:
        clock = time.strftime("%H:%M:%S UTC", time.gmtime())
        self.query_one("#clock", Static).update(f"textual clock  every 1s  {clock}")


if __name__ == "__main__":
    ClockApp().run()
