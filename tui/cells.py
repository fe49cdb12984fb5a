"""The task table's columns and the text of each cell, as pure functions of a task and ``now``.

The table computes the cells of the rows in view, compares them with what it already shows and
updates the cells that differ. ``row_changes`` says how long a row will read the same, so a row
whose ages read in minutes is recomputed once a minute, not at every poll.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial

from rich.text import Text

from zombietop.durations import format_age, format_duration
from zombietop.health import Flag, Health
from zombietop.judge.budgets import Budget
from zombietop.judge.history_judge import SLOW_REASON
from zombietop.judge.monitor import TaskView
from zombietop.judge.verdict import format_progress
from zombietop.model import HeartbeatSource, TaskState
from zombietop.oncall.acks import OnCall
from zombietop.process_words import STOPPED
from zombietop.tui.healths import GLYPHS, STYLES
from zombietop.tui.short_ids import short_id
from zombietop.tui.untrusted import printable_text

_EIGHTHS = " ▏▎▍▌▋▊▉"
DASH = Text("-", style="dim")
NO_PROGRESS = Text(f"{'':8}    -", style="dim")
"""The progress cell of a task that reports none, and is not expected to (queued, finished)."""
KILL_OUTCOME_SHOWN_S = 60.0
"""How long a finished kill's outcome stays in its row (the store keeps it longer)."""
EPSILON_S = 1e-6
"""Taken off every computed moment of change, so float rounding never puts one too late."""


GLANCE_STEP_S = 5.0
"""Under a minute, table cells show ages in steps of this many seconds (``glance_age``)."""

OBSERVED_MARK = "~"
"""Leads the heartbeat cell of a task whose latest beat was observed (``~40s``), not reported."""

OVER = "!"
"""Over its limit: after an age (``6m!``, ``4h40m/45m!``) and before a flag's word."""

BAR_STYLE = "blue"
"""Every bar's one colour: a bar says how far, never how bad (the health word says that)."""


def bar(fraction: float | None, width: int) -> str:
    """A horizontal bar ``width`` cells wide, in eighths of a cell; empty cells are ``·``."""
    if fraction is None:
        return "·" * width
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full
    if part and full < width:
        text += _EIGHTHS[part]
    return text + "·" * (width - len(text))


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """One table column: fixed width, and a priority for dropping it on narrow terminals."""

    key: str
    label: str
    width: int
    render: Callable[[TaskView, float, RowNote | None], Text]
    changes: Callable[[TaskView, float], float] | None = None
    """When the cell may next read differently for the same view and note (a moment no later
    than the real one); None when it reads the same at any moment."""
    runs_on: bool = False
    """A cell wider than the column runs on over the empty (``-``) cells after it."""


def glance_changes(now: float, seconds: float, rising: bool) -> float:
    """When ``glance_age`` of an age (``rising``) or a countdown, ``seconds`` at ``now``, may
    next read differently: at the next step of five seconds under a minute, else the next
    whole minute (hours and days turn over on minutes too)."""
    unit = GLANCE_STEP_S if abs(seconds) < 60 else 60.0
    if rising == (seconds >= 0):
        # Moving away from zero: the next multiple of the unit above |seconds|.
        size = abs(seconds)
        return now + (math.floor(size / unit) + 1) * unit - size - EPSILON_S
    # Moving towards zero: the multiple of the unit at or below |seconds|.
    size = abs(seconds)
    return now + size - math.floor(size / unit) * unit - EPSILON_S


def row_changes(view: TaskView, now: float, columns: Sequence[Column]) -> float:
    """When any of ``columns`` may next read differently for this view (and the same note):
    its verdict's next threshold, or the soonest of its cells' own."""
    soonest = view.verdict.stable_until
    for column in columns:
        if column.changes is not None:
            soonest = min(soonest, column.changes(view, now))
    return soonest


def _health(view: TaskView, now: float, note: RowNote | None) -> Text:
    """The health word, or what is happening to the task right now (a kill counting down, an
    action waiting for another host's agent). An action's outcome goes beside the id."""
    kill = view.pending_kill
    if kill is not None and kill.pending:
        return Text(f"↯ TERM {format_age(max(kill.deadline - now, 0.0))}", style="bold reverse red")
    if view.host_request is not None:
        # An action asked for on another host: it happens only when that host's agent does it.
        waiting = view.agent_note is not None and view.agent_note.startswith("waiting")
        return Text("↯ wait agent" if waiting else "↯ no agent!", style="bold reverse yellow")
    health = view.health
    return Text(f"{GLYPHS[health]} {health}", style=STYLES[health])


