"""A large count for one health, for the wall screen: big digits over the glyph and the word."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Digits, Label

from zombietop.health import Health
from zombietop.tui.healths import GLYPHS

DIGIT_WIDTH = 3
"""Cells one of Textual's big digits takes."""


class HealthCard(Widget):
    """``count`` in big digits with the health's glyph and word under it."""

    DEFAULT_CSS = """
    HealthCard {
        height: 4;
        align-horizontal: center;
        background: $panel;
    }
    HealthCard Digits {
        width: 100%;
        text-align: center;
    }
    HealthCard Label {
        width: 100%;
        content-align: center middle;
    }
    HealthCard #number {
        display: none;
        height: 3;
        text-style: bold;
    }
    HealthCard.-zero {
        color: $foreground 35%;
        background: $background;
    }
    HealthCard.-warn {
        background: $warning 30%;
        text-style: bold;
    }
    HealthCard.-alarm {
        background: $error;
        color: $text;
        text-style: bold;
    }
    """

    count: reactive[int] = reactive(0)

    def __init__(self, health: Health) -> None:
        super().__init__(id=f"card-{health}")
        self.health = health

    def compose(self) -> ComposeResult:
        yield Digits("0")
        yield Label(id="number")
        yield Label(f"{GLYPHS[self.health]} {self.health}")

    def on_resize(self) -> None:
        self._show_number()

    def _show_number(self) -> None:
        """Big digits, or the number in plain text when they do not fit the card: six digits
        (a fleet's healthy tasks) cut to five would read as another number."""
        text = str(self.count)
        width = self.size.width
        fits = width == 0 or len(text) * DIGIT_WIDTH <= width
        digits, number = self.query_one(Digits), self.query_one("#number", Label)
        digits.display, number.display = fits, not fits
        if fits:
            digits.update(text)
        else:
            number.update(f"{self.count:,}")

    def watch_count(self, count: int) -> None:
        self._show_number()
        self.set_class(count == 0, "-zero")
        self.set_class(count > 0 and self.health.pages, "-alarm")
        self.set_class(count > 0 and not self.health.pages and self.health.needs_attention, "-warn")
