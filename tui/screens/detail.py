"""The detail view of one task: everything needed to decide resume, discard or kill."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Sparkline, Static

from zombietop.config.settings import COPY_LINES
from zombietop.durations import format_age, format_duration
from zombietop.job_summary import JobSummary, run_began
from zombietop.judge.budgets import Budget
from zombietop.judge.monitor import TaskView
from zombietop.judge.verdict import format_progress
from zombietop.model import Event, EventKind, HeartbeatSource, IdleSource, Note, Task
from zombietop.oncall.acks import OnCall, capped_words
from zombietop.output import LastOutput
from zombietop.paging.runbooks import runbook_for
from zombietop.printable import printable
from zombietop.sources import Origin
from zombietop.trace_context import trace_of
from zombietop.tui.cells import ACKED, BAR_STYLE, FLAG_MARKS, MARKS, SILENCED, bar
from zombietop.tui.healths import health_label
from zombietop.tui.keys import DETAIL_KEYS, KEYS, TaskKeys, display_key
from zombietop.tui.messages import OutputAsked, TaskAction
from zombietop.tui.screen_state import DetailState, TaskRecord
from zombietop.tui.untrusted import escaped_markup, printable_text
from zombietop.tui.widgets.events_pane import event_line
from zombietop.tui.widgets.output_pane import OutputPane


def _stamp(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _grid() -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", justify="right", min_width=12)
    grid.add_column()
    return grid


def _budget_row(budget: Budget) -> Text:
    if budget.used_s is None:
        return Text(
            f"not running  limit {format_duration(budget.limit_s)}  (from {budget.source})",
            style="dim",
        )
    text = Text(bar(budget.fraction, 16))
    text.stylize(BAR_STYLE)
    text.append(f" {format_age(budget.used_s)} of {format_duration(budget.limit_s)}")
    if budget.over:
        text.append(" OVER", style="bold red")
    text.append(f"  (limit from {budget.source})", style="dim")
    return text


def _row(grid: Table, label: str, value: str | Text) -> None:
    """Add a row whose value is untrusted text: shown printable, never read as markup."""
    grid.add_row(label, printable_text(value) if isinstance(value, str) else value)


def oncall_rows(grid: Table, view: TaskView, oncall: OnCall, now: float) -> None:
    """The task's ack and the silence holding its pages, as glyph-and-word rows."""
    ack = oncall.ack_for(view.task_id)
    if ack is not None:
        grid.add_row(
            "ack",
            Text.assemble(
                (f"{MARKS[ACKED].glyph} ", MARKS[ACKED].style),
                printable(ack.words(now)),
                (f"  (until {_stamp(ack.until)})", "dim"),
            ),
        )
    silence = oncall.silence_for(view.task) if oncall.silences else None
    if silence is not None:
        grid.add_row(
            "silence",
            Text.assemble(
                (f"{MARKS[SILENCED].glyph} ", MARKS[SILENCED].style),
                f"silenced by silence {silence.silence_id} ({silence.matcher} "
                f"{printable(silence.pattern)}), set by {printable(silence.by)}, ends in "
                f"{format_age(max(silence.until - now, 0))}{capped_words(silence)}: "
                f"{printable(silence.reason)}",
            ),
        )


def lease_words(view: TaskView, now: float) -> str:
    """``owner w1@host, token 7, expires in 4m00s (...)``; for a released lease, when."""
    lease = view.lease
    if lease is None:
        return "none"
    if not lease.held:
        # Release, resume and discard stamp the moment they let go in renewed_at.
        when = "" if lease.renewed_at is None else f" at {_stamp(lease.renewed_at)}"
        return f"released{when}, token {lease.token}"
    left = view.verdict.lease_expires_in(now)
    if left is None:
        return f"owner {lease.owner}, token {lease.token}, held without an expiry"
    expiry = f"expires in {format_age(left)}" if left >= 0 else f"expired {format_age(left)} ago"
    return f"owner {lease.owner}, token {lease.token}, {expiry} ({_stamp(lease.expires_at)})"


