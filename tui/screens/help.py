"""The help screen: the keys this mode has (no action keys when read-only)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from zombietop.tui.cells import ACKED, OBSERVED_MARK, SILENCED, mark_text
from zombietop.tui.healths import GLYPHS, health_label
from zombietop.tui.keys import DETAIL_KEYS, display_key, keys_for


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss_help", "Close")
    ]

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > Vertical {
        width: 80;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    HelpScreen #legend {
        margin-top: 1;
    }
    """

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        keys = Table.grid(padding=(0, 2))
        for key in keys_for(self.read_only):
            keys.add_row(display_key(key.key), key.description)
        keys.add_row("ctrl+p", "Command palette: every key above, by name")
        for key in DETAIL_KEYS:
            keys.add_row(display_key(key.key), f"In a task's detail view: {key.description}")
        keys.add_row(f"{OBSERVED_MARK}41s", "Observed heartbeat: activity seen, not progress")
        legend = Table.grid(padding=(0, 2))
        for index in range(0, len(GLYPHS), 4):
            legend.add_row(*(health_label(h) for h in list(GLYPHS)[index : index + 4]))
        legend.add_row(
            mark_text([ACKED]),
            mark_text([SILENCED]),
            Text("▲ missed", style="bold red"),
            Text("◷ late  ⟳ running_long", style="yellow"),
        )
        with Vertical() as box:
            box.border_title = "zombietop keys" + (
                " (read-only: no actions)" if self.read_only else ""
            )
            yield Static(keys)
            yield Static(legend, id="legend")

    def action_dismiss_help(self) -> None:
        self.dismiss()
