"""A Textual app on zombietop's quiet driver that shows the last key it got (run in tmux by
tests/tui/test_driver.py): ``python -m tests.tui.quiet_keys``."""

from __future__ import annotations

from textual import events
from textual.app import App, ComposeResult
from textual.driver import Driver
from textual.widgets import Static

from zombietop.tui.textual_compat import quiet_driver


class KeysApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("ready", id="last")

    def get_driver_class(self) -> type[Driver]:
        from textual.drivers.linux_driver import LinuxDriver

        return quiet_driver(LinuxDriver)

    def on_key(self, event: events.Key) -> None:
        self.query_one("#last", Static).update(f"key: {event.key}")
        if event.key == "q":
            self.exit()


if __name__ == "__main__":
    KeysApp().run()
