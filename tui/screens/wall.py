"""The wall screen: read-only, big counts per health, the worst offenders and their context."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import Footer, Label

from zombietop.health import Health
from zombietop.tui.healths import ALL_CLEAR, all_clear, count_of, health_count
from zombietop.tui.messages import ScreenReady
from zombietop.tui.screen_state import ScreenState
from zombietop.tui.widgets.banner import Banner
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.health_card import HealthCard
from zombietop.tui.widgets.offenders import Offenders
from zombietop.tui.widgets.text_lines import TextLines


class WallScreen(Screen[None]):
    """No cursor, no actions, no palette: something to read across a room. Opened from the
    dashboard (``w``), it has a footer and goes back to the table on ``w`` or Escape."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("w,escape", "back", "Table"),
        Binding("q", "app.quit", "Quit", show=False),
    ]

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
    WallScreen #all-clear {
        display: none;
        width: 100%;
        height: 4;
        margin: 1 1 0 1;
        content-align: center middle;
        background: $success 30%;
        text-style: bold;
    }
    WallScreen.-all-clear #all-clear {
        display: block;
    }
    """

    def __init__(
        self, store_label: str, refresh_s: float, *, back: bool = False, read_only: bool = True
    ) -> None:
        super().__init__()
        self.store_label = store_label
        self.refresh_s = refresh_s
        self.back = back
        """Opened over the dashboard: it can go back to the table."""
        self.read_only = read_only
        """What the header says: the wall itself never acts, the dashboard under it may."""

    def compose(self) -> ComposeResult:
        yield StatusHeader()
        yield Banner()
        yield Label(ALL_CLEAR, id="all-clear")
        with Grid(id="cards"):
            for health in Health:
                if not _among_finished(health):
                    yield HealthCard(health)
            yield TextLines(id="finished")
        yield Offenders()
        if self.back:
            yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        header = self.query_one(StatusHeader)
        header.store = self.store_label
        header.refresh_s = self.refresh_s
        header.read_only = self.read_only
        header.show_counts = False
        self.post_message(ScreenReady())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.back if action == "back" else True

    def action_back(self) -> None:
        self.dismiss()

    def show_state(self, state: ScreenState) -> None:
        """Show the app's snapshot and clock (the wall has no table, pause, sort or filter)."""
        snapshot, now = state.snapshot, state.now
        self.query_one(StatusHeader).show(snapshot, now, sort_label="", filter_label="")
        banner = self.query_one(Banner)
        banner.now = now
        banner.snapshot = snapshot
        clear = all_clear(snapshot)
        # All clear, ten cards of zeros say less than two words: only what runs keeps a card.
        self.set_class(clear, "-all-clear")
        for card in self.query(HealthCard):
            card.count = count_of(snapshot, card.health)
            card.display = not (clear and card.health.needs_attention)
        # Each count as a span of its line, as in the header (a line's own style would take
        # the terminal's green and red, not the theme's).
        self.query_one("#finished", TextLines).show_lines(
            [
                Text.assemble(health_count(health, count_of(snapshot, health)))
                for health in Health
                if _among_finished(health)
            ]
        )
        self.query_one(Offenders).show(snapshot)


def _among_finished(health: Health) -> bool:
    """Counted in the list of finished tasks, not on a card: the finished, and the finished
    whose process lives on (orphaned: rare, and red when there is one)."""
    return health.finished or health.asks_to_kill
