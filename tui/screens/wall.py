"""The wall screen: read-only, big counts per health, the worst offenders and their context."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.screen import Screen

from zombietop.model import Health
from zombietop.monitor import Snapshot
from zombietop.tui.healths import ACTIVE_HEALTHS, health_count
from zombietop.tui.messages import ScreenReady
from zombietop.tui.widgets.banner import Banner
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.health_card import HealthCard
from zombietop.tui.widgets.offenders import Offenders
from zombietop.tui.widgets.text_lines import TextLines


class WallScreen(Screen[None]):
    """No cursor, no actions, no palette: something to read across a room."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "app.quit", "Quit", show=False)]

    DEFAULT_CSS = """
    WallScreen #cards {
        grid-size: 5;
        grid-gutter: 1 1;
        grid-rows: 4;
        height: auto;
        padding: 1 1 0 1;
    }
    WallScreen #finished {
        height: 4;
        padding: 0 1;
    }
    """

    def __init__(self, store_label: str, refresh_s: float) -> None:
        super().__init__()
        self.store_label = store_label
        self.refresh_s = refresh_s

    def compose(self) -> ComposeResult:
        yield StatusHeader()
        yield Banner()
        with Grid(id="cards"):
            for health in ACTIVE_HEALTHS:
                yield HealthCard(health)
            yield TextLines(id="finished")
        yield Offenders()

    def on_mount(self) -> None:
        header = self.query_one(StatusHeader)
        header.store = self.store_label
        header.refresh_s = self.refresh_s
        header.read_only = True
        header.show_counts = False
        self.post_message(ScreenReady())

    def show_state(self, snapshot: Snapshot, now: float) -> None:
        """Show the app's snapshot and clock (the wall has no pause, no sort and no filter)."""
        self.query_one(StatusHeader).show(snapshot, now, sort_label="", filter_label="")
        banner = self.query_one(Banner)
        banner.now = now
        banner.snapshot = snapshot
        for card in self.query(HealthCard):
            card.count = snapshot.counts.get(card.health, 0)
        # Each count as a span of its line, as in the header (a line's own style would take
        # the terminal's green and red, not the theme's).
        self.query_one("#finished", TextLines).show_lines(
            [
                Text.assemble(health_count(health, snapshot.counts.get(health, 0)))
                for health in (Health.SUCCEEDED, Health.FAILED, Health.DISCARDED)
            ]
        )
        self.query_one(Offenders).show(snapshot)
