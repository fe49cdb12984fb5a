"""The header: store, refresh interval, clock, counts per health, READ-ONLY badge."""

from __future__ import annotations

import time

from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Region
from textual.reactive import reactive
from textual.strip import Strip
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
        self._text = Text()
        self._lines: list[Text] = []
        self._strips: dict[int, tuple[tuple[object, ...], Strip]] = {}
        """Each line's rendering, with what it was rendered from."""

    def _watch_any(self) -> None:
        text = self._build()
        if same_cell(text, self._text):
            return
        old_lines, new_lines = self._text.split("\n"), text.split("\n")
        self._text, self._lines = text, list(new_lines)
        if len(old_lines) != len(new_lines):
            self.refresh(layout=True)
            return
        if any(line.cell_len > self.content_size.width for line in [*old_lines, *new_lines]):
            self.refresh()  # a line wraps: rows below it move
            return
        # Most polls change only the clock: repaint the cells that changed, not the header.
        width = self.size.width
        for y, (before, after) in enumerate(zip(old_lines, new_lines, strict=True)):
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
        self._text = Text()
        self._watch_any()

    def render(self) -> Text:
        return self._text

    def render_line(self, y: int) -> Strip:
        # Widget.render_line renders every line again after any refresh, and the clock's
        # tick changes one line: render a line only when it reads differently.
        if y >= len(self._lines):
            return super().render_line(y)
        line, width, style = self._lines[y], self.size.width, self.visual_style
        key = (width, style, line.plain, tuple(line.spans), line.style)
        cached = self._strips.get(y)
        if cached is not None and cached[0] == key:
            return cached[1]
        strip = Visual.to_strips(self, visualize(self, line), width, 1, style)[0]
        self._strips[y] = (key, strip)
        return strip

    def _build(self) -> Text:
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
        if not self.show_counts:
            return line
        line.append("\n")
        counts = self.snapshot.counts
        finished = [
            h for h in (Health.SUCCEEDED, Health.FAILED, Health.DISCARDED) if counts.get(h, 0)
        ]
        # Wrap between counts, never inside one ("interrupted" alone on a line reads wrong).
        width = max(self.size.width - 2, 20)
        used = 0
        for health in [*ACTIVE_HEALTHS, *finished]:
            item = health_count(health, counts.get(health, 0))
            if used and used + 2 + item.cell_len > width:
                line.append("\n")
                used = 0
            elif used:
                line.append("  ")
                used += 2
            line.append_text(item)
            used += item.cell_len
        return line
