"""The limits a task is judged by: its thresholds and its layered timeouts, with their defaults.

Part of the vocabulary: the config reads them from ``config.toml`` (``zombietop.config``, which
exports these names too), the judge and the sources read them, and none of those need the rest of
the config to do so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_SOURCE = "default"


THRESHOLD_DEFAULTS: dict[str, float] = {
    "heartbeat_interval": 10.0,
    "heartbeat_timeout": 120.0,
    "lease_ttl": 300.0,
    "progress_timeout": 1800.0,
    "start_grace": 60.0,
    "queue_timeout": 0.0,
    "idle_timeout": 1200.0,
    "flap_threshold": 6,
    "flap_window": 3600.0,
}
COUNT_KEYS = frozenset({"flap_threshold"})
"""The keys of ``THRESHOLD_DEFAULTS`` that are whole numbers, not durations."""
TIMEOUT_DEFAULTS: dict[str, float] = {
    "request": 90.0,
    "stage": 900.0,
    "task": 21600.0,
    "kill_grace": 30.0,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """One effective set of thresholds and timeouts (global, or a step type after merging)."""

    heartbeat_interval: float
    """How often ``zombietop run`` and the SDK beat and renew the lease."""
    heartbeat_timeout: float
    """A task with no heartbeat for this long is ``stalled``."""
    lease_ttl: float
    """A lease not renewed for this long expires: the task is ``reclaimable``."""
    progress_timeout: float
    """A task that beats but whose progress has not moved for this long is ``spinning``."""
    start_grace: float
    """A claimed task with no first heartbeat after this long is ``stalled``."""
    queue_timeout: float = 0.0
    """A task queued or scheduled longer than this is ``queued_too_long`` (0: never)."""
    idle_timeout: float = THRESHOLD_DEFAULTS["idle_timeout"]
    """A task whose process tree used no CPU and did no I/O this long, while beats that prove
    only life go on (an engine's supervisor beats for it), is ``stalled``."""
    flap_threshold: int = 6
    """A task whose health goes into or out of a health that pages more than this many times
    within ``flap_window`` is ``flapping``: one notice, then no page until it is steady."""
    flap_window: float = 3600.0
    """How far back the flips are counted, and how long a flapping task must stay without a
    flip to be steady again."""
    request: float
    """The budget of one outbound call (``request_overrun``): the job fails it fast."""
    stage: float
    """The budget of one stage (``stage_overrun``): the first overrun pages, a later one kills
    (``[watch] stage_kill_factor``)."""
    task: float
    """The budget of the whole task (``task_overrun``): logged only, never kills, because a
    checkpoint can resume it."""
    kill_grace: float
    """How long a kill waits after SIGTERM before it sends SIGKILL."""
    resume_command: tuple[str, ...] | None = None
    """What a resume runs: an argument list (never a shell string) with ``{task_id}`` and
    ``{checkpoint}`` filled in."""
    compensate_command: tuple[str, ...] | None = None
    """What a resume runs first, to undo a partial side effect: an argument list like
    ``resume_command``."""
    auto_retry: bool = False
    """The watchdog may run a dead or reclaimable task again on its own: for idempotent work."""
    max_retries: int = 3
    """With auto_retry: how many attempts in all before the watchdog leaves it to a human."""
    retry_backoff: float = 60.0
    """With auto_retry: wait before the first retry, doubling for each one after."""
    from_source: bool = False
    """The step type's tasks come from a read-only source (an Airflow DAG): a task instance
    is one stage, so its stage may last as long as its task, and is the task budget unless
    the section sets one."""
    history_min_runs: int = 5
    """How many successful runs a job needs before its runs are judged against them."""
    slow_after: float = 2.0
    """A running run past this many times the job's median is ``slower_than_usual``..."""
    slow_min: float = 300.0
    """...and only once it is at least this far past the median."""
    too_fast_below: float = 0.1
    """A run that succeeds in under this many times the median ``finished_too_fast``."""
    drift_after: float = 1.5
    """A job whose latest ``history_min_runs`` start intervals spread more than this many
    times as much as the intervals before them ``runs_late_usually``..."""
    drift_min: float = 60.0
    """...and only when they spread at least this much more (a cron job's seconds of jitter
    are no drift)."""
    failing_after: float = 3.0
    """A job whose runs failed this many times as often in the last day as in the last 30
    days is ``failing_more``..."""
    failing_min_runs: int = 20
    """...once it has this many runs in the last 30 days."""
    page_on_failure: bool = True
    """A failed run opens an incident and pages (false: the failure is someone else's)."""
    require_lease: bool | None = None
    """``zombietop run`` refuses to run the command when it cannot take the lease (the store
    cannot be used); None: only a ``--task`` or ``--after`` run does, a ``--job`` run goes on
    unwatched."""
    runbook: str | None = None
    """A link template filled with the task's fields (``zombietop.paging.runbooks``): what to do."""
    step_type: str | None = None
    engine: str | None = None
    """The engine that runs the tasks judged by these limits (``Airflow``), for the words of
    their verdicts and pages; None for zombietop's own tasks."""
    engine_actions: str | None = None
    """What works on such a task, for the end of its page (``clear it in Airflow, mark it
    failed, or kill it``): resume and discard are refused for an engine's task."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Key -> where its value came from: ``default``, or a file and section."""

    def source(self, key: str) -> str:
        return self.sources.get(key, DEFAULT_SOURCE)


def default_limits() -> Limits:
    values = {**THRESHOLD_DEFAULTS, **TIMEOUT_DEFAULTS}
    return Limits(
        heartbeat_interval=values["heartbeat_interval"],
        heartbeat_timeout=values["heartbeat_timeout"],
        lease_ttl=values["lease_ttl"],
        progress_timeout=values["progress_timeout"],
        start_grace=values["start_grace"],
        queue_timeout=values["queue_timeout"],
        idle_timeout=values["idle_timeout"],
        flap_threshold=int(values["flap_threshold"]),
        flap_window=values["flap_window"],
        request=values["request"],
        stage=values["stage"],
        task=values["task"],
        kill_grace=values["kill_grace"],
    )