def _kill_changes(view: TaskView, now: float) -> float:
    # A kill's countdown ticks every second, and its outcome is shown for a while.
    return now if view.pending_kill is not None else math.inf


TASK_WIDTH = 18
"""The task column's width, and more where the terminal has room (``task_column``)."""
TASK_GROWS_BY = 16
"""At most this many spare cells widen the task column, for long ids and the marks' words."""


def row_name(view: TaskView) -> str:
    """What a row calls its task: a run of a job by its job and number (``nightly-export
    #42``), any other task by its id."""
    task = view.task
    if task.job is not None and task.run_number is not None:
        return f"{task.job} #{task.run_number}"
    return task.task_id


def _task(view: TaskView, now: float, note: RowNote | None, *, width: int = TASK_WIDTH) -> Text:
    text = printable_text(row_name(view), style="bold" if view.health.pages else "", no_wrap=True)
    if text.cell_len > width:
        text = Text(short_id(text.plain, width), style=text.style, no_wrap=True)
    return with_marks(text, row_marks(view, now, note), width)


@cache
def task_column(width: int = TASK_WIDTH) -> Column:
    """The task column, ``width`` cells wide (one object per width, so columns compare equal)."""
    return Column(
        key="task",
        label="TASK",
        width=width,
        render=partial(_task, width=width),
        changes=_kill_changes,
    )


def with_marks(text: Text, marks: Sequence[Mark], width: int) -> Text:
    """``text`` (a task id) and then its marks, in ``width`` cells: in words where they fit
    (``sync-2047 !request``), else in glyphs (``compact-2048 ↯⚑``), else none. The id is what
    matters most: a mark never crops it."""
    if not marks:
        return text
    for said in (
        Text(" ").join(Text(mark.glyph + mark.word, style=mark.style) for mark in marks),
        Text.assemble(*((mark.glyph, mark.style) for mark in marks)),
    ):
        if text.cell_len + 1 + said.cell_len <= width:
            return Text.assemble(text, " ", said, no_wrap=True)
    return text


def _stage(view: TaskView, now: float, note: RowNote | None) -> Text:
    beat = view.heartbeat
    return printable_text(beat.stage) if beat is not None and beat.stage else DASH


def _progress(view: TaskView, now: float, note: RowNote | None) -> Text:
    beat = view.heartbeat
    task = view.task
    if beat is None or beat.progress is None:
        if task.state is TaskState.SUCCEEDED:
            return Text(f"{'':8}  done", style="dim")
        if task.state is TaskState.QUEUED or task.state.finished:
            # Nothing expected yet, or nothing more: no "?" to wonder about.
            return NO_PROGRESS
    if beat is not None and beat.progress is None and beat.source is HeartbeatSource.SUPERVISOR:
        # An engine that never reports progress.
        return NO_PROGRESS
    if beat is None or beat.progress is None:
        return Text(f"{bar(None, 8)}    ?", style="dim")
    text = Text(bar(beat.progress / 100, 8))
    text.stylize(BAR_STYLE)
    text.append(f" {format_progress(beat.progress):>5}")
    return text


def _progress_or_upstream(view: TaskView, now: float, note: RowNote | None) -> Text:
    """A waiting task has no progress: it says what it waits behind instead."""
    if view.waiting_on:
        return upstream_text(view.waiting_on)
    return _progress(view, now, note)


def upstream_text(waiting_on: Sequence[tuple[str, Health]]) -> Text:
    """``blocked by export-2031 (stalled)``, ``after ingest-5119 (healthy) +1``."""
    upstream, health = waiting_on[0]
    blocked = next(((u, h) for u, h in waiting_on if h.blocks_dependents), None)
    if blocked is not None:
        upstream, health = blocked
    text = Text(
        "blocked by " if blocked is not None else "after ",
        style="bold" if blocked is not None else "",
    )
    text.append_text(printable_text(upstream))
    text.append(f" ({health})", style=STYLES[health])
    if len(waiting_on) > 1:
        text.append(f" +{len(waiting_on) - 1}")
    return text


def _heartbeat(view: TaskView, now: float, note: RowNote | None) -> Text:
    age = view.verdict.heartbeat_age(now)
    if age is None:
        return DASH
    late = view.task.state.executing and age > view.limits.heartbeat_timeout
    beat = view.heartbeat
    # An observed beat proves activity, not progress: marked in the text, not only by style.
    observed = OBSERVED_MARK if beat is not None and beat.observed else ""
    return Text(
        observed + glance_age(age) + (OVER if late else ""), style="bold red" if late else ""
    )


