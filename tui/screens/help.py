"""The help screen: the keys this mode has (no action keys when read-only), how to move and
close, and what every glyph means."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from zombietop.health import Flag
from zombietop.tui.cells import (
    ACKED,
    FLAG_MARKS,
    MARKS,
    OBSERVED_MARK,
    OUTCOME_GLYPH,
    SILENCED,
)
from zombietop.tui.healths import GLYPHS, health_label
from zombietop.tui.keys import (
    DETAIL_KEYS,
    MARK_KEYS,
    MOVE_KEYS,
    OUTPUT_KEYS,
    display_key,
    keys_for,
)

CLOSE_KEYS = "escape,q,question_mark"


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(CLOSE_KEYS, "dismiss_help", "Close"),
        Binding("j", "scroll('down')", "Down", show=False),
        Binding("k", "scroll('up')", "Up", show=False),
    ]

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > VerticalScroll {
        width: 84;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    HelpScreen VerticalScroll > Static {
        width: 1fr;
    }
    HelpScreen .legend {
        margin-top: 1;
    }
    """

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        keys = _two_columns()
        for key in keys_for(self.read_only):
            keys.add_row(display_key(key.key), key.description)
        keys.add_row("1-9", "Switch to saved view 1 to 9, in the order of the config")
        keys.add_row("ctrl+p", "Command palette: every key above, by name")
        for key in MOVE_KEYS:
            keys.add_row(display_key(key.key), key.description)
        for key in MARK_KEYS:
            if not (self.read_only and key.read_only_hides):
                keys.add_row(display_key(key.key), key.description)
        keys.add_row("click", "Select a row; a double click opens it (--no-mouse: none)")
        for key in DETAIL_KEYS:
            keys.add_row(display_key(key.key), f"In a task's detail view: {key.description}")
        for key in OUTPUT_KEYS:
            keys.add_row(display_key(key.key), f"In its output pane: {key.description}")
        keys.add_row(display_key(CLOSE_KEYS).replace(" ", ", "), "Close this help")
        healths = Table.grid(padding=(0, 2))
        for index in range(0, len(GLYPHS), 4):
            healths.add_row(*(health_label(h) for h in list(GLYPHS)[index : index + 4]))
        with VerticalScroll() as box:
            box.border_title = "zombietop keys" + (
                " (read-only: no actions)" if self.read_only else ""
            )
            box.border_subtitle = "Esc, q or ?: close"
            yield Static(keys)
            yield Static(healths, classes="legend")
            yield Static(marks_legend(), classes="legend")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_dismiss_help(self) -> None:
        self.dismiss()

    def action_scroll(self, direction: str) -> None:
        box = self.query_one(VerticalScroll)
        if direction == "down":
            box.scroll_down(animate=False)
        else:
            box.scroll_up(animate=False)


def _two_columns() -> Table:
    """A key or a mark, then what it means (wrapped in its own column)."""
    grid = Table.grid(padding=(0, 2), expand=True)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    return grid


def marks_legend() -> Table:
    """What the marks beside a task id, and the other glyphs, mean."""
    legend = _two_columns()
    acked, silenced = MARKS[ACKED], MARKS[SILENCED]
    flag = FLAG_MARKS[Flag.REQUEST_OVERRUN]
    rows: list[tuple[Text, str]] = [
        (Text(acked.glyph + acked.word, style=acked.style), "Someone acked it: no re-notify"),
        (
            Text(silenced.glyph + silenced.word, style=silenced.style),
            "A silence holds its pages; it is still shown",
        ),
        (
            Text(f"{flag.glyph}request {flag.glyph}stage {flag.glyph}task", style=flag.style),
            "Running past its request, stage or task budget (a ! after a time: past its limit)",
        ),
        (
            Text(f"{OUTCOME_GLYPH}escalated", style="bold"),
            "What the last action did, shown for a minute",
        ),
        (
            Text(f"{acked.glyph} {silenced.glyph} {flag.glyph} {OUTCOME_GLYPH}"),
            "The same marks beside a long id, where their words do not fit",
        ),
        (Text("blocked by X"), "Queued behind an upstream task that is in trouble"),
        (Text(f"{OBSERVED_MARK}41s"), "Observed heartbeat: activity seen, not progress"),
        (Text("▲ missed", style="bold red"), "A schedule passed its grace with no run"),
        (Text("▂▅█x"), "Jobs view (J): a bar per successful run, by duration; x: another end"),
        (Text("◷ late  ⟳ running_long", style="yellow"), "A schedule's run is late, or long"),
    ]
    for mark, meaning in rows:
        legend.add_row(mark, meaning)
    return legend
