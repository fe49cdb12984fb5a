"""The picker of saved views (``v``): every ``[views.NAME]`` of the config with its number,
what it shows, and a first line that leaves any view for the whole table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from zombietop.config import View
from zombietop.tui.untrusted import printable_text

NO_VIEW = ""
"""What the picker returns for its first line: no view, the whole table."""


def describe(view: View) -> Text:
    """``failed-dags  jobs, filter 'dag', sort p95, 4 columns``."""
    parts = [view.rows]
    if view.filter:
        parts.append(f"filter {view.filter!r}")
    if view.sort:
        parts.append(f"sort {view.sort}")
    if view.columns:
        parts.append(f"{len(view.columns)} columns")
    return printable_text(", ".join(parts), style="dim")


class ViewPicker(ModalScreen[str | None]):
    """Pick a saved view: Enter shows it, Esc leaves the screen as it was."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,v", "cancel", "Cancel"),
        Binding("j", "move('down')", "Down", show=False),
        Binding("k", "move('up')", "Up", show=False),
    ]

    DEFAULT_CSS = """
    ViewPicker {
        align: center middle;
    }
    ViewPicker > Vertical {
        width: 78;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    ViewPicker OptionList, ViewPicker OptionList:focus {
        height: auto;
        max-height: 16;
        border: none;
    }
    ViewPicker #hint {
        color: $text-muted;
    }
    """

    def __init__(self, views: Sequence[View], current: str | None) -> None:
        super().__init__()
        self.views = tuple(views)
        self.current = current

    def compose(self) -> ComposeResult:
        options = [Option(Text("   everything: no saved view"), id="view:")]
        for number, view in enumerate(self.views, start=1):
            key = str(number) if number <= 9 else " "
            line = Text(f"{key}  ")
            line.append_text(printable_text(view.name, style="bold"))
            line.append("  ")
            line.append_text(describe(view))
            options.append(Option(line, id=f"view:{view.name}"))
        with Vertical() as box:
            box.border_title = "saved views"
            box.border_subtitle = "Enter: show  Esc: cancel"
            if not self.views:
                yield Static(
                    'No saved view yet: add [views.NAME] to the config (rows = "jobs" or '
                    '"runs", filter, sort, columns); see docs/howto/dashboard.md.',
                    id="hint",
                    markup=False,
                )
            yield OptionList(*options, id="views")

    def on_mount(self) -> None:
        picker = self.query_one(OptionList)
        names = [NO_VIEW, *(view.name for view in self.views)]
        picker.highlighted = names.index(self.current) if self.current in names else 0
        picker.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or "view:"
        self.dismiss(option_id.removeprefix("view:"))

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_move(self, direction: str) -> None:
        picker = self.query_one(OptionList)
        if direction == "down":
            picker.action_cursor_down()
        else:
            picker.action_cursor_up()
