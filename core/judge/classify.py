"""The verdict on one task: a pure function of what the store and the probe saw, and of ``now``.

``classify`` never reads the clock, the store or the OS; every rule is table-tested. A verdict
carries moments (a heartbeat written, a lease's expiry, each reason's ``since``), not ages: its
words, ages and budgets are composed with the reader's ``now``, so a verdict the dashboard keeps
between polls reads true at any moment before its ``stable_until``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from zombietop.config import Limits
from zombietop.durations import format_duration
from zombietop.health import Flag, Health, RowOrder
from zombietop.job_summary import JobSummary
from zombietop.judge.budgets import overruns, start_of, used
from zombietop.judge.history_judge import judge_history
from zombietop.judge.job_trends import judge_trends
from zombietop.judge.verdict import (
    IDLE_REASON,
    REDELIVERED_REASON,
    Judged,
    Reason,
    Verdict,
    format_progress,
)
from zombietop.model import Heartbeat, HeartbeatSource, Lease, ProcessSample, Task, TaskState
from zombietop.process_words import STOPPED

INF = float("inf")
RECORD_GRACE_MAX = 30.0
"""At most this long a supervisor that still beats is given to record how its task ended."""


def classify(
    now: float,
    task: Task,
    lease: Lease | None,
    heartbeat: Heartbeat | None,
    process: ProcessSample | None,
    limits: Limits,
    *,
    waiting_on: Sequence[tuple[str, Health]] = (),
    not_started: Sequence[str] = (),
    history: JobSummary | None = None,
) -> Verdict:
    """Classify one task at ``now``.

    ``waiting_on`` lists the upstream tasks that have not succeeded, with their healths, so a
    queued task can say what it waits behind; ``not_started``, the upstream names a waiting
    ``run --wait`` holds out for that are no task yet. ``history`` is the summary of the task's job,
    which a run is judged against (``history_judge``).
    """
    reasons: list[Reason] = []
    state = task.state
    executing = state.executing
    if state.finished:
        health = _finished_rules(task, process, limits, reasons)
    elif executing:
        _executing_rules(now, task, lease, heartbeat, process, limits, reasons)
        # Most tasks are healthy: no reason, nothing to rank.
        health = (
            min((r.health for r in reasons if r.health is not None), key=_rank, default=None)
            if reasons
            else None
        ) or (
            Health.STARTING if state is TaskState.STARTING and heartbeat is None else Health.HEALTHY
        )
    else:
        health = _waiting_rules(now, task, heartbeat, limits, waiting_on, reasons)
        reasons.extend(
            Reason(code="waiting_on_upstream", before=f"waiting for {name}: not started yet")
            for name in not_started
        )
        if _waiter_lost(now, task, lease, limits, reasons):
            health = Health.RECLAIMABLE

    if task.heartbeat_error:
        error = f": {task.heartbeat_error}"
        reasons.append(
            _ago("heartbeat_malformed", "bad heartbeat line", task.heartbeat_error_at, error)
        )

    if len(reasons) > 1:
        reasons.sort(key=_reason_rank)
    if executing:
        flags = overruns(used(now, task, heartbeat), limits)
        stable_until = _next_threshold(now, task, lease, heartbeat, process, limits)
    else:
        flags, stable_until = _queue_flags(now, task, limits)
        if lease is not None and lease.held and lease.expires_at is not None:
            stable_until = min(stable_until, max(lease.expires_at, now))  # a waiter's lease
    if task.redelivered:
        flags = (Flag.REDELIVERED, *flags)
        # The engine's own words (how often, and why) explain the flag on the row and the page.
        reasons.append(
            Reason(code=REDELIVERED_REASON, before=task.state_reason or "delivered again")
        )
    flags, history_changes = _history_flags(now, task, history, limits, flags, reasons)
    stable_until = min(stable_until, history_changes)
    return Verdict(
        health=health,
        reasons=tuple(reasons),
        flags=flags,
        stable_until=stable_until,
        heartbeat_at=None if heartbeat is None else heartbeat.written_at,
        lease_expires_at=lease.expires_at if lease is not None and lease.held else None,
        progress_changed_at=_flat_since(heartbeat, reasons),
        judged=Judged(task, heartbeat, lease, process, limits),
    )


def _waiting_rules(
    now: float,
    task: Task,
    heartbeat: Heartbeat | None,
    limits: Limits,
    waiting_on: Sequence[tuple[str, Health]],
    reasons: list[Reason],
) -> Health:
    """The health of a task that neither runs nor has finished: interrupted, queued (and
    behind what), or held in quarantine."""
    if task.quarantined:
        reasons.append(_quarantine_reason(task))
    if task.state is TaskState.INTERRUPTED:
        reasons.append(_interrupted_reason(task, heartbeat))
        return Health.QUARANTINED if task.quarantined else Health.INTERRUPTED
    for upstream, upstream_health in waiting_on:
        reasons.append(
            Reason(code="waiting_on_upstream", before=f"waiting on {upstream} ({upstream_health})")
        )
    if _queued_too_long(now, task, limits):
        reasons.append(_queue_reason(task, limits))
    return Health.QUARANTINED if task.quarantined else Health.QUEUED


def _waiter_lost(
    now: float, task: Task, lease: Lease | None, limits: Limits, reasons: list[Reason]
) -> bool:
    """True (and its reason said) for a queued task whose waiting wrapper (``run --wait``)
    stopped renewing its lease: nobody will start it now (held or not, as a stalled task)."""
    if task.state is not TaskState.QUEUED or lease is None:
        return False
    if not lease.held or lease.expires_at is None or now <= lease.expires_at:
        return False
    words = (f"waiting wrapper {lease.owner} gone: lease expired ", lease.expires_at, " ago")
    reasons.append(_late("waiter_lost", Health.RECLAIMABLE, words, ("ttl", limits.lease_ttl)))
    return True


def _flat_since(heartbeat: Heartbeat | None, reasons: list[Reason]) -> float | None:
    """When progress last moved: for a task stalled on an idle process, when it went idle."""
    for reason in reasons:
        if reason.code == IDLE_REASON:
            return reason.since
    return None if heartbeat is None else heartbeat.progress_changed_at


def _history_flags(
    now: float,
    task: Task,
    history: JobSummary | None,
    limits: Limits,
    flags: tuple[Flag, ...],
    reasons: list[Reason],
) -> tuple[tuple[Flag, ...], float]:
    """The flags with the one the job's history raises (its reason added to ``reasons``), and
    the moment that judgement next changes."""
    trends, trends_change = judge_trends(now, task, history, limits)
    for trend in trends:
        flags = (*flags, trend.flag)
        reasons.append(trend.reason)
    judged, changes = judge_history(now, task, history, limits)
    changes = min(changes, trends_change)
    if judged is None:
        return flags, changes
    reasons.append(
        Reason(
            code=judged.code,
            before=judged.before,
            since=judged.since,
            after=judged.after,
            limit=judged.usual.median_s,
        )
    )
    return (*flags, judged.flag), changes


def _next_threshold(
    now: float,
    task: Task,
    lease: Lease | None,
    heartbeat: Heartbeat | None,
    process: ProcessSample | None,
    limits: Limits,
) -> float:
    """The earliest moment after ``now`` at which an executing task crosses a threshold.

    Mirrors the rules: each is a ``now > moment + limit`` test, so nothing changes while
    ``now`` stays at or before that sum. Thresholds already crossed stay crossed.
    """
    start = start_of(task)
    moments = [start + limits.task]
    if lease is not None and lease.held and lease.expires_at is not None:
        moments.append(lease.expires_at)
    if heartbeat is None:
        if task.state is TaskState.STARTING:
            claimed = task.claimed_at if task.claimed_at is not None else task.created_at
            moments.append(claimed + limits.start_grace)
        else:
            moments.append(start + limits.heartbeat_timeout)
        moments.append(start + limits.stage)
    else:
        moments.append(heartbeat.written_at + limits.heartbeat_timeout)
        moments.append(heartbeat.progress_changed_at + limits.progress_timeout)
        idle_since = _idle_since(heartbeat, process)
        if idle_since is not None:
            moments.append(idle_since + limits.idle_timeout)
        if process is not None and _exit_unrecorded(process, heartbeat, limits):
            moments.append(heartbeat.written_at + record_grace(limits))
        moments.append(heartbeat.stage_started_at + limits.stage)
        if heartbeat.request_name and heartbeat.request_started_at is not None:
            moments.append(heartbeat.request_started_at + limits.request)
    soonest = INF  # min() over a generator costs more than the rest of this function
    for moment in moments:
        if now <= moment < soonest:
            soonest = moment
    return soonest


def _rank(health: Health | None) -> int:
    return len(Health) if health is None else health.rank


def _reason_rank(reason: Reason) -> int:
    return _rank(reason.health)


def _executing_rules(
    now: float,
    task: Task,
    lease: Lease | None,
    heartbeat: Heartbeat | None,
    process: ProcessSample | None,
    limits: Limits,
    reasons: list[Reason],
) -> None:
    said = _process_reason(now, process, heartbeat, limits)
    if said is not None:
        reasons.append(said)

    if lease is None or not lease.held:
        reasons.append(
            Reason(code="no_lease", before="no lease is held", health=Health.RECLAIMABLE)
        )
    elif lease.expires_at is None:
        # Held without an expiry: an engine without leases (Airflow's worker holds its task
        # instance until the scheduler fails it). It can go stale, never be reclaimed.
        pass
    elif now > lease.expires_at:
        expired = _late(
            "lease_expired",
            Health.RECLAIMABLE,
            ("lease expired ", lease.expires_at, " ago"),
            ("ttl", limits.lease_ttl),
        )
        # An engine's words on what becomes of the task (BullMQ: nothing, until a worker
        # starts); zombietop's own tasks keep an operator's reason there, said elsewhere.
        why = f": {task.state_reason}" if task.state_reason and limits.engine else ""
        reasons.append(replace(expired, after=expired.after + why))

    if heartbeat is None:
        if task.state is TaskState.STARTING:
            claimed = task.claimed_at if task.claimed_at is not None else task.created_at
            if now - claimed > limits.start_grace and task.command:
                reasons.append(_no_activity(claimed, ("start grace", limits.start_grace)))
            elif now - claimed > limits.start_grace:
                words = ("no first heartbeat ", claimed, " after claim")
                limit = ("start grace", limits.start_grace)
                late = _late("no_first_heartbeat", Health.STALLED, words, limit)
                # An engine's words on why (RQ: a start time that does not read).
                why = f": {task.state_reason}" if task.state_reason else ""
                reasons.append(replace(late, after=late.after + why))
        else:
            start = start_of(task)
            if now - start > limits.heartbeat_timeout and task.command:
                reasons.append(_no_activity(start, ("timeout", limits.heartbeat_timeout)))
            elif now - start > limits.heartbeat_timeout:
                words = ("no heartbeat ", start, " after start")
                limit = ("timeout", limits.heartbeat_timeout)
                reasons.append(_late("no_heartbeat", Health.STALLED, words, limit))
    else:
        reasons.extend(_beat_rules(now, heartbeat, process, limits))

    if task.quarantined:
        reasons.append(_quarantine_reason(task))


def _process_reason(
    now: float, process: ProcessSample | None, heartbeat: Heartbeat | None, limits: Limits
) -> Reason | None:
    """What the probe says against the task: its process gone (dead), or frozen while its
    worker beats for it (stalled); None when neither."""
    if process is None:
        return None
    if _exit_unrecorded(process, heartbeat, limits) and heartbeat is not None:
        if now - heartbeat.written_at <= record_grace(limits):
            # A task that raised exits seconds before its supervisor records "failed": that
            # is a normal end, not a death, while the supervisor still beats.
            engine = limits.engine or "its supervisor"
            grace = format_duration(record_grace(limits))
            what = f"pid {process.pid} exited; waiting up to {grace} for {engine} to record the end"
            return Reason(code="exit_unrecorded", before=what)
    if process.gone:
        if not process.alive:
            code, what = "process_gone", f"pid {process.pid} is gone"
        elif not process.identity_ok:
            code, what = (
                "pid_reused",
                f"pid {process.pid} now belongs to another process (pid reused)",
            )
        else:
            code, what = "process_zombie", f"pid {process.pid} exited and is a zombie (not reaped)"
        return Reason(code=code, before=what, health=Health.DEAD)
    if (
        process.status in STOPPED
        and heartbeat is not None
        and heartbeat.source is HeartbeatSource.SUPERVISOR
    ):
        # An engine beats for its task while the task's process is frozen (Celery, RQ), or
        # has not noticed yet that the beating worker itself is (BullMQ, Dramatiq).
        what = f"pid {process.pid} stopped (SIGSTOP) while its engine's beat says it runs"
        return Reason(code="process_stopped", before=what, health=Health.STALLED)
    return None


def record_grace(limits: Limits) -> float:
    """How long after its supervisor's latest beat a task whose process ended may wait for
    the engine's record of the end before it is ``dead``: one heartbeat interval, at most
    ``RECORD_GRACE_MAX``."""
    return min(limits.heartbeat_interval, RECORD_GRACE_MAX)


def _exit_unrecorded(process: ProcessSample, heartbeat: Heartbeat | None, limits: Limits) -> bool:
    """True for a task process that exited (gone or a zombie, not reused) under beats of a
    supervisor, which records how it ended a few seconds later."""
    return (
        heartbeat is not None
        and heartbeat.source is HeartbeatSource.SUPERVISOR
        and process.identity_ok
        and (not process.alive or process.status == "zombie")
    )


def _beat_rules(
    now: float, heartbeat: Heartbeat, process: ProcessSample | None, limits: Limits
) -> list[Reason]:
    """The rules for an executing task that has beaten: stale, or fresh but not moving."""
    reasons: list[Reason] = []
    written = heartbeat.written_at
    if now - written > limits.heartbeat_timeout and heartbeat.observed:
        reasons.append(_no_activity(written, ("timeout", limits.heartbeat_timeout)))
    elif now - written > limits.heartbeat_timeout:
        words = ("heartbeat ", written, " old")
        limit = ("timeout", limits.heartbeat_timeout)
        reasons.append(_late("heartbeat_stale", Health.STALLED, words, limit))
    elif (
        now - heartbeat.progress_changed_at > limits.progress_timeout and heartbeat.reports_progress
    ):
        # Spinning is a judgement on reported progress: observed beats only prove activity.
        progress = format_progress(heartbeat.progress)
        words = (
            f"beating but progress unchanged at {progress} for ",
            heartbeat.progress_changed_at,
            "",
        )
        limit = ("timeout", limits.progress_timeout)
        reasons.append(_late("progress_stuck", Health.SPINNING, words, limit))
    if now - written <= limits.heartbeat_timeout:
        # Fresh beats that prove only life, over a process that does nothing: the task hangs
        # (a sleep, a lock, a socket that never answers) while its supervisor beats for it.
        idle_since = _idle_since(heartbeat, process)
        if idle_since is not None and now - idle_since > limits.idle_timeout:
            reasons.append(_idle(heartbeat, idle_since, limits.idle_timeout))
    return reasons


def _idle_since(heartbeat: Heartbeat, process: ProcessSample | None) -> float | None:
    """When the task's process last used CPU or did I/O, for a beat that proves only life;
    None for a reported beat or when the probe cannot tell."""
    if not heartbeat.proves_life_only or process is None or process.gone:
        return None
    return None if process.idle_s is None else process.sampled_at - process.idle_s


def _idle(heartbeat: Heartbeat, since: float, limit: float) -> Reason:
    """Stalled under beats that prove life only: the process behind them does nothing."""
    who = "observed" if heartbeat.observed else "supervisor"
    return Reason(
        code=IDLE_REASON,
        health=Health.STALLED,
        before=f"{who} beats; task process idle ",
        since=since,
        after=" (no CPU, no I/O)",
        limit=limit,
    )


def _no_activity(since: float, limit: tuple[str, float]) -> Reason:
    """Stalled under ``zombietop run``, which saw the command's tree do nothing since."""
    words = ("no activity for ", since, ": cpu, I/O and output flat")
    return _late("no_activity", Health.STALLED, words, limit)


