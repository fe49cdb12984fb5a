"""The header: store, refresh interval, clock, counts per health, READ-ONLY badge, and the
on-call line (missed schedules first, then late and long-running ones, silences and acks)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from rich.cells import cell_len
from rich.text import Text
from textual.reactive import reactive

from zombietop.health import Health, ScheduleHealth
from zombietop.judge.monitor import Snapshot
from zombietop.printable import printable
from zombietop.tui.cells import ACKED, MARKS, SILENCED
from zombietop.tui.healths import ALL_CLEAR, all_clear, count_of, health_count
from zombietop.tui.untrusted import printable_text
from zombietop.tui.widgets.text_lines import TextLines


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


class StatusHeader(TextLines):
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
    marked: reactive[int] = reactive(0, repaint=False)
    """How many tasks are marked (``space``, ``*``)."""
    view_label: reactive[str] = reactive("", repaint=False)
    """The saved view shown (``[views.NAME]``), or the jobs view's name for itself."""

    def __init__(self) -> None:
        super().__init__()
        self._counts: tuple[tuple[object, ...], list[Text]] = ((), [])
        """The count lines, with the width and counts they were laid out for."""
        self._clear: tuple[Snapshot | None, bool] = (None, False)
        """Whether the snapshot shown is all clear, and that snapshot."""

    def _watch_any(self) -> None:
        self.show_lines(self._build())

    def show(
        self,
        snapshot: Snapshot,
        now: float,
        *,
        sort_label: str,
        filter_label: str,
        marked: int = 0,
    ) -> None:
        """Take one poll's state and repaint what changed (one look, not one per field)."""
        self.set_reactive(StatusHeader.snapshot, snapshot)
        self.set_reactive(StatusHeader.now, now)
        self.set_reactive(StatusHeader.sort_label, sort_label)
        self.set_reactive(StatusHeader.filter_label, filter_label)
        self.set_reactive(StatusHeader.marked, marked)
        self._watch_any()

    watch_snapshot = watch_now = watch_store = watch_refresh_s = _watch_any
    watch_read_only = watch_sort_label = watch_filter_label = watch_show_counts = _watch_any
    watch_marked = _watch_any
    watch_view_label = _watch_any

    def on_resize(self) -> None:
        self._lines = []
        self._watch_any()

    def _build(self) -> list[Text]:
        """The header's lines: where and when, then the counts (laid out again only when a
        count or the width changed)."""
        lines = [self._first_line(), *oncall_lines(self.snapshot, self.size.width - 2)]
        if self.snapshot.taken_at is None and self.snapshot.error is None:
            # Nothing read yet: no count, not even a zero, can be said.
            lines.append(Text("reading the store...", style="dim"))
        elif self.snapshot.glance_of is not None:
            # The counts are not known yet: say what the rows are instead.
            lines.append(glance_line(self.snapshot))
        elif self.show_counts:
            snapshot = self.snapshot
            counts = {health: count_of(snapshot, health) for health in Health}
            if self._clear[0] is not snapshot:
                # Once a snapshot, not once a clock tick: it looks at every task.
                self._clear = (snapshot, all_clear(snapshot))
            clear = self._clear[1]
            key = (self.size.width, clear, *counts.values())
            if self._counts[0] != key:
                self._counts = (key, self._count_lines(counts, clear))
            lines += self._counts[1]
        return lines

    def _first_line(self) -> Text:
        rest = Text()
        rest.append(f"  every {self.refresh_s:g}s", style="dim")
        rest.append(f"  {clock_text(self.now)}")
        if self.view_label:
            rest.append("  view: ", style="bold")
            rest.append_text(printable_text(self.view_label, style="bold"))
        if self.sort_label and self.sort_label != "urgency":
            rest.append(f"  sort: {self.sort_label}", style="bold")
        if self.filter_label:
            rest.append(f"  filter: {self.filter_label}", style="bold")
        if self.marked:
            rest.append("  ")
            rest.append(f" {self.marked} marked ", style="bold reverse")
        if self.read_only:
            rest.append("  ")
            rest.append(" READ-ONLY ", style="bold reverse")
        line = Text()
        line.append("zombietop", style="bold")
        # The first line never wraps (a wrapped line moves every row below it, pushes a line of
        # counts out of the header, and the clock could no longer tick in place): a long store
        # path gives way in its middle, and what still does not fit (a long filter at 80
        # columns) is cut at the end.
        width = max(self.size.width - 2, 1)
        room = width - line.cell_len - rest.cell_len
        line.append_text(printable_text(f"  {shorten_middle(printable(self.store), room - 2)}"))
        line.append_text(rest)
        line.truncate(width, overflow="ellipsis")
        return line

    def _count_lines(self, counts: Mapping[Health, int], clear: bool) -> list[Text]:
        """A word and number per health (zeros dimmed) while something needs a human; when
        nothing does, "all clear" and the counts that are not zero."""
        if clear:
            shown_healths = [h for h in Health if counts[h]]
            items = [Text(ALL_CLEAR, style="bold green")]
        else:
            shown_healths = [h for h in Health if not h.finished or counts[h]]
            items = []
        items += [health_count(health, counts[health]) for health in shown_healths]
        # Wrap between counts, never inside one ("interrupted" alone on a line reads wrong).
        width = max(self.size.width - 2, 20)
        lines = [Text()]
        for item in items:
            line = lines[-1]
            if line and line.cell_len + 2 + item.cell_len > width:
                line = Text()
                lines.append(line)
            elif line:
                line.append("  ")
            line.append_text(item)
        return lines


SCHEDULE_MARKS: dict[ScheduleHealth, tuple[str, str]] = {
    ScheduleHealth.MISSED: ("▲", "bold reverse red"),
    ScheduleHealth.RUNNING_LONG: ("⟳", "bold yellow"),
    ScheduleHealth.LATE: ("◷", "yellow"),
}


def oncall_lines(snapshot: Snapshot, width: int) -> list[Text]:
    """One line per missed schedule (its page line), then one line of late and long-running
    schedules, silences in force and acks; nothing when all is quiet."""
    lines: list[Text] = []
    summary = Text()
    for view in snapshot.schedules:
        mark = SCHEDULE_MARKS.get(view.health)
        if mark is None:
            continue
        glyph, style = mark
        if view.health is ScheduleHealth.MISSED:
            line = Text.assemble((f"{glyph} MISSED ", style), printable(view.line))
            line.truncate(max(width, 1), overflow="ellipsis")
            lines.append(line)
        else:
            if summary:
                summary.append("  ")
            summary.append(f"{glyph} {view.health} {printable(view.name)}", style=style)
    oncall = snapshot.oncall
    if oncall.silences:
        if summary:
            summary.append("  ")
        count = len(oncall.silences)
        silenced = MARKS[SILENCED]
        summary.append(
            f"{silenced.glyph} {count} silence{'s' if count > 1 else ''}", style=silenced.style
        )
    if oncall.acks:
        if summary:
            summary.append("  ")
        acked = MARKS[ACKED]
        summary.append(f"{acked.glyph} {len(oncall.acks)} acked", style=acked.style)
    if summary:
        summary.truncate(max(width, 1), overflow="ellipsis")
        lines.append(summary)
    return lines


def glance_line(snapshot: Snapshot) -> Text:
    """What a first glance shows: the few tasks most likely stalled, while all are read."""
    return Text(
        f"first glance: the {len(snapshot.tasks)} of {snapshot.glance_of:,} active tasks "
        "silent longest; reading them all",
        style="bold",
    )
