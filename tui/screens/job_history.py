"""A job's history, opened from the jobs view: its summary, then its latest runs, newest first,
with when each started, how long it took, how it ended, and a failed run's last output line.

The same lines as ``zombietop history JOB`` (``zombietop.tui.cli.history``).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from zombietop.errors import ZombietopError
from zombietop.job_summary import JobSummary
from zombietop.model import TaskState
from zombietop.output import LastOutput
from zombietop.tui.history_text import DEFAULT_LAST, history_lines
from zombietop.tui.source import SnapshotSource
from zombietop.tui.untrusted import escaped_markup, printable_text


class JobHistoryScreen(ModalScreen[None]):
    """The job's latest runs; Esc, q or Enter closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "close", "Close"),
        Binding("j", "scroll('down')", "Down", show=False),
        Binding("k", "scroll('up')", "Up", show=False),
    ]

    DEFAULT_CSS = """
    JobHistoryScreen {
        align: center middle;
    }
    JobHistoryScreen > VerticalScroll {
        width: 100%;
        max-width: 130;
        height: auto;
        max-height: 100%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    JobHistoryScreen Static {
        width: auto;
    }
    """

    def __init__(self, summary: JobSummary, now: float) -> None:
        super().__init__()
        self.summary = summary
        self.now = now

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = escaped_markup(f"history of {self.summary.name}")
            box.border_subtitle = "Esc: close"
            yield Static(printable_text("reading its runs..."), id="runs")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
        self.read_runs()

    @work(exclusive=True, group="job-history", exit_on_error=False)
    async def read_runs(self) -> None:
        source: SnapshotSource = getattr(self.app, "source")  # noqa: B009 (the app's facade)
        try:
            runs = await source.job_runs(self.summary.name, DEFAULT_LAST)
            outputs: dict[str, LastOutput | None] = {
                run.task_id: await source.last_output(run)
                for run in runs
                if run.state is TaskState.FAILED
            }
        except ZombietopError as exc:
            self.query_one("#runs", Static).update(printable_text(f"cannot read its runs: {exc}"))
            return
        lines = history_lines(self.summary, runs, outputs, self.now)
        if not runs:
            lines.append("(no run of it is in the store: an engine's job keeps its runs there)")
        # Each line printable (a task id or an output line may hold escapes), and no markup.
        text = Text("\n", no_wrap=True).join(printable_text(line) for line in lines)
        self.query_one("#runs", Static).update(text)

    def action_close(self) -> None:
        self.dismiss()

    def action_scroll(self, direction: str) -> None:
        box = self.query_one(VerticalScroll)
        if direction == "down":
            box.scroll_down(animate=False)
        else:
            box.scroll_up(animate=False)
