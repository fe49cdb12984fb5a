"""The wall screen: read-only, big counts per health, the worst offenders and their context."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.widgets import Static

from core.model import Health
from tui.cells import same_cell
from tui.compositor import LeanScreen
from tui.healths import ACTIVE_HEALTHS, health_count
from tui.widgets.banner import Banner
from tui.widgets.header import StatusHeader
from tui.widgets.health_card import HealthCard
from tui.widgets.offenders import Offenders

if TYPE_CHECKING:
    from tui.app import ZombietopApp


class WallScreen(LeanScreen):
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
            yield Static(id="finished")
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
        finished = Text()
        for index, health in enumerate((Health.SUCCEEDED, Health.FAILED, Health.DISCARDED)):
            if index:
                finished.append("\n")
            finished.append_text(health_count(health, snapshot.counts.get(health, 0)))
        shown = self.query_one("#finished", Static)
        if not isinstance(shown.content, Text) or not same_cell(shown.content, finished):
            shown.update(finished, layout=False)  # its height is fixed: no layout pass
        self.query_one(Offenders).show(snapshot)
