"""The wall screen: read-only, big counts per health, the worst offenders and their context."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import Static

from core.model import Health
from core.monitor import Snapshot
from tui.healths import ACTIVE_HEALTHS, ATTENTION_HEALTHS, GLYPHS, STYLES, health_count
from tui.widgets.banner import Banner
from tui.widgets.header import StatusHeader
from tui.widgets.health_card import HealthCard

if TYPE_CHECKING:
    from tui.app import ZombietopApp


def offenders_text(snapshot: Snapshot, width: int, height: int) -> Text:
    """The most urgent tasks, as a page would say them, as many as fit in ``height`` lines."""
    worst = [view for view in snapshot.tasks if view.health in ATTENTION_HEALTHS]
    if not worst:
        return Text(
            "✓ nothing stuck: no dead, reclaimable, stalled, spinning, quarantined or "
            "interrupted task",
            style="green",
        )
    text = Text()
    used = 0
    now = snapshot.taken_at or 0.0
    for index, view in enumerate(worst):
        context = view.verdict_at(now).context
        need = -(-(len(context) + 2) // max(width, 1))
        if used + need > height - 1 and index:
            text.append(f"\n… and {len(worst) - index} more", style="dim")
            break
        if index:
            text.append("\n")
        text.append(f"{GLYPHS[view.health]} ", style=STYLES[view.health])
        text.append(context)
        used += need
    return text


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
    WallScreen #offenders {
        height: 1fr;
        padding: 0 1;
        border-top: solid $primary;
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
        offenders = Static(id="offenders")
        offenders.border_title = "worst offenders"
        yield offenders

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
        self.query_one("#finished", Static).update(finished)
        offenders = self.query_one("#offenders", Static)
        size = offenders.content_size
        offenders.update(offenders_text(snapshot, size.width, max(size.height, 3)))
