"""The header: store, refresh interval, clock, counts per health, READ-ONLY badge."""

from __future__ import annotations

import time
from collections.abc import Mapping

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.geometry import Region
from textual.reactive import reactive
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual, visualize
from textual.widget import Widget

from core.model import Health
from core.monitor import Snapshot
from tui.cells import same_cell
from tui.healths import ACTIVE_HEALTHS, health_count


def clock_text(now: float) -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime(now))


def shorten_middle(text: str, room: int) -> str:
    """``text`` in at most ``room`` cells, the middle given up first: ``/var/lib/…/store.db``."""
    if cell_len(text) <= room:
        return text
    if room <= 1:
        return "…"[: max(room, 0)]
    head = (room - 1) // 3  # the end of a path (the file) says more than its start
    tail = room - 1 - head
    return f"{text[:head]}…{text[len(text) - tail :]}" if tail else f"{text[:head]}…"


def changed_cells(before: Text, after: Text) -> tuple[int, int] | None:
    """The cells ``[start, stop)`` where two renderings of a line differ, when only characters
    in place changed (same styles, same width: the ticking clock); None for anything else."""
    old, new = before.plain, after.plain
    if before.spans != after.spans or len(old) != len(new) or cell_len(old) != cell_len(new):
        return None
    first = next((i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b), None)
    if first is None:
        return None
    last = len(new) - next(
        i for i, (a, b) in enumerate(zip(reversed(old), reversed(new), strict=True)) if a != b
    )
    return cell_len(new[:first]), cell_len(new[:last])


def retyped(strip: Strip, line: Text, drawn: Text) -> Strip | None:
    """The strip ``drawn`` was rendered to, reading ``line`` instead, for lines that differ
    only in characters changed in place (``changed_cells``): a clock's digits ticking. Those
    characters are retyped in their segments instead of laying the line out again. None
    where a changed character is not one cell wide (the line is then rendered afresh).
    """
    new, old = line.plain, drawn.plain
    first = next(i for i, (a, b) in enumerate(zip(new, old, strict=True)) if a != b)
    last = len(new) - next(
        i for i, (a, b) in enumerate(zip(reversed(new), reversed(old), strict=True)) if a != b
    )
    if not new[first:last].isascii() or not old[first:last].isascii():
        return None
    start = cell_len(new[:first])
    stop = start + last - first
    segments: list[Segment] = []
    x = 0
    for segment in strip:
        text = segment.text
        end = x + segment.cell_length
        if x < stop and end > start:
            if segment.cell_length != len(text):
                return None  # a wide character shares the segment: cells are not characters
            a, b = max(start - x, 0), min(stop - x, len(text))
            typed = new[first + x + a - start : first + x + b - start]
            segment = Segment(text[:a] + typed + text[b:], segment.style)
        segments.append(segment)
        x = end
    return Strip(segments, strip.cell_length)