def _late(
    code: str, health: Health, words: tuple[str, float, str], limit: tuple[str, float]
) -> Reason:
    """A reason for a moment that came later than its limit allows: the ``words`` before the
    age, the moment, the words after; the limit's name and seconds."""
    before, since, after = words
    name, seconds = limit
    return Reason(
        code=code,
        health=health,
        before=before,
        since=since,
        after=f"{after} ({name} {format_duration(seconds)})",
        limit=seconds,
    )


def _quarantine_reason(task: Task) -> Reason:
    why = f": {task.quarantine_reason}" if task.quarantine_reason else ""
    by = f"quarantined by {task.quarantined_by or 'someone'}"
    return _ago("quarantined", by, task.quarantined_at, why, Health.QUARANTINED)


def _ago(
    code: str,
    head: str,
    at: float | None,
    tail: str,
    health: Health | None = None,
    *,
    ago: bool = True,
) -> Reason:
    """``HEAD AGE ago TAIL`` (``HEAD AGE TAIL`` without ``ago``), or ``HEADTAIL`` when the
    moment is not known."""
    if at is None:
        return Reason(code=code, health=health, before=head + tail)
    after = f" ago{tail}" if ago else tail
    return Reason(code=code, health=health, before=f"{head} ", since=at, after=after)