def _heartbeat_changes(view: TaskView, now: float) -> float:
    age = view.verdict.heartbeat_age(now)
    return math.inf if age is None else glance_changes(now, age, rising=True)


def _lease(view: TaskView, now: float, note: RowNote | None) -> Text:
    left = view.verdict.lease_expires_in(now)
    if left is None:
        return DASH
    if left < 0:
        return Text(f"{glance_age(left)} ago", style="bold red")
    return Text(f"in {glance_age(left)}")


def _lease_changes(view: TaskView, now: float) -> float:
    left = view.verdict.lease_expires_in(now)
    return math.inf if left is None else glance_changes(now, left, rising=False)


def glance_age(seconds: float) -> str:
    """Format an age or countdown for a table cell: ``<5s``, ``40s``, ``3m``, ``4h12m``, ``2d03h``.

    A cell changes once every five seconds at most in the first minute and once a minute past
    it: single seconds are noise in a view read at a glance (a healthy task beats every ten
    seconds and a stall takes minutes), and every visible row ticking each second is most of
    what the table writes. Each text is the step the age has reached (``40s`` from 40 to 44.9
    seconds). The detail view, page lines and status keep the seconds (``format_age``); the
    units switch where ``format_age``'s do. A negative countdown reads as its distance from
    zero.
    """
    seconds = abs(seconds)
    if seconds < GLANCE_STEP_S:
        return f"<{GLANCE_STEP_S:g}s"
    if seconds < 60:
        return f"{int(seconds // GLANCE_STEP_S * GLANCE_STEP_S)}s"
    if seconds < 3600:
        return f"{int(seconds) // 60}m"
    return format_age(seconds)


def _budget_text(budget: Budget, width: int) -> Text:
    if budget.used_s is None:
        return Text(f"{bar(None, width)} -/{format_duration(budget.limit_s)}", style="dim")
    over = budget.over
    text = Text(bar(budget.fraction, width))
    text.stylize(BAR_STYLE)
    text.append(f" {glance_age(budget.used_s)}/{format_duration(budget.limit_s)}")
    if over:
        text.append(OVER, style="bold red")
    return text


def _budget_changes(budget: Budget, width: int, now: float) -> float:
    used = budget.used_s
    if used is None:
        return math.inf
    # The bar moves an eighth of a cell where used / step passes a half (it rounds).
    step = budget.limit_s / (width * 8)
    bar_moves = now + (math.floor(used / step + 0.5) + 0.5) * step - used - EPSILON_S
    return min(bar_moves, glance_changes(now, used, rising=True))


BUDGET_BAR = 4
"""Cells in a budget column's bar."""


def _stage_budget(view: TaskView, now: float, note: RowNote | None) -> Text:
    return _budget_text(view.verdict.budgets(now).stage, BUDGET_BAR)


def _stage_budget_changes(view: TaskView, now: float) -> float:
    return _budget_changes(view.verdict.budgets(now).stage, BUDGET_BAR, now)


def _task_budget(view: TaskView, now: float, note: RowNote | None) -> Text:
    return _budget_text(view.verdict.budgets(now).task, BUDGET_BAR)


def _task_budget_changes(view: TaskView, now: float) -> float:
    return _budget_changes(view.verdict.budgets(now).task, BUDGET_BAR, now)


def _pid(view: TaskView, now: float, note: RowNote | None) -> Text:
    pid = view.task.pid
    if pid is None:
        return DASH
    process = view.process
    if process is None:
        if view.agent_note is not None and view.agent_note.startswith("no agent"):
            return Text("no agent", style="bold yellow")
        return Text(f"{pid} ?", style="dim")
    if process.gone:
        return Text(f"{pid} gone", style="bold red")
    if process.status in STOPPED:
        # It cannot run until someone sends SIGCONT: that says more than its 0% ("stop" is
        # the word that fits the column beside a 5-digit pid).
        return Text(f"{pid} stop", style="bold yellow")
    cpu = "" if process.cpu_percent is None else f" {process.cpu_percent:.0f}%"
    return Text(f"{pid}{cpu}")


def _attempt(view: TaskView, now: float, note: RowNote | None) -> Text:
    return Text(f"#{view.task.attempt}")


def _owner(view: TaskView, now: float, note: RowNote | None) -> Text:
    owner = view.lease.owner if view.lease is not None else None
    host = view.task.host
    if owner is None and host is None:
        return DASH
    if owner is not None and host is not None and owner.endswith(f"@{host}"):
        return printable_text(owner)
    return printable_text(f"{owner or '-'}@{host or '?'}")


