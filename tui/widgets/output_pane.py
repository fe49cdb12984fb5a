"""The output pane of the detail view: a task's last lines, searched with ``/`` (``n`` and
``N`` go to the next and the previous match), ``G`` and ``g`` for the end and the start, and
``c`` to copy the last lines to the terminal's clipboard through OSC 52, which works over SSH.

The lines are untrusted: shown and copied escaped (``zombietop.tui.output_search``). A match
is shown in reverse video, and its line marked in a gutter (``▶`` the current match, ``•``
another), so it reads without colour too.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Region
from textual.notifications import SeverityLevel
from textual.widgets import Input, Static

from zombietop.config.settings import COPY_LINES
from zombietop.durations import format_age
from zombietop.output import LastOutput
from zombietop.tui.keys import OUTPUT_KEYS, bindings
from zombietop.tui.output_search import (
    COPY_LIMIT,
    Match,
    copy_of,
    copy_refusal,
    find_matches,
    nearest_match,
    shown_lines,
    step,
)
from zombietop.tui.untrusted import escaped_markup

CURRENT, OTHER, NONE = "▶ ", "• ", "  "
"""The gutter while a search is on: the current match's line, another match's, the rest."""
NO_OUTPUT = "no output kept (only `zombietop run` keeps it, on its own host)"


class OutputPane(Vertical):
    """The last lines of a task's output, with search, jumps and copy."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings(OUTPUT_KEYS),
        Binding("escape", "cancel_search", "Cancel", show=False),
    ]

    DEFAULT_CSS = """
    OutputPane {
        height: 12;
        border: round $primary;
    }
    OutputPane #output-scroll {
        overflow-x: auto;
    }
    OutputPane #output {
        width: auto;
    }
    OutputPane #output-search {
        display: none;
        border: none;
        height: 1;
        padding: 0 1;
    }
    OutputPane.searching #output-search {
        display: block;
    }
    """

    def __init__(self, *, copy_lines: int = COPY_LINES, id: str | None = None) -> None:
        super().__init__(id=id)
        self.copy_lines = copy_lines
        """How many of the last lines ``c`` copies (``[monitor] copy_lines``)."""
        self.raw: tuple[str, ...] = ()
        """The lines as the job wrote them (untrusted)."""
        self.lines: tuple[str, ...] = ()
        """The same lines, escaped, as shown."""
        self.search_text = ""
        self.matches: tuple[Match, ...] = ()
        self.current: int | None = None
        """The index in ``matches`` of the match shown."""
        self._before_search = ""
        """The query before ``/``, back again when the search is cancelled."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="output-scroll"):
            yield Static(id="output")
        yield Input(placeholder="search the output (Enter: keep, Esc: cancel)", id="output-search")

    @property
    def scroller(self) -> VerticalScroll:
        return self.query_one("#output-scroll", VerticalScroll)

    def show_output(self, last: LastOutput | None, now: float) -> None:
        """Show ``last`` (None: no output kept), its matches found again."""
        if last is None:
            self.border_title = "last output"
            self.raw = self.lines = ()
            self.query_one("#output", Static).update(Text(NO_OUTPUT, style="dim"))
            self._find(self.search_text, keep_line=None)
            return
        self.border_title = (
            f"last {len(last.lines)} lines of attempt {last.attempt}, "
            f"written {format_age(last.age(now))} ago"
        )
        if last.lines != self.raw:
            line = None if self.current is None else self.matches[self.current].line
            self.raw, self.lines = last.lines, shown_lines(last.lines)
            self._find(self.search_text, keep_line=line)

    # Drawing ------------------------------------------------------------------------------

    def _find(self, query: str, *, keep_line: int | None) -> None:
        self.search_text = query
        self.matches = find_matches(self.lines, query)
        self.current = nearest_match(self.matches, keep_line or 0)
        self._draw()

    def _draw(self) -> None:
        if self.lines:
            self.query_one("#output", Static).update(self.rendered())
        self.border_subtitle = escaped_markup(self.count_words()) if self.search_text else ""

    def count_words(self) -> str:
        """``match 3 of 12: error``, or ``no match: error``."""
        if not self.matches or self.current is None:
            return f"no match: {self.search_text}"
        return f"match {self.current + 1} of {len(self.matches)}: {self.search_text}"

    def rendered(self) -> Text:
        """The lines, each match in reverse video, and a gutter while a search is on."""
        current = None if self.current is None else self.matches[self.current]
        on_line: dict[int, list[Match]] = {}
        for match in self.matches:
            on_line.setdefault(match.line, []).append(match)
        text = Text(no_wrap=True, end="")
        for number, line in enumerate(self.lines):
            if number:
                text.append("\n")
            if self.search_text:
                here = current is not None and current.line == number
                gutter = CURRENT if here else OTHER if number in on_line else NONE
                text.append(gutter, style="bold")
            shown = Text(line)
            for match in on_line.get(number, ()):
                style = "reverse bold underline" if match == current else "reverse"
                shown.stylize(style, match.start, match.end)
            text.append_text(shown)
        return text

    def _show_current(self) -> None:
        """Scroll the current match into the middle of the pane, once it is laid out."""
        if self.current is None:
            return
        match = self.matches[self.current]
        gutter = len(CURRENT)
        region = Region(gutter + match.start, match.line, match.end - match.start, 1)

        def scroll() -> None:
            self.scroller.scroll_to_region(region, animate=False, center=True, immediate=True)

        self.call_after_refresh(scroll)

    # Keys ---------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_match", "previous_match"):
            # Without a search, n is the screen's (a note).
            return bool(self.search_text)
        if action == "cancel_search":
            return self.has_class("searching")  # else Escape goes back, as on the screen
        return True

    def action_search(self) -> None:
        """Open the search input, holding the current query."""
        self._before_search = self.search_text
        box = self.query_one("#output-search", Input)
        box.value = self.search_text
        self.add_class("searching")
        # At once, not after the next refresh: what is typed next (a paste, a fast typist)
        # goes into the box, never to the screen's keys (r would ask to resume the task).
        self.screen.set_focus(box)

    @on(Input.Changed, "#output-search")
    def _typed(self, event: Input.Changed) -> None:
        # Found as it is typed, as less and vim do.
        self._find(event.value, keep_line=self._top_line())
        self._show_current()

    @on(Input.Submitted, "#output-search")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value != self.search_text:
            self._find(event.value, keep_line=self._top_line())
        self._close_search()

    def action_cancel_search(self) -> None:
        self._find(self._before_search, keep_line=self._top_line())
        self._close_search()

    def _close_search(self) -> None:
        self.remove_class("searching")
        self.scroller.focus()
        self._show_current()
        self.screen.refresh_bindings()

    def _top_line(self) -> int:
        return round(self.scroller.scroll_y)

    def action_next_match(self) -> None:
        self._step(forward=True)

    def action_previous_match(self) -> None:
        self._step(forward=False)

    def _step(self, *, forward: bool) -> None:
        self.current = step(self.current, len(self.matches), forward)
        if self.current is None:
            self.notify(
                escaped_markup(f"no match: {self.search_text}"), severity="warning", timeout=3
            )
        self._draw()
        self._show_current()

    def action_end(self) -> None:
        self.scroller.scroll_end(animate=False, immediate=True)

    def action_start(self) -> None:
        self.scroller.scroll_home(animate=False, immediate=True)

    def action_copy(self) -> None:
        """Copy the last ``copy_lines`` lines through OSC 52, and say what reached it."""
        if not self.raw:
            self.notify("no output to copy", severity="warning", timeout=4)
            return
        copied = copy_of(self.raw, self.copy_lines)
        self.app.copy_to_clipboard(copied.text)
        words, title, severity = copy_words(copied.lines, copied.asked, copy_refusal())
        self.notify(words, title=title, severity=severity, timeout=8, markup=False)


def copy_words(lines: int, asked: int, refusal: str | None) -> tuple[str, str, SeverityLevel]:
    """The notification after a copy: its text, its title and its severity."""
    plural = "line" if lines == 1 else "lines"
    by_hand = "select the lines with the mouse while holding Shift (Option on macOS)"
    if lines < asked:
        return (
            f"copied only the last {lines} of {asked} lines: more is over {COPY_LIMIT:,} "
            f"bytes, which terminals refuse through OSC 52. For all of them, {by_hand}",
            "copied in part",
            "warning",
        )
    if refusal is not None:
        return (
            f"sent the last {lines} {plural} through OSC 52, but {refusal}. To copy them, "
            f"{by_hand}",
            "copy may not arrive",
            "warning",
        )
    return (
        f"copied the last {lines} {plural} to your terminal's clipboard (OSC 52, over SSH too)",
        "copied",
        "information",
    )
