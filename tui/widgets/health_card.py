"""A large count for one health, for the wall screen: big digits over the glyph and the word."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Digits, Label

from zombietop.health import Health
from zombietop.tui.healths import GLYPHS


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
        yield Label(f"{GLYPHS[self.health]} {self.health}")

    def watch_count(self, count: int) -> None:
        self.query_one(Digits).update(str(count))
        self.set_class(count == 0, "-zero")
        self.set_class(count > 0 and self.health.pages, "-alarm")
        self.set_class(count > 0 and not self.health.pages and self.health.needs_attention, "-warn")