class StatusHeader(Widget):
    """Two lines (more when narrow): where and when, then one word and number per health."""

    DEFAULT_CSS = """
    StatusHeader {
        height: auto;
        background: $panel;
        padding: 0 1;
    }
    """

    # Assigned every poll; the watcher repaints only what changed, and re-lays out the
    # screen only when the header's height changes (a layout pass costs a full redraw).
    snapshot: reactive[Snapshot] = reactive(Snapshot(taken_at=None), repaint=False)
    now: reactive[float] = reactive(0.0, repaint=False)
    store: reactive[str] = reactive("", repaint=False)
    refresh_s: reactive[float] = reactive(2.0, repaint=False)
    read_only: reactive[bool] = reactive(False, repaint=False)
    sort_label: reactive[str] = reactive("", repaint=False)
    filter_label: reactive[str] = reactive("", repaint=False)
    show_counts: reactive[bool] = reactive(True, repaint=False)

    def __init__(self) -> None:
        super().__init__()
        self._lines: list[Text] = []
        self._counts: tuple[tuple[object, ...], list[Text]] = ((), [])
        """The count lines, with the width and counts they were laid out for."""
        self._strips: dict[int, tuple[Text, int, Style, Strip]] = {}
        """Each line's rendering, with the line, width and style it was rendered from."""

    def _watch_any(self) -> None:
        lines, old_lines = self._build(), self._lines
        if len(lines) == len(old_lines) and all(map(same_cell, lines, old_lines)):
            return
        self._lines = lines
        if len(old_lines) != len(lines):
            self.refresh(layout=True)
            return
        room = self.content_size.width
        if any(line.cell_len > room for line in [*old_lines, *lines]):
            self.refresh()  # a line wraps: rows below it move
            return
        # Most polls change only the clock: repaint the cells that changed, not the header.
        width = self.size.width
        for y, (before, after) in enumerate(zip(old_lines, lines, strict=True)):
            if same_cell(before, after):
                continue
            changed = changed_cells(before, after)
            if changed is None:
                self.refresh(Region(0, y, width, 1))
            else:
                start, stop = changed  # refresh regions are relative to the content
                self.refresh(Region(start, y, stop - start, 1))

    def show(self, snapshot: Snapshot, now: float, *, sort_label: str, filter_label: str) -> None:
        """Take one poll's state and repaint what changed (one look, not one per field)."""
        self.set_reactive(StatusHeader.snapshot, snapshot)
        self.set_reactive(StatusHeader.now, now)
        self.set_reactive(StatusHeader.sort_label, sort_label)
        self.set_reactive(StatusHeader.filter_label, filter_label)
        self._watch_any()

    watch_snapshot = watch_now = watch_store = watch_refresh_s = _watch_any
    watch_read_only = watch_sort_label = watch_filter_label = watch_show_counts = _watch_any

    def on_resize(self) -> None:
        self._lines = []
        self._watch_any()

    def render(self) -> Text:
        return Text("\n").join(self._lines)

    def render_line(self, y: int) -> Strip:
        # Widget.render_line renders every line again after any refresh, and the clock's
        # tick changes one line: render a line only when it reads differently, and a clock
        # that ticked by retyping its digits in the line drawn before.
        if y >= len(self._lines):
            return super().render_line(y)
        line, width, style = self._lines[y], self.size.width, self.visual_style
        cached = self._strips.get(y)
        strip: Strip | None = None
        if cached is not None and cached[1:3] == (width, style):
            drawn, _, _, strip = cached
            if same_cell(drawn, line):
                return strip
            in_place = changed_cells(drawn, line) is not None
            strip = retyped(strip, line, drawn) if in_place else None
        if strip is None:
            strip = Visual.to_strips(self, visualize(self, line), width, 1, style)[0]
        self._strips[y] = (line, width, style, strip)
        return strip

    def _build(self) -> list[Text]:
        """The header's lines: where and when, then the counts (laid out again only when a
        count or the width changed)."""
        lines = [self._first_line()]
        if self.show_counts:
            counts = self.snapshot.counts
            key = (self.size.width, *(counts.get(health, 0) for health in Health))
            if self._counts[0] != key:
                self._counts = (key, self._count_lines(counts))
            lines += self._counts[1]
        return lines

    def _first_line(self) -> Text:
        rest = Text()
        rest.append(f"  every {self.refresh_s:g}s", style="dim")
        rest.append(f"  {clock_text(self.now)}")
        if self.sort_label and self.sort_label != "urgency":
            rest.append(f"  sort: {self.sort_label}", style="bold")
        if self.filter_label:
            rest.append(f"  filter: {self.filter_label}", style="bold")
        if self.read_only:
            rest.append("  ")
            rest.append(" READ-ONLY ", style="bold reverse")
        line = Text()
        line.append("zombietop", style="bold")
        # The first line never wraps (a wrapped line moves every row below it, and the clock
        # could no longer tick in place): a long store path gives way in its middle.
        room = self.size.width - 2 - line.cell_len - rest.cell_len
        line.append(f"  {shorten_middle(self.store, room - 2)}")
        line.append_text(rest)
        return line

    def _count_lines(self, counts: Mapping[Health, int]) -> list[Text]:
        finished = [
            h for h in (Health.SUCCEEDED, Health.FAILED, Health.DISCARDED) if counts.get(h, 0)
        ]
        # Wrap between counts, never inside one ("interrupted" alone on a line reads wrong).
        width = max(self.size.width - 2, 20)
        lines = [Text()]
        for health in [*ACTIVE_HEALTHS, *finished]:
            item = health_count(health, counts.get(health, 0))
            line = lines[-1]
            if line and line.cell_len + 2 + item.cell_len > width:
                line = Text()
                lines.append(line)
            elif line:
                line.append("  ")
            line.append_text(item)
        return lines