_IDLE_SOURCE_WORDS = {
    IdleSource.KERNEL: ", by the kernel's record",
    IdleSource.SAMPLES: ", seen between samples",
}


def process_words(view: TaskView) -> str:
    """What the probe says of the task's process, read against the task's state: the process
    of a finished task has exited, as it should."""
    task, process = view.task, view.process
    if task.pid is None:
        return "no pid recorded"
    if process is None:
        return f"pid {task.pid} on {task.host or '?'}: not probed from this host"
    if process.gone and task.state.finished:
        return f"pid {process.pid} exited, as expected: the task {task.state}"
    if process.gone:
        why = ""
        if process.status == "zombie":
            why = " (a zombie: exited, not reaped)"
        elif process.alive:
            why = " (the pid now belongs to another process)"
        return f"pid {process.pid} GONE{why}, started {_stamp(task.pid_start_time)}"
    started = f"started {_stamp(process.create_time or task.pid_start_time)}"
    alive = f"still alive, though the task {task.state}" if task.state.finished else "alive"
    cpu = "-" if process.cpu_percent is None else f"{process.cpu_percent:.0f}%"
    rss = "-" if process.rss_bytes is None else f"{process.rss_bytes / 2**20:.0f} MiB"
    tree = ""
    if process.children:
        plural = "child" if process.children == 1 else "children"
        tree = f" + {process.children} {plural} (cpu, rss summed over the tree)"
    idle = ""
    if process.idle_s is not None:
        source = "" if process.idle_source is None else _IDLE_SOURCE_WORDS[process.idle_source]
        idle = f", idle {format_age(process.idle_s)} (no CPU, no I/O{source})"
    return (
        f"pid {process.pid}{tree} {alive}, status {process.status or '-'}, cpu {cpu}{idle}, "
        f"rss {rss}, {started}"
    )


def facts_table(
    view: TaskView,
    now: float,
    oncall: OnCall | None = None,
    origin: Origin | None = None,
    last_output: LastOutput | None = None,
    job: JobSummary | None = None,
    trace_link: Callable[[str], str | None] | None = None,
) -> Table:
    """Every fact about the task, as label/value rows (``origin``: the engine it came from;
    ``job``: the summary of the job it is a run of; ``trace_link``: the link to a trace)."""
    task, verdict = view.task, view.verdict
    grid = _grid()
    _row(
        grid,
        "task",
        Text.assemble(
            printable_text(task.task_id, "bold"),
            printable_text(f"  run {task.run_id}  step {task.step}  type {task.step_type}"),
        ),
    )
    if origin is not None:
        origin_rows(grid, view, origin)
    _row(grid, "state", f"{task.state}, attempt {task.attempt}")
    if job is not None:
        _row(grid, "job", job_words(task, job))
    if oncall is not None:
        oncall_rows(grid, view, oncall, now)
    for reason in verdict.reasons:
        _row(grid, "reason", reason.words(now))
    for flag in verdict.flags:
        _row(grid, "flag", Text(str(flag), style=FLAG_MARKS[flag].style))
    heartbeat_rows(grid, view, now, job)
    beat = view.heartbeat
    _row(
        grid,
        "checkpoint",
        task.checkpoint or (beat.checkpoint if beat and beat.checkpoint else "-"),
    )
    trace_id = trace_of(task, beat)
    if trace_id is not None:
        link = None if trace_link is None else trace_link(trace_id)
        _row(grid, "trace", printable_text(trace_id if link is None else f"{trace_id}  {link}"))
    runbook = runbook_for(view)
    if runbook is not None:
        hint = f"  ({display_key(DETAIL_KEYS[2].key)}: open it)"
        _row(grid, "runbook", Text.assemble(printable_text(runbook), (hint, "dim")))
    _row(grid, "lease", lease_words(view, now))
    _row(grid, "process", process_words(view))
    if view.agent_note is not None:
        _row(grid, "agent", printable_text(view.agent_note, style="bold yellow"))
    skew = view.clock_skew_s
    if skew is not None and abs(skew) >= 1:
        side = "ahead of" if skew > 0 else "behind"
        _row(
            grid, "clock skew", f"the worker's clock is {format_age(abs(skew))} {side} the store's"
        )
    if last_output is not None:
        grid.add_row(
            "last output",
            Text.assemble(
                f"{format_age(last_output.age(now))} ago: ",
                (printable(last_output.line), "bold"),
                (f"  ({display_key(DETAIL_KEYS[0].key)}: the last lines)", "dim"),
            ),
        )
    budgets = verdict.budgets(now)
    _row(grid, "request", _budget_row(budgets.request))
    _row(grid, "stage budget", _budget_row(budgets.stage))
    _row(grid, "task budget", _budget_row(budgets.task))
    return grid