COLUMNS: tuple[Column, ...] = (
    Column(key="health", label="HEALTH", width=13, render=_health, changes=_kill_changes),
    task_column(),
    Column(key="progress", label="PROGRESS", width=14, render=_progress_or_upstream, runs_on=True),
    Column(key="heartbeat", label="BEAT", width=7, render=_heartbeat, changes=_heartbeat_changes),
    Column(key="lease", label="LEASE", width=10, render=_lease, changes=_lease_changes),
    Column(key="stage", label="STAGE", width=10, render=_stage),
    Column(
        key="stage_budget",
        label="STAGE BUDGET",
        width=16,
        render=_stage_budget,
        changes=_stage_budget_changes,
    ),
    Column(key="pid", label="PID CPU", width=10, render=_pid),
    Column(
        key="task_budget",
        label="TASK BUDGET",
        width=16,
        render=_task_budget,
        changes=_task_budget_changes,
    ),
    Column(key="owner", label="OWNER@HOST", width=18, render=_owner),
    # Last: the attempt matters after a resume, and the detail view says it too.
    Column(key="attempt", label="TRY", width=3, render=_attempt),
)
"""Every column, in display order, which is also the order they are kept in as space runs out."""
BY_KEY = {column.key: column for column in COLUMNS}
CELL_PADDING = 1


def columns_for_width(width: int) -> tuple[Column, ...]:
    """The columns that fit in ``width`` cells, dropping from the end of ``COLUMNS``.

    The first five (health, task, progress, heartbeat, lease) always stay. Room left over
    widens the task column (up to ``TASK_GROWS_BY``), where long ids and marks need it.
    """
    kept: list[Column] = []
    used = 0
    for index, column in enumerate(COLUMNS):
        need = column.width + 2 * CELL_PADDING
        if index >= 5 and used + need > width:
            break
        kept.append(column)
        used += need
    spare = min(max(width - used, 0), TASK_GROWS_BY)
    if spare:
        kept = [task_column(TASK_WIDTH + spare) if c.key == "task" else c for c in kept]
    return tuple(kept)


Cells = tuple[Text, ...]


def same_cell(before: Text, after: Text) -> bool:
    """True when two texts (cells, header lines) read and look the same. Rich's Text equality
    compares the words and the spans, not the text's own style: a progress bar that turns red
    keeps its words."""
    return before is after or (
        before.plain == after.plain
        and before.style == after.style
        and before.spans == after.spans
        and before.justify == after.justify
        and before.overflow == after.overflow
        and before.no_wrap == after.no_wrap
    )


def row_cells(
    view: TaskView, now: float, columns: Sequence[Column], note: RowNote | None = None
) -> Cells:
    """The text of every cell in ``columns`` for one task at ``now``, with its row's note."""
    return tuple(column.render(view, now, note) for column in columns)


def cell_widths(cells: Cells, columns: Sequence[Column]) -> tuple[int, ...]:
    """How many cells wide each cell of a row is drawn: its column's width, or more for a cell
    that runs on (``Column.runs_on``) over the empty cells after it, which are then 0 wide."""
    widths = [column.width for column in columns]
    for index, column in enumerate(columns):
        if not column.runs_on or not widths[index]:
            continue
        need, after = cells[index].cell_len, index + 1
        while widths[index] < need and after < len(columns) and cells[after].plain == "-":
            widths[index] += widths[after] + 2 * CELL_PADDING
            widths[after] = 0
            after += 1
    return tuple(widths)


# Marks --------------------------------------------------------------------------------------
# What else is true of a row goes beside its id: the last action's outcome, the budget flags,
# the on-call marks. The outcome and the on-call marks come in the row's note (``RowNote``): the
# table recomputes a row whose note changed, so an ack shows at the next poll without the table
# knowing what an ack is.


@dataclass(frozen=True, slots=True)
class Mark:
    """One thing said beside a task id: a glyph and a word, never a colour alone."""

    glyph: str
    word: str
    style: str


ACKED, SILENCED = "acked", "silenced"
MARKS: dict[str, Mark] = {
    ACKED: Mark("⚑", ACKED, "bold cyan"),
    SILENCED: Mark("⊘", SILENCED, "bold cyan"),
}
"""The on-call marks, by word."""
OUTCOME_GLYPH = "↯"
FLAG_STYLE, URGENT_FLAG_STYLE = "bold yellow", "bold red"
FLAG_MARKS: dict[Flag, Mark] = {
    flag: Mark(
        flag.traits.glyph, flag.mark, URGENT_FLAG_STYLE if flag.traits.urgent else FLAG_STYLE
    )
    for flag in Flag
}
"""Every flag's mark, made from its traits (``zombietop.health``), so a new flag has one: a
budget overrun (``!request`` is a request running past its budget), a task queued too long
(``!queued``), a task a queue handed out again while it ran (``⧉twice``), or a run judged
against its job's history (``!slow``: slower than usual, ``!too fast``: finished too fast)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RowNote:
    """What the app knows of a row beyond its view: the last action's outcome, the on-call
    marks."""

    outcome: str | None = None
    """The outcome of the last action this dashboard took on the task (``term sent``)."""
    oncall: tuple[Mark, ...] = ()
    """The task's on-call marks: acked, silenced, both or none."""
    also_running: int = 0
    """How many other runs of the task's job are running beside it (``+1 running``)."""