def _interrupted_reason(task: Task, heartbeat: Heartbeat | None) -> Reason:
    where = ""
    if heartbeat is not None:
        where = f" at stage={heartbeat.stage or '?'} p={format_progress(heartbeat.progress)}"
    checkpoint = f", checkpoint {task.checkpoint}" if task.checkpoint else ", no checkpoint"
    return Reason(
        code="interrupted",
        before=f"{task.state_reason or 'stopped by SIGTERM'}{where}{checkpoint}",
        health=Health.INTERRUPTED,
    )


def _finished_rules(
    task: Task, process: ProcessSample | None, limits: Limits, reasons: list[Reason]
) -> Health:
    """A finished task's health: its own word, or orphaned while its process lives on."""
    health = Health.of_finished(task.state)
    if process is not None and not process.gone:
        health = Health.ORPHANED
        reasons.append(_orphaned_reason(task, process, limits))
    reasons.append(_finished_reason(task))
    return health


def _orphaned_reason(task: Task, process: ProcessSample, limits: Limits) -> Reason:
    """``pid 17466 alive 18m after Airflow marked it failed``."""
    after = (
        f" after {limits.engine} marked it {task.state}" if limits.engine else " after it finished"
    )
    return _ago(
        "process_orphaned",
        f"pid {process.pid} alive",
        task.finished_at,
        after,
        Health.ORPHANED,
        ago=False,
    )