def origin_rows(grid: Table, view: TaskView, origin: Origin) -> None:
    """Where the task comes from: the source, its ids there, and a hold kept only here."""
    task = view.task
    grid.add_row("source", Text(printable(f"{origin.source} ({origin.capability})")))
    ids = "  ".join(
        f"{key} {value}" for key, value in origin.ids.items() if value not in (None, "", -1)
    )
    grid.add_row(origin.kind, Text(printable(ids)))
    if task.quarantined:
        grid.add_row(
            "hold",
            Text(
                printable(
                    f"held in zombietop only by {task.quarantined_by}: "
                    f"{task.quarantine_reason or '-'} (never written into {origin.kind})"
                ),
                style="bold yellow",
            ),
        )


SPARK = "▁▂▃▄▅▆▇█"
SPARK_RUNS = 20
"""How many of a job's latest successful runs the detail view draws."""


def duration_spark(durations: Sequence[float]) -> str:
    """The durations as a line of bars, shortest ``▁`` to longest ``█``."""
    if not durations:
        return ""
    low, high = min(durations), max(durations)
    span = (high - low) or 1.0
    return "".join(SPARK[round((d - low) / span * (len(SPARK) - 1))] for d in durations)


def job_words(task: Task, job: JobSummary) -> Text:
    """``nightly-export, run #3: 12 runs, 92% succeeded, median 40m, p95 52m, last succeeded``
    and the latest successful durations as a sparkline."""
    run = f", run #{task.run_number}" if task.run_number is not None else ""
    rate = "no run ended yet" if job.success_rate is None else f"{job.success_rate:.0%} succeeded"
    words = f"{job.name}{run}: {job.runs} runs, {rate}"
    if job.median_s is not None and job.p95_s is not None:
        words += f", median {format_age(job.median_s)}, p95 {format_age(job.p95_s)}"
    text = printable_text(words)
    recent = job.durations[-SPARK_RUNS:]
    if recent:
        text.append(f"\n{duration_spark(recent)}", style="bold")
        text.append(f"  the last {len(recent)} successful runs", style="dim")
    return text


def history_eta(view: TaskView, now: float, job: JobSummary | None) -> str:
    """``, ~12m by history``: when a running run reports no ETA, the job's median less the
    time it has run (empty without a median, or once past it)."""
    task = view.task
    if job is None or job.median_s is None or not task.state.executing:
        return ""
    left = job.median_s - (now - run_began(task))
    return f", ~{format_age(left)} by history" if left > 0 else ""


