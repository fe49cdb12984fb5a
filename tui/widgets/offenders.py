"""The wall's worst offenders: the most urgent tasks, each as a page would say it."""

from __future__ import annotations

from itertools import chain, takewhile

from rich.console import Console
from rich.text import Text

from zombietop.judge.monitor import Snapshot
from zombietop.printable import printable
from zombietop.tui.cells import mark_text, oncall_marks
from zombietop.tui.healths import ALL_CLEAR, GLYPHS, STYLES
from zombietop.tui.unlisted_text import unlisted_texts
from zombietop.tui.untrusted import printable_text
from zombietop.tui.widgets.text_lines import TextLines
from zombietop.watch.failed_runs import failure_line, open_failures


def offender_lines(snapshot: Snapshot, console: Console, width: int, height: int) -> list[Text]:
    """The most urgent tasks' one-line contexts wrapped to ``width``, as many as fit in
    ``height`` lines with what the poll did not list under them (``unlisted_texts``)."""
    width = max(width, 1)
    under: list[Text] = []
    for text in unlisted_texts(snapshot.counted):
        under.extend(text.wrap(console, width))
    room = max(height - len(under), 1)
    listed = _offenders(snapshot, console, width, room)
    if under and len(listed) > room:
        # The first offender and the schedules missed come whatever the room: the lines
        # under the list must still show, so the list gives way.
        listed = [*listed[: room - 1], Text("… and more", style="dim")]
    return [*listed, *under]


def _offenders(snapshot: Snapshot, console: Console, width: int, height: int) -> list[Text]:
    """The most urgent tasks, as many as fit in ``height`` lines; the last line then says how
    many more there are."""
    # A failed run whose incident is open pages too: it is listed after the stuck ones.
    failures = open_failures(snapshot)
    failed = {view.task_id for view in failures}
    offending = sum(n for health, n in snapshot.counts.items() if health.needs_attention)
    offending += len(failures)
    if not offending and not snapshot.missed:
        if snapshot.left_unread:
            return []  # not all clear: what was not read is said under the list
        return list(Text(ALL_CLEAR, style="green").wrap(console, width))
    lines: list[Text] = []
    for schedule in snapshot.schedules:
        if schedule.health.pages:
            said = Text.assemble(("▲ ", "bold red"), printable(schedule.line))
            lines.extend(said.wrap(console, width))
    now = snapshot.taken_at or 0.0
    # The snapshot is most urgent first, and these are the most urgent healths: its head.
    stuck = takewhile(lambda view: view.health.needs_attention, snapshot.tasks)
    for index, view in enumerate(chain(stuck, failures)):
        if view.task_id in failed:
            context = failure_line(view, None, now)
        else:
            context = view.verdict.context(now)
        said = Text.assemble(
            (f"{GLYPHS[view.health]} ", STYLES[view.health]),
            mark_text(oncall_marks(snapshot.oncall, view)),
            printable_text(context),
        )
        wrapped = said.wrap(console, width)
        if index and len(lines) + len(wrapped) > height - 1:
            lines.append(Text(f"… and {offending - index} more", style="dim"))
            break
        lines.extend(wrapped)
    return lines


class Offenders(TextLines):
    """The worst offenders; their ages tick every second, and only those cells are repainted."""

    DEFAULT_CSS = """
    Offenders {
        height: 1fr;
        padding: 0 1;
        border-top: solid $primary;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="offenders")
        self.border_title = "worst offenders"
        self._snapshot: Snapshot | None = None

    def show(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        size = self.size
        self.show_lines(offender_lines(snapshot, self.app.console, size.width, max(size.height, 3)))

    def on_resize(self) -> None:
        if self._snapshot is not None:
            self.show(self._snapshot)