def row_marks(view: TaskView, now: float, note: RowNote | None) -> list[Mark]:
    """The marks beside a task id: the last action's outcome, the flags, then on-call marks."""
    marks = []
    outcome = _outcome(view, now, note)
    if outcome is not None:
        marks.append(Mark(OUTCOME_GLYPH, outcome, "bold"))
    marks.extend(_flag_mark(flag, view, now) for flag in view.verdict.flags)
    if note is not None:
        marks.extend(note.oncall)
        if note.also_running:
            marks.append(Mark("+", f"{note.also_running} running", "bold"))
    return marks


def _flag_mark(flag: Flag, view: TaskView, now: float) -> Mark:
    """A flag's mark; a run slower than usual says by how much (``!2.3x usual``)."""
    if flag is Flag.SLOWER_THAN_USUAL:
        for reason in view.verdict.reasons:
            if reason.code == SLOW_REASON and reason.since is not None and reason.limit:
                times = (now - reason.since) / reason.limit
                return Mark(OVER, f"{times:.1f}x usual", FLAG_MARKS[flag].style)
    return FLAG_MARKS[flag]


def _outcome(view: TaskView, now: float, note: RowNote | None) -> str | None:
    """The last action's outcome for a minute: the one this dashboard saw, or else the
    outcome of a kill the store finished (another dashboard's, the watchdog's)."""
    outcome = None if note is None else note.outcome
    kill = view.pending_kill
    if outcome == "term sent" and kill is not None and (kill.pending or kill.outcome is not None):
        outcome = None  # the countdown says it now, and then the kill's own outcome
    if (
        outcome is None
        and kill is not None
        and kill.outcome is not None
        and kill.finished_at is not None
        and now - kill.finished_at < KILL_OUTCOME_SHOWN_S
    ):
        outcome = kill.outcome.replace("_", " ")
    return outcome


def oncall_marks(oncall: OnCall, view: TaskView) -> tuple[Mark, ...]:
    """The task's on-call marks: acked, silenced, both or none."""
    marks = []
    if oncall.ack_for(view.task_id) is not None:
        marks.append(MARKS[ACKED])
    if oncall.silences and oncall.silence_for(view.task) is not None:
        marks.append(MARKS[SILENCED])
    return tuple(marks)


def running_per_job(views: Sequence[TaskView]) -> dict[str, int]:
    """By job, how many of its runs execute, for the jobs with more than one."""
    running = Counter(
        view.task.job for view in views if view.task.job and view.task.state.executing
    )
    return {job: count for job, count in running.items() if count > 1}


@dataclass(frozen=True, slots=True)
class RowNotes:
    """Each row's note, composed as its row is drawn (a screen draws tens of rows of however
    many thousands): the outcome of this dashboard's last action on the task, its on-call marks
    in ``oncall``, and how many other runs of its job run beside it (``running_per_job``)."""

    outcomes: Mapping[str, str] = field(default_factory=dict)
    """By task id, the outcome of this dashboard's last action on it (``term sent``)."""
    oncall: OnCall | None = None
    running: Mapping[str, int] = field(default_factory=dict)

    def of(self, view: TaskView) -> RowNote | None:
        """The task's note, or None when there is nothing to say beyond its view."""
        outcome = self.outcomes.get(view.task_id)
        marks = () if self.oncall is None else oncall_marks(self.oncall, view)
        job = view.task.job
        also = self.running.get(job, 1) - 1 if job and view.task.state.executing else 0
        if outcome is None and not marks and not also:
            return None
        return RowNote(outcome=outcome, oncall=marks, also_running=also)


NO_NOTES = RowNotes()


def mark_text(marks: Sequence[Mark]) -> Text:
    """``⚑acked `` / ``⊘silenced ``: what goes before a context line on the wall."""
    text = Text()
    for mark in marks:
        text.append(f"{mark.glyph}{mark.word} ", style=mark.style)
    return text