def heartbeat_rows(grid: Table, view: TaskView, now: float, job: JobSummary | None = None) -> None:
    """What the latest heartbeat says: stage and progress, counters, age, request; with no ETA
    reported, one from the job's history, marked as such."""
    beat = view.heartbeat
    if beat is None:
        _row(grid, "heartbeat", "none yet")
        return
    if beat.reports_progress:
        _row(
            grid,
            "stage",
            f"{beat.stage or '-'} at {format_progress(beat.progress)}"
            + (
                f", eta {format_age(beat.eta_s)}"
                if beat.eta_s is not None
                else history_eta(view, now, job)
            ),
        )
    elif beat.source is HeartbeatSource.SUPERVISOR:
        _row(grid, "stage", "not reported: the engine reports no progress")
    else:
        _row(grid, "stage", "not reported: the command writes no heartbeat lines")
    counters = ", ".join(f"{k}={_number(v)}" for k, v in beat.counters.items()) or "-"
    _row(grid, "counters", counters)
    age = now - beat.written_at
    heartbeat = Text(f"{format_age(age)} old (#{beat.seq}, written {_stamp(beat.written_at)})")
    if beat.observed:
        heartbeat.append(
            "  observed: the command's CPU, I/O or output moved; it reports no progress",
            style="bold yellow",
        )
    if beat.source is HeartbeatSource.SUPERVISOR:
        heartbeat.append(
            "  supervisor: proof of life, not of progress (CPU and I/O stand in)",
            style="bold yellow",
        )
    grid.add_row("heartbeat", heartbeat)
    if beat.request_name:
        _row(
            grid,
            "request",
            f"{beat.request_name}" + (f" trace {beat.trace_id}" if beat.trace_id else ""),
        )


