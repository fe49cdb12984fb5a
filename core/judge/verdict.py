"""A verdict on one task, and the one line a page composes from it.

``classify`` makes verdicts; this module holds what a verdict is (its health, reasons, flags
and moments) and how its words are composed at a reader's ``now``, so that every reader of a
verdict, the page, the dashboard and ``status``, says it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zombietop.config import Limits
from zombietop.durations import format_age, format_duration
from zombietop.health import Flag, Health
from zombietop.judge.budgets import Budgets, measure_budgets, start_of
from zombietop.judge.history_judge import SLOW_REASON
from zombietop.model import Heartbeat, HeartbeatSource, Lease, ProcessSample, Task, TaskState
from zombietop.process_words import IO_IDLE_WORTH_SAYING, process_words
from zombietop.trace_context import shown_trace, trace_of

REDELIVERED_REASON = "redelivered"
"""The reason code that carries an engine's words on a task it delivered more than once."""
FLAPPING_REASON = "flapping"
"""The reason beside the flag ``flapping`` (``zombietop.judge.flapping``)."""
DRIFT_REASON = "runs_late_usually"
FAILING_REASON = "failing_more"
"""The reasons beside the flags of a job's trends (``zombietop.judge.job_trends``)."""
IDLE_REASON = "process_idle"
"""The reason of a task whose process does nothing while beats that prove only life go on."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reason:
    """One rule that fired: its words, and the moment and limit behind them."""

    code: str
    health: Health | None = None
    """The health this reason argues for; None for information that changes no verdict."""
    before: str
    """The words before the age (all the words, for a reason without ``since``)."""
    since: float | None = None
    """The moment the reason's age counts from: a heartbeat written, a lease's expiry."""
    after: str = ""
    """The words after the age."""
    limit: float | None = None
    """Seconds the rule allows past ``since``."""

    def words(self, now: float) -> str:
        """What the reason says at ``now``."""
        if self.since is None:
            return self.before
        return f"{self.before}{format_age(now - self.since)}{self.after}"

    def age(self, now: float) -> float | None:
        return None if self.since is None else now - self.since


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The health word, why, the budget flags, and the moments a page line is composed from."""

    health: Health
    reasons: tuple[Reason, ...]
    flags: tuple[Flag, ...]
    stable_until: float
    """Until this moment the same inputs give the same health, flags and reason codes: the
    earliest threshold still ahead (a lease expiring, a heartbeat going stale, a budget running
    out), or infinity. Only ages and countdowns move before it."""
    heartbeat_at: float | None
    """When the latest heartbeat was written (None before the first)."""
    lease_expires_at: float | None
    """When the held lease expires (None when none is held, or it is held without an expiry)."""
    progress_changed_at: float | None = None
    """When the reported progress last moved (None before the first heartbeat)."""
    judged: Judged = field(repr=False, compare=False)
    """What the verdict was made of: its budgets and page line are composed from it only for
    the few verdicts anyone reads."""

    def heartbeat_age(self, now: float) -> float | None:
        return None if self.heartbeat_at is None else now - self.heartbeat_at

    def lease_expires_in(self, now: float) -> float | None:
        """Seconds until the lease expires; negative once it has."""
        return None if self.lease_expires_at is None else self.lease_expires_at - now

    def budgets(self, now: float) -> Budgets:
        """Time used against each layer of the layered timeout, as of ``now``."""
        judged = self.judged
        return measure_budgets(judged.task, judged.heartbeat, judged.limits, now)

    def context(self, now: float) -> str:
        """The one line a page carries: enough to decide resume or discard in three seconds."""
        return page_line(self, now)


@dataclass(frozen=True, slots=True)
class Judged:
    """The rows and the limits a verdict was made of (a hundred thousand verdicts keep one of
    these each, and nothing composed)."""

    task: Task
    heartbeat: Heartbeat | None
    lease: Lease | None
    process: ProcessSample | None
    limits: Limits


def format_progress(progress: float | None) -> str:
    if progress is None:
        return "?"
    return f"{progress:.0f}%" if float(progress).is_integer() else f"{progress:.1f}%"


