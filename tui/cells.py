"""The task table's columns and the text of each cell, as pure functions of a task and ``now``.

The table computes the cells of the rows in view, compares them with what it already shows and
updates the cells that differ. ``row_changes`` says how long a row will read the same, so a row
whose ages read in minutes is recomputed once a minute, not at every poll.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rich.text import Text

from zombietop.classify import Budget, format_progress
from zombietop.durations import format_age, format_duration
from zombietop.monitor import Snapshot, TaskView
from zombietop.oncall import OnCall
from zombietop.tui.healths import GLYPHS, STYLES
from zombietop.tui.untrusted import shown

_EIGHTHS = " ▏▎▍▌▋▊▉"
DASH = Text("-", style="dim")
KILL_OUTCOME_SHOWN_S = 60.0
"""How long a finished kill's outcome stays in its row (the store keeps it longer)."""
EPSILON_S = 1e-6
"""Taken off every computed moment of change, so float rounding never puts one too late."""


GLANCE_STEP_S = 5.0
"""Under a minute, table cells show ages in steps of this many seconds (``glance_age``)."""

OBSERVED_MARK = "~"
"""Leads the heartbeat cell of a task whose latest beat was observed (``~40s``), not reported."""


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
    render: Callable[[TaskView, float, str | None], Text]
    changes: Callable[[TaskView, float], float] | None = None
    """When the cell may next read differently for the same view and note (a moment no later
    than the real one); None when it reads the same at any moment."""


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


def _health(view: TaskView, now: float, note: str | None) -> Text:
    note = note_outcome(note)
    kill = view.pending_kill
    if kill is not None and kill.pending:
        return Text(f"↯ TERM {format_age(max(kill.deadline - now, 0.0))}", style="bold reverse red")
    finished_kill = kill is not None and kill.outcome is not None
    # "term sent" is stale news once the kill has finished, whoever finished it.
    if note is not None and not (finished_kill and note == "term sent"):
        return Text(f"↯ {note}", style="bold yellow")
    if view.host_request is not None:
        # An action asked for on another host: it happens only when that host's agent does it.
        waiting = view.agent_note is not None and view.agent_note.startswith("waiting")
        return Text("↯ wait agent" if waiting else "↯ no agent!", style="bold reverse yellow")
    if (
        kill is not None
        and kill.outcome is not None
        and kill.finished_at is not None
        and now - kill.finished_at < KILL_OUTCOME_SHOWN_S
    ):
        return Text(f"↯ {kill.outcome.replace('_', ' ')}", style="bold yellow")
    health = view.health
    return Text(f"{GLYPHS[health]} {health}", style=STYLES[health])


def _health_changes(view: TaskView, now: float) -> float:
    # A kill's countdown ticks every second, and its outcome is shown for a while.
    return now if view.pending_kill is not None else math.inf


def _task(view: TaskView, now: float, note: str | None) -> Text:
    text = shown(view.task_id, style="bold" if view.health.pages else "", no_wrap=True)
    marks = note_marks(note)
    if marks:
        # The mark goes first: a long task id is cropped, the mark never is.
        text = Text.assemble(mark_text(marks), text, no_wrap=True)
    return text


def _stage(view: TaskView, now: float, note: str | None) -> Text:
    beat = view.heartbeat
    return shown(beat.stage) if beat is not None and beat.stage else DASH


def _progress(view: TaskView, now: float, note: str | None) -> Text:
    beat = view.heartbeat
    if beat is None or beat.progress is None:
        return Text(f"{bar(None, 8)}    ?", style="dim")
    style = "red" if view.health.pages else "yellow" if view.health == "spinning" else "green"
    text = Text(bar(beat.progress / 100, 8), style=style)
    text.append(f" {format_progress(beat.progress):>5}")
    return text


def _heartbeat(view: TaskView, now: float, note: str | None) -> Text:
    age = view.verdict.heartbeat_age(now)
    if age is None:
        return DASH
    late = view.task.state.executing and age > view.limits.heartbeat_timeout
    beat = view.heartbeat
    # An observed beat proves activity, not progress: marked in the text, not only by style.
    observed = OBSERVED_MARK if beat is not None and beat.observed else ""
    return Text(
        observed + glance_age(age) + ("!" if late else ""), style="bold red" if late else ""
    )


def _heartbeat_changes(view: TaskView, now: float) -> float:
    age = view.verdict.heartbeat_age(now)
    return math.inf if age is None else glance_changes(now, age, rising=True)


def _lease(view: TaskView, now: float, note: str | None) -> Text:
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
    text = Text(bar(budget.fraction, width), style="bold red" if over else "blue")
    text.append(f" {glance_age(budget.used_s)}/{format_duration(budget.limit_s)}")
    if over:
        text.append("!", style="bold red")
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


def _stage_budget(view: TaskView, now: float, note: str | None) -> Text:
    return _budget_text(view.verdict.budgets(now).stage, BUDGET_BAR)