class DetailScreen(TaskKeys):
    """One task in full; r/d/k act on it, Escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "back", "Back"),
        *(Binding(key.key, key.action, key.label) for key in KEYS if key.read_only_hides),
        *(Binding(key.key, key.action, key.label) for key in DETAIL_KEYS),
    ]

    DEFAULT_CSS = """
    DetailScreen #context {
        padding: 0 1;
        background: $panel;
        text-style: bold;
    }
    DetailScreen #spark-label, DetailScreen #facts, DetailScreen #events {
        padding: 0 1;
    }
    DetailScreen Sparkline {
        height: 3;
        margin: 0 1;
    }
    DetailScreen #output-pane {
        display: none;
        margin: 0 1;
    }
    DetailScreen.show-output #output-pane {
        display: block;
    }
    """

    def __init__(
        self, task_id: str, read_only: bool, state: DetailState, *, copy_lines: int = COPY_LINES
    ) -> None:
        super().__init__(read_only=read_only)
        self.task_id = task_id
        self.state = state
        """What the app handed last: the snapshot, the page line and the task's record."""
        self.copy_lines = copy_lines
        """How many of the last output lines ``c`` copies (``[monitor] copy_lines``)."""

    @property
    def key_task_id(self) -> str:
        return self.task_id

    @property
    def record(self) -> TaskRecord:
        """The task's history, events and last output, as the app last read them."""
        return self.state.record

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="context")
            yield Static(id="spark-label")
            yield Sparkline([], id="spark")
            yield Static(id="facts")
            yield Static(id="events")
        yield OutputPane(copy_lines=self.copy_lines, id="output-pane")
        yield Footer()

    def on_mount(self) -> None:
        self.show()

    def show_detail(self, state: DetailState) -> None:
        """Show the task as ``state`` has it (the app hands one after every poll and read)."""
        before, self.state = self.state, state
        if not self.is_mounted:
            return  # on_mount shows the latest state
        if _acked(before, self.task_id) != _acked(state, self.task_id):
            self.refresh_bindings()
        self.show()
        new_output = state.record.last_output is not before.record.last_output
        if new_output and self.has_class("show-output"):
            # Read afresh because the pane opened: show its end, the latest lines.
            self.query_one(OutputPane).scroller.scroll_end(animate=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "note" and self.read_only:
            return False  # a note writes the store
        if action == "unack" and not _acked(self.state, self.task_id):
            return False  # u shows in the footer only while the task is acked
        return super().check_action(action, parameters)

    def show(self) -> None:
        state = self.state
        snapshot, view, now, record = state.snapshot, state.view, state.now, state.record
        context = self.query_one("#context", Static)
        if view is None:
            context.update(
                printable_text(f"{self.task_id} is no longer in the store's recent tasks")
            )
            return
        title = health_label(view.health)
        title.append_text(printable_text(f"  {view.task_id}"))
        self.title = printable(view.task_id)
        context.update(Text.assemble(title, "\n", printable_text(state.page_line)))
        points = [p.progress for p in record.history if p.progress is not None]
        label = (
            f"progress over the last {len(points)} heartbeats"
            if points
            else "no progress history yet"
        )
        if points:
            label += f": {format_progress(points[0])} -> {format_progress(points[-1])}"
        self.query_one("#spark-label", Static).update(Text(label, style="dim"))
        spark = self.query_one("#spark", Sparkline)
        spark.display = bool(points)
        spark.data = points
        origin = snapshot.origins.get(self.task_id)
        self.query_one("#facts", Static).update(
            facts_table(
                view,
                now,
                snapshot.oncall,
                origin,
                record.last_output,
                None if view.task.job is None else snapshot.job_of(view.task),
                snapshot.trace_link,
            )
        )
        notes = notes_text(record.events, now)
        self.query_one("#events", Static).update(
            Text.assemble(notes, self._events_text(record.events))
        )
        self._show_output(record.last_output, now)

    def _show_output(self, last: LastOutput | None, now: float) -> None:
        # Untrusted text: the pane escapes every line; none can move the cursor or retitle it.
        self.query_one(OutputPane).show_output(last, now)

    def action_toggle_output(self) -> None:
        """Show or hide the last lines the task wrote; the app reads them afresh each time
        they are shown."""
        self.toggle_class("show-output")
        if self.has_class("show-output"):
            # Focused, so that its keys (/ n N G g c) reach it.
            self.query_one(OutputPane).scroller.focus()
            self.post_message(OutputAsked(self.task_id))

    @staticmethod
    def _events_text(events: Sequence[Event]) -> Text:
        text = Text("events for this task, newest first\n", style="dim")
        if not events:
            text.append("none", style="dim")
        for index, event in enumerate(events):
            if index:
                text.append("\n")
            text.append_text(event_line(event))
        return text

    def action_note(self) -> None:
        self._ask(TaskAction.NOTE)

    def action_runbook(self) -> None:
        """Open the runbook with the system opener when there is a display; else show the
        link, to copy."""
        view = self.state.view
        runbook = None if view is None else runbook_for(view)
        if view is None or runbook is None:
            step_type = "?" if view is None else view.task.step_type
            self.notify(
                escaped_markup(f"no runbook for step type {step_type}: set [step_types.X] runbook"),
                severity="warning",
            )
            return
        opener = system_opener()
        if opener is not None:
            with contextlib.suppress(OSError):
                proc = subprocess.Popen(
                    [opener, runbook],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
                # Reaped when it ends: no zombie of ours lingers.
                threading.Thread(target=proc.wait, name="reap-opener", daemon=True).start()
                self.notify(f"opening {escaped_markup(runbook)}", title="runbook", timeout=10)
                return
        self.notify(escaped_markup(runbook), title="runbook (copy it)", timeout=60)

    def action_back(self) -> None:
        self.dismiss()


def system_opener() -> str | None:
    """The program that opens a link on this machine's display, or None with no display (an
    SSH session): then the link is shown to copy."""
    if sys.platform == "darwin":
        return shutil.which("open")
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return None
    return shutil.which("xdg-open")


def notes_text(events: Sequence[Event], now: float) -> Text:
    """The notes on the task's incident, newest first, each with who and how long ago; nothing
    when it has none. ``events`` are the task's, newest first."""
    notes = [Note.from_event(e) for e in events if e.kind == EventKind.INCIDENT_NOTE]
    if not notes:
        return Text()
    text = Text("notes, newest first\n", style="dim")
    for note in notes:
        text.append_text(printable_text(f"✎ {note.words(now)}"))
        text.append("\n")
    text.append("\n")
    return text


def _acked(state: DetailState, task_id: str) -> bool:
    return state.snapshot.oncall.ack_for(task_id) is not None