def page_line(verdict: Verdict, now: float) -> str:
    """Compose the one line a page carries at ``now``: enough to decide resume or discard.

    A page leads with what is wrong: the flags take the place of ``healthy`` (which pages for
    no other reason) and follow any other health word.
    """
    health, flags, reasons = verdict.health, verdict.flags, verdict.reasons
    judged = verdict.judged
    task, heartbeat, lease, process = judged.task, judged.heartbeat, judged.lease, judged.process
    limits = judged.limits
    head = f"{task.task_id} {_what_is_wrong(health, flags)}:"
    if heartbeat is not None and heartbeat.reports_progress:
        where = f" stage={heartbeat.stage}" if heartbeat.stage else ""
        head += f"{where} p={format_progress(heartbeat.progress)}"
    parts: list[str] = []
    if task.state.finished or (
        not task.state.executing and task.state is not TaskState.INTERRUPTED
    ):
        parts.extend(r.words(now) for r in reasons)
        parts.extend(_trace(task, heartbeat))
        line = f"{head} " + ", ".join(parts) if parts else head.rstrip(":")
        return line + _ask(health, limits)

    idle = [r.words(now) for r in reasons if r.code == IDLE_REASON]
    parts.extend(idle)  # what pages an idle task leads its line, as the seed's incident read
    # An engine's words on what becomes of a dead task, said once (Dramatiq: nothing until a
    # maintenance pass drawn at random; Prefect and Dagster: running with no process behind it).
    engine_words = task.state_reason if health is Health.DEAD and limits.engine else None
    if heartbeat is not None:
        observed = "" if heartbeat.source is HeartbeatSource.REPORTED else f"{heartbeat.source} "
        parts.append(f"{observed}heartbeat {format_age(now - heartbeat.written_at)} old")
    elif task.state.executing and engine_words:
        # No beat was ever to come (Dagster's run worker): not "no heartbeat yet".
        parts.append(engine_words)
        engine_words = None
    elif task.state.executing:
        starting = task.state is TaskState.STARTING
        why = f": {task.state_reason}" if task.state_reason and starting else ""
        parts.append(f"no heartbeat yet ({format_age(now - start_of(task))} since claim){why}")
    held = lease is not None and lease.held
    expires_at = lease.expires_at if lease is not None and held else None
    # A lease held without an expiry (an engine's) says nothing worth a page's words.
    if task.state.executing and not (held and expires_at is None):
        if expires_at is None:
            parts.append("no lease")
        elif now > expires_at:
            # An engine's words on what becomes of the task (BullMQ: nothing until a worker starts).
            why = f" ({task.state_reason})" if task.state_reason and limits.engine else ""
            parts.append(f"lease expired {format_age(now - expires_at)} ago{why}")
            engine_words = None
        else:
            parts.append(f"lease expires in {format_age(expires_at - now)}")
    if held and lease is not None and lease.over_http:
        parts.append("reported over HTTP (no process to probe)")
    if process is not None:
        # Idle past the idle timeout is worth saying however short that timeout is (and is
        # said once: an idle reason already said it).
        idle_after = None if idle else min(IO_IDLE_WORTH_SAYING, limits.idle_timeout)
        words = process_words(process, idle_after)
        parts.append(f"{words} ({engine_words})" if engine_words else words)
    budgets = verdict.budgets(now)
    for flag, budget, label in (
        (Flag.REQUEST_OVERRUN, budgets.request, "request"),
        (Flag.STAGE_OVERRUN, budgets.stage, "stage"),
        (Flag.TASK_OVERRUN, budgets.task, "task"),
    ):
        if flag in flags and budget.used_s is not None:
            name = f" {heartbeat.request_name}" if label == "request" and heartbeat else ""
            parts.append(
                f"{label}{name} running {format_age(budget.used_s)} "
                f"(budget {format_duration(budget.limit_s)})"
            )
    parts.extend(r.words(now) for r in reasons if r.code in _SAID_REASONS)
    if task.quarantined and health is not Health.QUARANTINED:
        parts.append("quarantined")
    if task.state is TaskState.INTERRUPTED:
        parts.append(f"checkpoint {task.checkpoint}" if task.checkpoint else "no checkpoint")
    parts.extend(_trace(task, heartbeat))
    line = f"{head} " + ", ".join(parts)
    return line + _ask(health, limits)


_SAID_REASONS = (SLOW_REASON, REDELIVERED_REASON, FLAPPING_REASON, DRIFT_REASON, FAILING_REASON)
"""The reasons a running task's page line says in words, after its budgets."""


def _trace(task: Task, heartbeat: Heartbeat | None) -> list[str]:
    """``trace 4bf92f35...``: the trace the task runs in, when one is known."""
    trace_id = trace_of(task, heartbeat)
    return [] if trace_id is None else [shown_trace(trace_id)]


def _ask(health: Health, limits: Limits) -> str:
    """What a page ends with: the actions that work on the task."""
    if health.asks_to_kill:
        return " - kill it"
    if not health.asks_a_human:
        return ""
    if limits.engine_actions:
        # resume and discard are refused for an engine's task: name what works instead.
        return f" - {limits.engine_actions}"
    return " - resume or discard"


def _what_is_wrong(health: Health, flags: tuple[Flag, ...]) -> str:
    """The words a page leads with: ``stalled``, ``stalled, stage_overrun``, ``request_overrun``."""
    if not flags:
        return str(health)
    said = ", ".join(flags)
    return said if health is Health.HEALTHY else f"{health}, {said}"
