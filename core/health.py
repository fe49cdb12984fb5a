"""What a verdict says: the healths in urgency order with what each one means to every module,
and the flags shown beside a health."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum

from zombietop.model import TaskState


class RowOrder(StrEnum):
    """How the rows of one health sort among themselves, after the health's rank."""

    SILENCE = "silence"
    """The longest without a heartbeat first."""
    FLAT = "flat"
    """The longest without progress first: these tasks beat, so their silence orders nothing."""
    TASK_ID = "task_id"
    """By task id, so that rows keep their place as they beat."""


class NagiosLevel(IntEnum):
    """A state of the Nagios plugin API, which every monitoring system reads: ``status`` exits
    with the worst one it finds."""

    OK = 0
    """Nothing needs a human."""
    WARNING = 1
    """A task is spinning or over one of its budgets, or a schedule runs long: look soon."""
    CRITICAL = 2
    """A task is dead, orphaned, stalled or reclaimable, or a schedule missed: act now."""
    UNKNOWN = 3
    """The store or the config could not be read: zombietop cannot say."""


class WatchReaction(StrEnum):
    """What the watchdog does with a task of one health (``Health.watch``)."""

    PAGE = "page"
    """It opens an incident and pages a human."""
    DIGEST = "digest"
    """It logs the task once, and lists it in a digest every ``[watch] digest_every``: nobody
    is woken, but nothing is dropped."""
    QUIET = "quiet"
    """It says nothing: the task needs nobody, or a human was already told."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthTraits:
    """What one health means to each module that reads it: one row of ``HEALTH_TRAITS``."""

    pages: bool = False
    """It wakes a human: the watchdog opens an incident, and ``status`` exits CRITICAL."""
    warns: bool = False
    """Someone should look soon, but nobody is woken: ``status`` exits WARNING, and the
    watchdog logs the task and lists it in its digest."""
    asks_a_human: bool = False
    """A human must decide what to do: the page line ends with "resume or discard"."""
    asks_to_kill: bool = False
    """A process runs on that nothing will stop: the page line ends with "kill it"."""
    holds: bool = False
    """The watchdog quarantines the task when its incident opens, so dependents wait."""
    needs_attention: bool = False
    """Something is wrong with the task: the wall lists it among the offenders."""
    blocks_dependents: bool = False
    """A task queued behind it is blocked, not just waiting for its turn."""
    retryable: bool = False
    """Its work surely runs no more, so the watchdog may run it again where the step type sets
    ``auto_retry``."""
    finished: bool = False
    """The task has ended: the header and the wall count it apart from the active ones."""
    order: RowOrder = RowOrder.TASK_ID
    """How rows of this health sort among themselves."""

    def __post_init__(self) -> None:
        if self.pages and self.warns:
            raise ValueError("a health pages or warns, never both: a page is already a warning")


class Health(StrEnum):
    """The verdict on a task; members are declared from most to least urgent.

    Each member has one row in ``HEALTH_TRAITS``, which says what it pages, asks and warns and
    how its rows sort; every module asks these properties, and none keeps a set of healths.
    """

    DEAD = "dead"
    """Claims to run but its process is gone, a zombie, or its PID belongs to another process."""
    ORPHANED = "orphaned"
    """Finished (by the engine's word or ours), but its process, identity checked, still runs."""
    RECLAIMABLE = "reclaimable"
    """The lease expired: anyone may reclaim the task."""
    STALLED = "stalled"
    """No heartbeat within the heartbeat timeout ("playing dead"): page."""
    SPINNING = "spinning"
    """Beating, but progress has not moved within the progress timeout: log, lower severity."""
    QUARANTINED = "quarantined"
    """Held by the watchdog or an operator; dependents blocked until a human resolves it."""
    INTERRUPTED = "interrupted"
    """Stopped by a kill (operator, watchdog, lost lease) or SIGTERM, whatever its exit status."""
    STARTING = "starting"
    """Claimed, not yet beating, within its start grace."""
    QUEUED = "queued"
    """Waiting; no heartbeat expected."""
    HEALTHY = "healthy"
    """Running, heartbeat fresh, progress moving."""
    FAILED = "failed"
    """Finished with an error (above succeeded: a failed run among many good ones is the row
    to see)."""
    SUCCEEDED = "succeeded"
    """Finished successfully."""
    DISCARDED = "discarded"
    """Given up by an operator."""

    @classmethod
    def of_finished(cls, state: TaskState) -> Health:
        """The health of a task whose state is final, before its process is checked (a process
        that lives on makes it orphaned)."""
        try:
            return _FINISHED_HEALTH[state]
        except KeyError:
            raise ValueError(f"{state} is not a finished state") from None

    @classmethod
    def of_quiet(cls) -> dict[TaskState, Health]:
        """By state, the health of a task a store proves quiet (``zombietop.judge.quiet``): it
        runs and is healthy, or it waits in the queue."""
        return dict(_QUIET_HEALTH)

    @property
    def rank(self) -> int:
        """Position in urgency order: 0 is the most urgent."""
        return _HEALTH_RANK[self]

    @property
    def traits(self) -> HealthTraits:
        return HEALTH_TRAITS[self]

    @property
    def pages(self) -> bool:
        return HEALTH_TRAITS[self].pages

    @property
    def warns(self) -> bool:
        return HEALTH_TRAITS[self].warns

    @property
    def asks_a_human(self) -> bool:
        return HEALTH_TRAITS[self].asks_a_human

    @property
    def asks_to_kill(self) -> bool:
        return HEALTH_TRAITS[self].asks_to_kill

    @property
    def holds(self) -> bool:
        return HEALTH_TRAITS[self].holds

    @property
    def needs_attention(self) -> bool:
        return HEALTH_TRAITS[self].needs_attention

    @property
    def blocks_dependents(self) -> bool:
        return HEALTH_TRAITS[self].blocks_dependents

    @property
    def retryable(self) -> bool:
        return HEALTH_TRAITS[self].retryable

    @property
    def finished(self) -> bool:
        return HEALTH_TRAITS[self].finished

    @property
    def order(self) -> RowOrder:
        return HEALTH_TRAITS[self].order

    @property
    def watch(self) -> WatchReaction:
        """What the watchdog does with the task: a warning health is always digested, so a new
        one is logged without a line of the watchdog changed."""
        traits = HEALTH_TRAITS[self]
        if traits.pages:
            return WatchReaction.PAGE
        return WatchReaction.DIGEST if traits.warns else WatchReaction.QUIET

    @property
    def nagios_level(self) -> NagiosLevel:
        """What ``status`` exits with for a task of this health and no budget flag."""
        traits = HEALTH_TRAITS[self]
        if traits.pages:
            return NagiosLevel.CRITICAL
        return NagiosLevel.WARNING if traits.warns else NagiosLevel.OK


_HEALTH_RANK = {health: rank for rank, health in enumerate(Health)}
_QUIET_HEALTH = {TaskState.RUNNING: Health.HEALTHY, TaskState.QUEUED: Health.QUEUED}
_FINISHED_HEALTH = {
    TaskState.SUCCEEDED: Health.SUCCEEDED,
    TaskState.FAILED: Health.FAILED,
    TaskState.DISCARDED: Health.DISCARDED,
}
HEALTH_TRAITS: Mapping[Health, HealthTraits] = {
    Health.DEAD: HealthTraits(
        pages=True,
        asks_a_human=True,
        needs_attention=True,
        blocks_dependents=True,
        retryable=True,
        holds=True,
        order=RowOrder.SILENCE,
    ),
    # Its state is final, so there is nothing to hold: the process is what must stop.
    Health.ORPHANED: HealthTraits(
        pages=True, asks_to_kill=True, needs_attention=True, blocks_dependents=True
    ),
    Health.RECLAIMABLE: HealthTraits(
        pages=True,
        asks_a_human=True,
        needs_attention=True,
        blocks_dependents=True,
        retryable=True,
        holds=True,
        order=RowOrder.SILENCE,
    ),
    # The process may still run: retrying a stalled task could run its work twice.
    Health.STALLED: HealthTraits(
        pages=True,
        asks_a_human=True,
        needs_attention=True,
        blocks_dependents=True,
        holds=True,
        order=RowOrder.SILENCE,
    ),
    Health.SPINNING: HealthTraits(
        warns=True, needs_attention=True, blocks_dependents=True, order=RowOrder.FLAT
    ),
    Health.QUARANTINED: HealthTraits(
        asks_a_human=True, needs_attention=True, blocks_dependents=True
    ),
    Health.INTERRUPTED: HealthTraits(
        asks_a_human=True, needs_attention=True, blocks_dependents=True
    ),
    Health.STARTING: HealthTraits(),
    Health.QUEUED: HealthTraits(),
    Health.HEALTHY: HealthTraits(),
    Health.FAILED: HealthTraits(finished=True, blocks_dependents=True),
    Health.SUCCEEDED: HealthTraits(finished=True),
    Health.DISCARDED: HealthTraits(finished=True, blocks_dependents=True),
}
"""What each health pages, asks, warns, and how its rows sort: one row per member, so a new
health is its member, its row here, its rule in ``classify`` and its look in
``zombietop.tui.healths``."""


class Flag(StrEnum):
    """A condition shown beside the health, never instead of it: a budget overrun, or a run
    judged against its queue or its job's history. Any flag makes ``status`` a WARNING, and a
    page leads with it; each member says when it is raised."""

    REQUEST_OVERRUN = "request_overrun"
    """The in-flight request has run past the request timeout."""
    STAGE_OVERRUN = "stage_overrun"
    """The current stage has run past the stage timeout."""
    TASK_OVERRUN = "task_overrun"
    """The task has run past the task timeout (logged only, never kills)."""
    REDELIVERED = "redelivered"
    """A queue handed the task to a worker again while it was still held: the same id active
    twice, or active and reserved at once (Celery's acks_late past the visibility timeout)."""
    QUEUED_TOO_LONG = "queued_too_long"
    """Queued or scheduled longer than ``queue_timeout``, with the engine's reason if known."""
    SLOWER_THAN_USUAL = "slower_than_usual"
    """The run is still going past ``slow_after`` times its job's median successful run (and
    at least ``slow_min`` past it), once the job has ``history_min_runs`` of them."""
    FINISHED_TOO_FAST = "finished_too_fast"
    """The run succeeded in under ``too_fast_below`` times its job's median successful run: a
    backup that copied nothing."""
    RUNS_LATE_USUALLY = "runs_late_usually"
    """The job's latest ``history_min_runs`` runs started at intervals that spread more than
    ``drift_after`` times as much as the intervals before them: its start times drift."""
    FAILING_MORE = "failing_more"
    """The job's runs failed ``failing_after`` times as often in the last day as in the last
    30 days (once it has ``failing_min_runs`` runs in them)."""
    FLAPPING = "flapping"
    """The health went into and out of one that pages more than ``flap_threshold`` times
    within ``flap_window``: one notice, then no page until it stays ``flap_window`` without a
    flip."""

    @property
    def traits(self) -> FlagTraits:
        return FLAG_TRAITS[self]

    @property
    def pages_once(self) -> bool:
        return FLAG_TRAITS[self].pages_once

    @property
    def per_job(self) -> bool:
        return FLAG_TRAITS[self].per_job

    @property
    def mark(self) -> str:
        """The word shown beside a task id that carries the flag (``!queued``)."""
        return FLAG_TRAITS[self].mark


@dataclass(frozen=True, slots=True, kw_only=True)
class FlagTraits:
    """What one flag means to each module that reads it: one row of ``FLAG_TRAITS``."""

    mark: str
    """The word shown after the flag's glyph beside a task id (``!stage``). Every flag must
    have one, so no screen meets a flag it cannot draw."""
    glyph: str = "!"
    """The glyph before the word: ``!`` for a limit passed, another for what is not a limit."""
    urgent: bool = False
    """The mark is drawn in the colour of a page: the same work may run twice."""
    pages_once: bool = False
    """The watchdog pages it once per task (the budget flags have their own reactions)."""
    per_job: bool = False
    """It speaks of the task's job, not of one run: the watchdog pages it once a day per job,
    whichever of the job's runs carries it."""


FLAG_TRAITS: Mapping[Flag, FlagTraits] = {
    Flag.REQUEST_OVERRUN: FlagTraits(mark="request"),
    Flag.STAGE_OVERRUN: FlagTraits(mark="stage"),
    Flag.TASK_OVERRUN: FlagTraits(mark="task"),
    Flag.REDELIVERED: FlagTraits(mark="twice", glyph="⧉", urgent=True, pages_once=True),
    Flag.QUEUED_TOO_LONG: FlagTraits(mark="queued", pages_once=True),
    Flag.SLOWER_THAN_USUAL: FlagTraits(mark="slow", pages_once=True),
    Flag.FINISHED_TOO_FAST: FlagTraits(mark="too fast", pages_once=True),
    Flag.RUNS_LATE_USUALLY: FlagTraits(mark="drifts", pages_once=True, per_job=True),
    Flag.FAILING_MORE: FlagTraits(mark="failing", pages_once=True, per_job=True),
    # Not pages_once: the watchdog's flap watch sends its notice and its all-clear itself.
    Flag.FLAPPING: FlagTraits(mark="flapping", glyph="~"),
}
"""What each flag pages and how it is marked: one row per member, so a new flag is its member,
its row here and the rule in ``classify`` that raises it."""

_WITHOUT_TRAITS = [flag for flag in Flag if flag not in FLAG_TRAITS]
if _WITHOUT_TRAITS:
    # Fail at import, not at the first poll that raises the flag (a dashboard crashed so).
    raise TypeError(f"zombietop.health: no row in FLAG_TRAITS for {_WITHOUT_TRAITS}")


class ScheduleHealth(StrEnum):
    """The verdict on a schedule; declared from most to least urgent."""

    MISSED = "missed"
    """A fire time passed its grace with no run of the step started: page, like a stall."""
    RUNNING_LONG = "running_long"
    """A run is still going at the next fire time (overlap) or past max_runtime: shown."""
    LATE = "late"
    """A fire time passed and no run started yet, but the grace has not run out: shown."""
    OK = "ok"
    """The latest fire time has its run."""

    @property
    def pages(self) -> bool:
        return self is ScheduleHealth.MISSED
