"""A widget drawn as lines of text, repainting only the lines, or the cells, that changed.

Textual renders a widget's whole content again after any refresh of it. The header and the
wall's offenders change every second by a few characters (a clock, an age): here each line is
rendered once and kept while it reads the same, and only the cells that changed are refreshed.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual, visualize
from textual.widget import Widget

from zombietop.tui.cells import same_cell


def changed_cells(before: Text, after: Text) -> tuple[int, int] | None:
    """The cells ``[start, stop)`` where two renderings of a line differ, when only characters
    in place changed (same styles, same width: the ticking clock); None for anything else."""
    changed = _changed_in_place(before, after)
    if changed is None:
        return None
    first, last = changed
    new = after.plain
    return cell_len(new[:first]), cell_len(new[:last])


def _changed_in_place(before: Text, after: Text) -> tuple[int, int] | None:
    """The characters ``[first, last)`` where ``after`` differs from ``before``, when only
    characters in place changed: the same styles (the line's own and its spans), as many
    characters, as many cells. None for anything else, and when nothing changed."""
    old, new = before.plain, after.plain
    if (
        before.style != after.style
        or before.spans != after.spans
        or len(old) != len(new)
        or cell_len(old) != cell_len(new)
    ):
        return None
    first = next((i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b), None)
    if first is None:
        return None
    last = len(new) - next(
        i for i, (a, b) in enumerate(zip(reversed(old), reversed(new), strict=True)) if a != b
    )
    return first, last


class TextLines(Widget):
    """Lines of text, one on each row, shown with ``show_lines``. A line is drawn again only
    when its text changes. A line wider than the widget wraps, moving every line below it."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[Text] = []
        self._wraps = False
        """A line is wider than the widget: the lines are drawn as one wrapped text."""
        self._strips: dict[int, tuple[Text, int, Style, Strip]] = {}
        """Each line's rendering, with the line, width and style it was rendered from."""

    def show_lines(self, lines: list[Text]) -> None:
        """Show ``lines`` and repaint what changed: the changed cells of a line whose
        characters changed in place, a line that changed otherwise, all of them when the
        number of lines changed (laid out again when the height follows the content)."""
        old_lines, width = self._lines, self.size.width
        if len(lines) == len(old_lines) and all(map(same_cell, lines, old_lines)):
            return
        wrapped, self._wraps = self._wraps, any(line.cell_len > width for line in lines)
        self._lines = lines
        if len(old_lines) != len(lines):
            height = self.styles.height
            self.refresh(layout=height is None or height.is_auto)
            return
        if wrapped or self._wraps:
            self.refresh()  # a line wraps: rows below it move
            return
        for y, (before, after) in enumerate(zip(old_lines, lines, strict=True)):
            if same_cell(before, after):
                continue
            changed = changed_cells(before, after)
            if changed is None:
                self.refresh(Region(0, y, width, 1))
            else:
                start, stop = changed  # refresh regions are relative to the content
                self.refresh(Region(start, y, stop - start, 1))

    def render(self) -> Text:
        return Text("\n").join(self._lines)

    def render_line(self, y: int) -> Strip:
        # Widget.render_line renders every line again after any refresh: render a line only
        # when it reads differently.
        if self._wraps or y >= len(self._lines):
            return super().render_line(y)
        line, width, style = self._lines[y], self.size.width, self.visual_style
        cached = self._strips.get(y)
        if cached is not None and cached[1:3] == (width, style) and same_cell(cached[0], line):
            return cached[3]
        strip = Visual.to_strips(self, visualize(self, line), width, 1, style)[0]
        self._strips[y] = (line, width, style, strip)
        return strip
