"""The header: store, refresh interval, clock, counts per health, READ-ONLY badge."""

from __future__ import annotations

import time

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from core.model import Health
from core.monitor import Snapshot
from tui.healths import ACTIVE_HEALTHS, health_count


def clock_text(now: float) -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime(now))


class StatusHeader(Widget):
    """Two lines (more when narrow): where and when, then one word and number per health."""

    DEFAULT_CSS = """
    StatusHeader {
        height: auto;
        background: $panel;
        padding: 0 1;
    }
    """

    snapshot: reactive[Snapshot] = reactive(Snapshot(taken_at=None), layout=True)
    now: reactive[float] = reactive(0.0)
    store: reactive[str] = reactive("")
    refresh_s: reactive[float] = reactive(2.0)
    read_only: reactive[bool] = reactive(False)
    sort_label: reactive[str] = reactive("")
    show_counts: reactive[bool] = reactive(True, layout=True)

    def render(self) -> Text:
        line = Text()
        line.append("zombietop", style="bold")
        line.append(f"  {self.store}", style="")
        line.append(f"  every {self.refresh_s:g}s", style="dim")
        line.append(f"  {clock_text(self.now)}")
        if self.sort_label and self.sort_label != "urgency":
            line.append(f"  sort: {self.sort_label}", style="dim")
        if self.read_only:
            line.append("  ")
            line.append(" READ-ONLY ", style="bold reverse")
        if not self.show_counts:
            return line
        line.append("\n")
        counts = self.snapshot.counts
        shown = list(ACTIVE_HEALTHS)
        finished = [h for h in (Health.SUCCEEDED, Health.FAILED, Health.DISCARDED) if counts.get(h, 0)]
        # Wrap between counts, never inside one ("interrupted" alone on a line reads wrong).
        width = max(self.size.width - 2, 20)
        used = 0
        for health in shown + finished:
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