def _in_queue(task: Task, limits: Limits) -> bool:
    """True for a task that waits for a slot or a worker, with a queue timeout to keep."""
    return task.state is TaskState.QUEUED and task.waits_in_queue and limits.queue_timeout > 0


def _queued_too_long(now: float, task: Task, limits: Limits) -> bool:
    return _in_queue(task, limits) and now - task.created_at > limits.queue_timeout


def _queue_flags(now: float, task: Task, limits: Limits) -> tuple[tuple[Flag, ...], float]:
    """The flags of a task that does not execute, and until when they hold."""
    if _queued_too_long(now, task, limits):
        return (Flag.QUEUED_TOO_LONG,), INF
    if _in_queue(task, limits):
        return (), task.created_at + limits.queue_timeout
    return (), INF


def _queue_reason(task: Task, limits: Limits) -> Reason:
    """``queued 35m (queue timeout 30m): airflow state scheduled, pool zt_empty: ...``."""
    why = f": {task.state_reason}" if task.state_reason else ""
    return Reason(
        code="queued_too_long",
        before="queued ",
        since=task.created_at,
        after=f" (queue timeout {format_duration(limits.queue_timeout)}){why}",
        limit=limits.queue_timeout,
    )


def _finished_reason(task: Task) -> Reason:
    exit_code = "" if task.exit_code is None else f" (exit {task.exit_code})"
    why = f": {task.state_reason}" if task.state_reason else ""
    return _ago(str(task.state), str(task.state), task.finished_at, f"{exit_code}{why}")


def sort_key(task_id: str, verdict: Verdict) -> tuple[int, float, str]:
    """Most urgent first; then as the health's ``order`` says (the longest without a heartbeat
    first, or the longest without progress first); then by id, so rows keep their place as
    they beat.

    Ordered by a moment (when the heartbeat was written, when progress last moved), not by an
    age, so verdicts reached at different moments sort together; a task without that moment
    comes after those with it.
    """
    health = verdict.health
    order = health.order
    if order is RowOrder.SILENCE:
        moment = verdict.heartbeat_at
    elif order is RowOrder.FLAT:
        moment = verdict.progress_changed_at
    else:
        return (health.rank, 0.0, task_id)
    return (health.rank, moment if moment is not None else INF, task_id)
