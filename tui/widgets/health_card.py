"""A large count for one health, for the wall screen: big digits plus the glyph and the word."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Digits

from core.model import Health
from tui.healths import GLYPHS


class HealthCard(Widget):
    """``count`` in big digits, titled with the health's glyph and word."""

    DEFAULT_CSS = """
    HealthCard {
        height: 5;
        border: round $foreground 40%;
        border-title-align: center;
        align-horizontal: center;
    }
    HealthCard Digits {
        width: auto;
    }
    HealthCard.-alarm {
        border: heavy $error;
        border-title-style: bold;
        border-title-color: $error;
    }
    HealthCard.-zero {
        color: $foreground 40%;
    }
    """

    count: reactive[int] = reactive(0)

    def __init__(self, health: Health) -> None:
        super().__init__(id=f"card-{health}")
        self.health = health
        self.border_title = f"{GLYPHS[health]} {health}"

    def compose(self) -> ComposeResult:
        yield Digits("0")

    def watch_count(self, count: int) -> None:
        self.query_one(Digits).update(str(count))
        self.set_class(count > 0 and self.health.pages, "-alarm")
        self.set_class(count == 0, "-zero")