def _stage_budget_changes(view: TaskView, now: float) -> float:
    return _budget_changes(view.verdict.budgets(now).stage, BUDGET_BAR, now)


def _task_budget(view: TaskView, now: float, note: str | None) -> Text:
    return _budget_text(view.verdict.budgets(now).task, BUDGET_BAR)


def _task_budget_changes(view: TaskView, now: float) -> float:
    return _budget_changes(view.verdict.budgets(now).task, BUDGET_BAR, now)


def _pid(view: TaskView, now: float, note: str | None) -> Text:
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
    cpu = "" if process.cpu_percent is None else f" {process.cpu_percent:.0f}%"
    return Text(f"{pid}{cpu}")


def _attempt(view: TaskView, now: float, note: str | None) -> Text:
    return Text(f"#{view.task.attempt}")


def _owner(view: TaskView, now: float, note: str | None) -> Text:
    owner = view.lease.owner if view.lease is not None else None
    host = view.task.host
    if owner is None and host is None:
        return DASH
    if owner is not None and host is not None and owner.endswith(f"@{host}"):
        return shown(owner)
    return shown(f"{owner or '-'}@{host or '?'}")


COLUMNS: tuple[Column, ...] = (
    Column(key="health", label="HEALTH", width=13, render=_health, changes=_health_changes),
    Column(key="task", label="TASK", width=18, render=_task),
    Column(key="progress", label="PROGRESS", width=14, render=_progress),
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
    Column(key="attempt", label="TRY", width=3, render=_attempt),
    Column(
        key="task_budget",
        label="TASK BUDGET",
        width=16,
        render=_task_budget,
        changes=_task_budget_changes,
    ),
    Column(key="owner", label="OWNER@HOST", width=18, render=_owner),
)
"""Every column, in display order, which is also the order they are kept in as space runs out."""
BY_KEY = {column.key: column for column in COLUMNS}
CELL_PADDING = 1


def columns_for_width(width: int) -> tuple[Column, ...]:
    """The columns that fit in ``width`` cells, dropping from the end of ``COLUMNS``.

    The first five (health, task, progress, heartbeat, lease) always stay.
    """
    kept: list[Column] = []
    used = 0
    for index, column in enumerate(COLUMNS):
        need = column.width + 2 * CELL_PADDING
        if index >= 5 and used + need > width:
            break
        kept.append(column)
        used += need
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
    view: TaskView, now: float, columns: Sequence[Column], notes: Mapping[str, str]
) -> Cells:
    """The text of every cell in ``columns`` for one task at ``now``."""
    note = notes.get(view.task_id)
    return tuple(column.render(view, now, note) for column in columns)


# The on-call mark ---------------------------------------------------------------------------
# A row's note carries the last action's outcome and, after a newline, the row's on-call mark
# ("acked", "silenced" or both): the table recomputes a row whose note changed, so an ack shows
# at the next poll without the table knowing what an ack is.

MARK_SEPARATOR = "\n"
ACKED, SILENCED = "acked", "silenced"
MARKS: dict[str, tuple[str, str]] = {ACKED: ("✓", "bold cyan"), SILENCED: ("⊘", "bold magenta")}
"""Mark word -> (glyph, style): a glyph and a word, never a colour alone."""


def oncall_marks(oncall: OnCall, view: TaskView) -> tuple[str, ...]:
    """The task's on-call words: ``acked``, ``silenced``, both or none."""
    marks = []
    if oncall.ack_for(view.task_id) is not None:
        marks.append(ACKED)
    if oncall.silences and oncall.silence_for(view.task) is not None:
        marks.append(SILENCED)
    return tuple(marks)


def marked_notes(notes: Mapping[str, str], snapshot: Snapshot) -> dict[str, str]:
    """The rows' notes with each task's on-call mark added."""
    oncall = snapshot.oncall
    merged = dict(notes)
    if not oncall.acks and not oncall.silences:
        return merged
    for view in snapshot.tasks:
        marks = oncall_marks(oncall, view)
        if marks:
            merged[view.task_id] = notes.get(view.task_id, "") + MARK_SEPARATOR + " ".join(marks)
    return merged


def note_outcome(note: str | None) -> str | None:
    """The action outcome part of a row's note."""
    if note is None:
        return None
    outcome = note.partition(MARK_SEPARATOR)[0]
    return outcome or None


def note_marks(note: str | None) -> tuple[str, ...]:
    """The on-call mark words of a row's note."""
    if note is None or MARK_SEPARATOR not in note:
        return ()
    return tuple(note.partition(MARK_SEPARATOR)[2].split())


def mark_text(marks: Sequence[str]) -> Text:
    """``✓acked `` / ``⊘silenced ``: what goes before a task id on a row and on the wall."""
    text = Text()
    for word in marks:
        glyph, style = MARKS[word]
        text.append(f"{glyph}{word} ", style=style)
    return text
