"""The workers screen (``W``): what the tasks run on. zombietop's agents and the engines'
workers (Celery's and RQ's workers, BullMQ's worker connections, Airflow's schedulers and
triggerers), with host, pid, last beat and how many tasks each holds; a worker gone with tasks
still on it leads the list. Read-only; Escape goes back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from zombietop.durations import format_age
from zombietop.judge.workers import worker_list
from zombietop.sources import EngineWorker
from zombietop.tui.messages import ScreenReady
from zombietop.tui.screen_state import ScreenState
from zombietop.tui.untrusted import printable_text

GONE_HOLDING = ("✖ GONE", "bold red")
"""A worker gone with tasks on it: glyph and word, so it reads without colour too."""
GONE = ("○ gone", "dim")
LIVE = ("● live", "green")
NONE_KNOWN = (
    "No worker is known. zombietop's agents (`zombietop agent`, one per host) beat into the "
    "store; the Celery, RQ and BullMQ sources list their engines' workers at each poll, and "
    "the Airflow source its schedulers and triggerers."
)


def state_words(worker: EngineWorker) -> tuple[str, str]:
    """The state cell: a glyph and a word, and its style."""
    if worker.gone:
        return GONE_HOLDING if worker.holds else GONE
    return LIVE


def summary(workers: Sequence[EngineWorker]) -> Text:
    """``9 workers: 2 GONE holding 7 tasks, 6 live, 1 gone``."""
    holding = [w for w in workers if w.gone and w.holds]
    live = sum(1 for w in workers if not w.gone)
    idle_gone = len(workers) - len(holding) - live
    text = Text(f"{len(workers)} worker{'' if len(workers) == 1 else 's'}: ")
    if holding:
        tasks = sum(w.holds for w in holding)
        text.append(
            f"{len(holding)} GONE holding {tasks} task{'' if tasks == 1 else 's'}, ",
            style=GONE_HOLDING[1],
        )
    text.append(f"{live} live, {idle_gone} gone")
    return text


def workers_table(workers: Sequence[EngineWorker], now: float) -> Table:
    """One row per worker; a gone one says why under its name."""
    table = Table(box=None, padding=(0, 1), expand=True, header_style="bold")
    table.add_column("STATE", no_wrap=True)
    table.add_column("KIND", no_wrap=True)
    table.add_column("WORKER", ratio=3, overflow="fold")
    table.add_column("HOST", ratio=2, overflow="fold")
    table.add_column("PID", justify="right", no_wrap=True)
    table.add_column("LAST BEAT", justify="right", no_wrap=True)
    table.add_column("TASKS", justify="right", no_wrap=True)
    for worker in workers:
        word, style = state_words(worker)
        name = printable_text(worker.name)
        if worker.why:
            name.append("\n")
            name.append_text(printable_text(worker.why, style="dim"))
        beat = "-" if worker.last_beat is None else f"{format_age(now - worker.last_beat)} ago"
        table.add_row(
            Text(word, style=style),
            printable_text(worker.kind),
            name,
            printable_text(worker.host or "-"),
            "-" if worker.pid is None else str(worker.pid),
            beat,
            Text(str(worker.holds), style=style if worker.gone and worker.holds else ""),
        )
    return table


class WorkersScreen(Screen[None]):
    """Every agent and engine worker of the latest snapshot, again at each poll."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,W", "back", "Back"),
    ]

    DEFAULT_CSS = """
    WorkersScreen #workers-summary {
        padding: 0 1;
        background: $panel;
        text-style: bold;
    }
    WorkersScreen #workers-table, WorkersScreen #workers-notes {
        padding: 0 1;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.listed: tuple[EngineWorker, ...] = ()
        """The list as last shown, in its order."""

    def compose(self) -> ComposeResult:
        yield Static(id="workers-summary")
        with VerticalScroll():
            yield Static(id="workers-table")
            yield Static(id="workers-notes")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "workers"
        # The app hands this screen its state now, and after each poll.
        self.post_message(ScreenReady())

    def show_state(self, state: ScreenState) -> None:
        snapshot = state.snapshot
        now = snapshot.taken_at if snapshot.taken_at is not None else state.now
        self.listed = worker_list(snapshot, now)
        self.query_one("#workers-summary", Static).update(summary(self.listed))
        self.query_one("#workers-table", Static).update(
            workers_table(self.listed, now) if self.listed else Text(NONE_KNOWN, style="dim")
        )
        # A source that could not be read has no workers here: say so, not nothing.
        notes = Text()
        for _, error in sorted(snapshot.source_errors.items()):
            notes.append_text(printable_text(f"\n{error} (its workers are not listed)"))
        # A source read without its workers (Airflow's job table unreadable) says so too.
        for _, note in sorted(snapshot.source_notes.items()):
            notes.append_text(printable_text(f"\n{note}"))
        self.query_one("#workers-notes", Static).update(notes)

    def action_back(self) -> None:
        self.dismiss()
