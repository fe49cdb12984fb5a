"""The wall screen: read-only, big counts per health, the worst offenders and their context."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.screen import Screen

from zombietop.model import Health
from zombietop.tui.healths import ACTIVE_HEALTHS, health_count
from zombietop.tui.widgets.banner import Banner
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.health_card import HealthCard
from zombietop.tui.widgets.offenders import Offenders
from zombietop.tui.widgets.text_lines import TextLines

if TYPE_CHECKING:
    from zombietop.tui.app import ZombietopApp


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

    @property
    def zapp(self) -> ZombietopApp:
        return cast("ZombietopApp", self.app)

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
        header.store = self.zapp.store_label
        header.refresh_s = self.zapp.refresh_interval
        header.read_only = True
        header.show_counts = False
        # Poll once the widgets exist, so the first snapshot has somewhere to go.
        self.zapp.poll()

    def show_state(self, now: float) -> None:
        snapshot = self.zapp.snapshot
        self.query_one(StatusHeader).show(snapshot, now, sort_label="", filter_label="")
        banner = self.query_one(Banner)
        banner.now = now
        banner.snapshot = snapshot
        banner.paused_at = self.zapp.paused_at
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
