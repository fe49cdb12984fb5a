"""Every health rule, the precedence between them, every budget flag, and the page line."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from zombietop.config import default_limits
from zombietop.health import Flag, Health
from zombietop.judge.classify import classify, sort_key
from zombietop.model import Heartbeat, HeartbeatSource, Lease, ProcessSample, Task, TaskState

NOW = 1_796_000_000.0
LIMITS = default_limits()  # heartbeat 2m, lease 5m, progress 30m, grace 1m; 90s < 15m < 6h


def task(**overrides: Any) -> Task:
    fields: dict[str, Any] = {
        "task_id": "export-2031",
        "run_id": "nightly-1129",
        "step": "export",
        "step_type": "export",
        "state": TaskState.RUNNING,
        "created_at": NOW - 600,
        "claimed_at": NOW - 600,
        "started_at": NOW - 590,
        "updated_at": NOW - 5,
        "pid": 4121,
    }
    fields.update(overrides)
    return Task(**fields)


def lease(expires_in: float = 240.0, **overrides: Any) -> Lease:
    fields: dict[str, Any] = {
        "task_id": "export-2031",
        "owner": "w1@host",
        "token": 7,
        "expires_at": NOW + expires_in,
    }
    fields.update(overrides)
    return Lease(**fields)


def beat(
    age: float = 5.0, stuck: float = 5.0, stage_for: float = 60.0, **overrides: Any
) -> Heartbeat:
    fields: dict[str, Any] = {
        "task_id": "export-2031",
        "stage": "transform",
        "progress": 61.0,
        "counters": {"rows": 8_200_000},
        "written_at": NOW - age,
        "progress_changed_at": NOW - stuck,
        "stage_started_at": NOW - stage_for,
    }
    fields.update(overrides)
    return Heartbeat(**fields)


def proc(**overrides: Any) -> ProcessSample:
    fields: dict[str, Any] = {
        "pid": 4121,
        "alive": True,
        "status": "sleeping",
        "cpu_percent": 0.0,
        "sampled_at": NOW,
    }
    fields.update(overrides)
    return ProcessSample(**fields)


QUARANTINE = {
    "quarantined_at": NOW - 180,
    "quarantined_by": "watchdog",
    "quarantine_reason": "stalled",
}

# (id, task, lease, heartbeat, process, expected health, reason codes in order)
CASES = [
    ("healthy", task(), lease(), beat(), proc(cpu_percent=40.0), Health.HEALTHY, []),
    ("healthy-without-probe", task(), lease(), beat(), None, Health.HEALTHY, []),
    (
        "healthy-at-exact-heartbeat-timeout",
        task(),
        lease(),
        beat(age=120),
        None,
        Health.HEALTHY,
        [],
    ),
    (
        "dead-process-gone",
        task(),
        lease(),
        beat(),
        proc(alive=False),
        Health.DEAD,
        ["process_gone"],
    ),
    (
        "dead-pid-reused",
        task(),
        lease(),
        beat(),
        proc(identity_ok=False),
        Health.DEAD,
        ["pid_reused"],
    ),
    (
        "dead-zombie",
        task(),
        lease(),
        beat(),
        proc(status="zombie"),
        Health.DEAD,
        ["process_zombie"],
    ),
    (
        "orphaned-finished-but-alive",
        task(state=TaskState.FAILED, finished_at=NOW - 60, exit_code=1),
        None,
        beat(),
        proc(),
        Health.ORPHANED,
        ["process_orphaned", "failed"],
    ),
    (
        "reclaimable-lease-expired",
        task(),
        lease(expires_in=-1),
        beat(),
        None,
        Health.RECLAIMABLE,
        ["lease_expired"],
    ),
    ("reclaimable-no-lease", task(), None, beat(), None, Health.RECLAIMABLE, ["no_lease"]),
    (
        "reclaimable-released-lease",
        task(),
        lease(owner=None, expires_at=None),
        beat(),
        None,
        Health.RECLAIMABLE,
        ["no_lease"],
    ),
    (
        "stalled-heartbeat-stale",
        task(),
        lease(),
        beat(age=121),
        proc(),
        Health.STALLED,
        ["heartbeat_stale"],
    ),
    (
        "stalled-running-never-beat",
        task(started_at=NOW - 200),
        lease(),
        None,
        None,
        Health.STALLED,
        ["no_heartbeat"],
    ),
    (
        "running-never-beat-within-timeout",
        task(started_at=NOW - 100),
        lease(),
        None,
        None,
        Health.HEALTHY,
        [],
    ),
    (
        "stalled-starting-past-grace",
        task(state=TaskState.STARTING, claimed_at=NOW - 61, started_at=None),
        lease(),
        None,
        None,
        Health.STALLED,
        ["no_first_heartbeat"],
    ),
    (
        "starting-within-grace",
        task(state=TaskState.STARTING, claimed_at=NOW - 30, started_at=None),
        lease(),
        None,
        None,
        Health.STARTING,
        [],
    ),
    (
        "spinning",
        task(),
        lease(),
        beat(stuck=1801),
        proc(cpu_percent=100.0),
        Health.SPINNING,
        ["progress_stuck"],
    ),
    (
        "not-spinning-at-exact-progress-timeout",
        task(),
        lease(),
        beat(stuck=1800),
        None,
        Health.HEALTHY,
        [],
    ),
    (
        "stale-beat-is-stalled-not-spinning",
        task(),
        lease(),
        beat(age=500, stuck=5000),
        None,
        Health.STALLED,
        ["heartbeat_stale"],
    ),
    (
        "quarantined-running-healthy",
        task(**QUARANTINE),
        lease(),
        beat(),
        None,
        Health.QUARANTINED,
        ["quarantined"],
    ),
    (
        "quarantined-queued",
        task(state=TaskState.QUEUED, started_at=None, pid=None, **QUARANTINE),
        None,
        None,
        None,
        Health.QUARANTINED,
        ["quarantined"],
    ),
    (
        "interrupted",
        task(state=TaskState.INTERRUPTED, checkpoint="/ckpt/41"),
        lease(owner=None),
        beat(age=900),
        None,
        Health.INTERRUPTED,
        ["interrupted"],
    ),
    (
        "interrupted-and-quarantined",
        task(state=TaskState.INTERRUPTED, **QUARANTINE),
        None,
        beat(age=900),
        None,
        Health.QUARANTINED,
        ["quarantined", "interrupted"],
    ),
    (
        "queued",
        task(state=TaskState.QUEUED, claimed_at=None, started_at=None, pid=None),
        None,
        None,
        None,
        Health.QUEUED,
        [],
    ),
    (
        "queued-ignores-heartbeat-rules",
        task(state=TaskState.QUEUED, created_at=NOW - 86400),
        None,
        None,
        None,
        Health.QUEUED,
        [],
    ),
    (
        "succeeded",
        task(state=TaskState.SUCCEEDED, finished_at=NOW - 60, exit_code=0),
        None,
        beat(age=60),
        proc(alive=False),
        Health.SUCCEEDED,
        ["succeeded"],
    ),
    (
        "failed",
        task(state=TaskState.FAILED, finished_at=NOW - 60, exit_code=3),
        None,
        None,
        None,
        Health.FAILED,
        ["failed"],
    ),
    (
        "discarded-wins-over-quarantine",
        task(state=TaskState.DISCARDED, finished_at=NOW - 1, **QUARANTINE),
        None,
        None,
        None,
        Health.DISCARDED,
        ["discarded"],
    ),
    # Precedence: the most urgent wins, the others stay as reasons in urgency order.
    (
        "dead-beats-everything",
        task(**QUARANTINE),
        lease(expires_in=-60),
        beat(age=900, stuck=9000),
        proc(alive=False),
        Health.DEAD,
        ["process_gone", "lease_expired", "heartbeat_stale", "quarantined"],
    ),
    (
        "reclaimable-beats-stalled",
        task(),
        lease(expires_in=-10),
        beat(age=400),
        proc(),
        Health.RECLAIMABLE,
        ["lease_expired", "heartbeat_stale"],
    ),
    (
        "stalled-beats-quarantined",
        task(**QUARANTINE),
        lease(),
        beat(age=300),
        proc(),
        Health.STALLED,
        ["heartbeat_stale", "quarantined"],
    ),
    (
        "spinning-beats-quarantined",
        task(**QUARANTINE),
        lease(),
        beat(stuck=4000),
        None,
        Health.SPINNING,
        ["progress_stuck", "quarantined"],
    ),
    (
        "reclaimable-beats-starting-grace",
        task(state=TaskState.STARTING, claimed_at=NOW - 10, started_at=None),
        lease(expires_in=-1),
        None,
        None,
        Health.RECLAIMABLE,
        ["lease_expired"],
    ),
]


@pytest.mark.parametrize(
    ("the_task", "the_lease", "the_beat", "the_proc", "health", "codes"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_health_rules_and_precedence(
    the_task: Task,
    the_lease: Lease | None,
    the_beat: Heartbeat | None,
    the_proc: ProcessSample | None,
    health: Health,
    codes: list[str],
) -> None:
    verdict = classify(NOW, the_task, the_lease, the_beat, the_proc, LIMITS)
    assert verdict.health is health
    assert [r.code for r in verdict.reasons] == codes
    assert verdict.context(NOW).startswith(f"export-2031 {health}")


def test_every_health_is_covered_by_a_rule() -> None:
    assert {case[5] for case in CASES} == set(Health)


def test_reasons_carry_ages_and_limits() -> None:
    verdict = classify(NOW, task(), lease(expires_in=-230), beat(age=4 * 3600 + 720), None, LIMITS)
    stale = next(r for r in verdict.reasons if r.code == "heartbeat_stale")
    assert stale.age(NOW) == 4 * 3600 + 720
    assert stale.limit == 120
    assert stale.words(NOW) == "heartbeat 4h12m old (timeout 2m)"
    expired = next(r for r in verdict.reasons if r.code == "lease_expired")
    assert expired.words(NOW) == "lease expired 3m50s ago (ttl 5m)"


# (id, heartbeat overrides / task overrides, flags)
BUDGET_CASES = [
    ("none", {}, {}, ()),
    ("request-at-limit", {"request_name": "s3.put", "request_started_at": NOW - 90}, {}, ()),
    (
        "request-over",
        {"request_name": "s3.put", "request_started_at": NOW - 91},
        {},
        (Flag.REQUEST_OVERRUN,),
    ),
    ("stage-over", {"stage_started_at": NOW - 901}, {}, (Flag.STAGE_OVERRUN,)),
    ("task-over", {}, {"started_at": NOW - 21601}, (Flag.TASK_OVERRUN,)),
    (
        "all-three",
        {
            "request_name": "api",
            "request_started_at": NOW - 3 * 3600,
            "stage_started_at": NOW - 7 * 3600,
        },
        {"started_at": NOW - 8 * 3600},
        (Flag.REQUEST_OVERRUN, Flag.STAGE_OVERRUN, Flag.TASK_OVERRUN),
    ),
    (
        "finished-tasks-carry-no-flags",
        {"stage_started_at": NOW - 7 * 3600},
        {"state": TaskState.SUCCEEDED, "started_at": NOW - 8 * 3600, "finished_at": NOW},
        (),
    ),
]


@pytest.mark.parametrize(
    ("beat_fields", "task_fields", "flags"),
    [pytest.param(*case[1:], id=case[0]) for case in BUDGET_CASES],
)
def test_budget_flags(
    beat_fields: dict[str, Any], task_fields: dict[str, Any], flags: tuple[Flag, ...]
) -> None:
    verdict = classify(NOW, task(**task_fields), lease(), beat(**beat_fields), None, LIMITS)
    assert verdict.flags == flags


def test_budgets_are_not_a_health() -> None:
    verdict = classify(NOW, task(), lease(), beat(stage_for=3600), None, LIMITS)
    assert verdict.health is Health.HEALTHY
    assert verdict.flags == (Flag.STAGE_OVERRUN,)
    assert verdict.budgets(NOW).stage.used_s == 3600
    assert verdict.budgets(NOW).stage.limit_s == 900
    assert verdict.budgets(NOW).stage.source == "default"
    assert verdict.budgets(NOW).request.used_s is None


def test_running_without_heartbeat_uses_its_start_for_the_stage_budget() -> None:
    verdict = classify(NOW, task(started_at=NOW - 1000), lease(), None, None, LIMITS)
    assert verdict.budgets(NOW).stage.used_s == 1000
    assert Flag.STAGE_OVERRUN in verdict.flags


def test_the_seed_incident_page_line() -> None:
    """The line from DESIGN.md: everything needed to decide in three seconds."""
    verdict = classify(
        NOW,
        task(started_at=NOW - 5 * 3600),
        lease(expires_in=-(3 * 3600 + 50 * 60)),
        beat(age=4 * 3600 + 12 * 60, stage_for=4 * 3600 + 13 * 60),
        proc(cpu_percent=0.0, io_idle_s=3 * 3600),
        replace(LIMITS, stage=6 * 3600, task=8 * 3600),
    )
    assert verdict.health is Health.RECLAIMABLE
    assert verdict.context(NOW) == (
        "export-2031 reclaimable: stage=transform p=61% heartbeat 4h12m old, lease expired 3h50m ago, "
        "pid 4121 alive cpu 0%, no I/O for 3h00m - resume or discard"
    )


def test_page_line_for_a_stalled_task_with_an_overrun() -> None:
    verdict = classify(NOW, task(), lease(), beat(age=600, stage_for=1200), proc(), LIMITS)
    assert verdict.context(NOW) == (
        "export-2031 stalled, stage_overrun: stage=transform p=61% heartbeat 10m00s old, "
        "lease expires in 4m00s, pid 4121 alive cpu 0%, stage running 20m00s (budget 15m) "
        "- resume or discard"
    )


HUNG = {"request_name": "POST partner-api/v2/orders", "request_started_at": NOW - 100}

# (id, task, heartbeat, process, the page line up to the heartbeat's age or the whole line)
PAGE_LINE_CASES = [
    (
        "a-request-overrun-leads-never-healthy",
        task(),
        beat(age=0, **HUNG),
        proc(),
        "export-2031 request_overrun: stage=transform p=61% heartbeat 0s old, lease expires in "
        "4m00s, pid 4121 alive cpu 0%, request POST partner-api/v2/orders running 1m40s "
        "(budget 90s)",
    ),
    (
        "two-flags-lead-in-order",
        task(started_at=NOW - 7 * 3600),
        beat(age=0, stage_for=1000, **HUNG),
        None,
        "export-2031 request_overrun, stage_overrun, task_overrun: stage=transform p=61% "
        "heartbeat 0s old, lease expires in 4m00s, request POST partner-api/v2/orders running "
        "1m40s (budget 90s), stage running 16m40s (budget 15m), task running 7h00m "
        "(budget 6h)",
    ),
    (
        "a-flag-follows-any-other-health",
        task(),
        beat(age=0, stuck=4000, **HUNG),
        proc(),
        "export-2031 spinning, request_overrun: stage=transform p=61% heartbeat 0s old, "
        "lease expires in 4m00s, pid 4121 alive cpu 0%, request POST partner-api/v2/orders "
        "running 1m40s (budget 90s)",
    ),
    (
        "a-tree-without-a-cpu-figure-leaves-no-comma",
        task(),
        beat(age=300),
        proc(children=1, cpu_percent=None),
        "export-2031 stalled: stage=transform p=61% heartbeat 5m00s old, lease expires in 4m00s, "
        "pid 4121 + 1 child - resume or discard",
    ),
    (
        "a-tree-without-a-cpu-figure-then-quarantined",
        task(**QUARANTINE),
        beat(age=300),
        proc(children=1, cpu_percent=None),
        "export-2031 stalled: stage=transform p=61% heartbeat 5m00s old, lease expires in 4m00s, "
        "pid 4121 + 1 child, quarantined - resume or discard",
    ),
    (
        "a-tree-with-a-cpu-figure-says-it-is-the-trees",
        task(),
        beat(age=300),
        proc(children=2, cpu_percent=3.0),
        "export-2031 stalled: stage=transform p=61% heartbeat 5m00s old, lease expires in 4m00s, "
        "pid 4121 + 2 children, cpu 3% - resume or discard",
    ),
]


@pytest.mark.parametrize(
    ("the_task", "the_beat", "the_proc", "line"),
    [pytest.param(*case[1:], id=case[0]) for case in PAGE_LINE_CASES],
)
def test_page_lines(
    the_task: Task, the_beat: Heartbeat, the_proc: ProcessSample | None, line: str
) -> None:
    """DESIGN.md: "a page leads with the flag, never with 'healthy'"; no dangling commas."""
    verdict = classify(NOW, the_task, lease(), the_beat, the_proc, LIMITS)
    assert verdict.context(NOW) == line
    assert " healthy" not in line and ",," not in line and ", -" not in line


def test_queued_task_says_what_it_waits_behind() -> None:
    verdict = classify(
        NOW,
        task(state=TaskState.QUEUED, started_at=None),
        None,
        None,
        None,
        LIMITS,
        waiting_on=[("export-2030", Health.QUARANTINED)],
    )
    assert verdict.health is Health.QUEUED
    assert verdict.context(NOW) == "export-2031 queued: waiting on export-2030 (quarantined)"


def test_a_malformed_heartbeat_line_is_a_visible_reason() -> None:
    verdict = classify(
        NOW,
        task(
            heartbeat_error="malformed heartbeat line 'p=x': p='x' is not a number",
            heartbeat_error_at=NOW - 30,
        ),
        lease(),
        beat(),
        None,
        LIMITS,
    )
    assert verdict.health is Health.HEALTHY
    assert verdict.reasons[-1].code == "heartbeat_malformed"
    assert "30s ago" in verdict.reasons[-1].words(NOW)


def test_sort_key_orders_by_urgency_then_silence_in_trouble_and_by_id_otherwise() -> None:
    """DESIGN.md "Order on screen": stalled tasks longest silent first; healthy ones by id,
    whenever they last beat, so their rows keep their place as they beat."""
    views = {
        "a": classify(NOW, task(task_id="a"), lease(), beat(age=3), None, LIMITS),
        "b": classify(NOW, task(task_id="b"), lease(), beat(age=600), None, LIMITS),
        "c": classify(NOW, task(task_id="c"), lease(), beat(age=300), None, LIMITS),
        "d": classify(NOW, task(task_id="d"), lease(expires_in=-5), beat(), None, LIMITS),
        "e": classify(NOW, task(task_id="e"), lease(), beat(age=1), None, LIMITS),
        "f": classify(NOW, task(task_id="f"), lease(), beat(age=40), None, LIMITS),
    }
    assert [views[k].health for k in "abcdef"] == [
        Health.HEALTHY,
        Health.STALLED,
        Health.STALLED,
        Health.RECLAIMABLE,
        Health.HEALTHY,
        Health.HEALTHY,
    ]
    ordered = sorted(views, key=lambda k: sort_key(k, views[k]))
    assert ordered == ["d", "b", "c", "a", "e", "f"]


def test_spinning_rows_sort_longest_flat_first_and_keep_their_order_as_they_beat() -> None:
    """DESIGN.md "Order on screen": within spinning the longest flat first. Spinning tasks
    beat, so the one that beat last is no more urgent: the order must not swap at each beat."""

    def spinning(task_id: str, age: float, flat_for: float) -> tuple[str, Any]:
        verdict = classify(NOW, task(task_id=task_id), lease(), beat(age, flat_for), None, LIMITS)
        assert verdict.health is Health.SPINNING
        return task_id, verdict

    # reindex has been flat the longest; sync beat more recently at one poll, less at the next.
    for sync_age, reindex_age in ((1.0, 2.0), (2.0, 1.0)):
        views = dict(
            [spinning("sync-2047", sync_age, 2000), spinning("reindex-2044", reindex_age, 3000)]
        )
        ordered = sorted(views, key=lambda k: sort_key(k, views[k]))
        assert ordered == ["reindex-2044", "sync-2047"]


@pytest.mark.parametrize("engine", ["BullMQ", None])
def test_an_engines_words_follow_its_expired_lease_and_an_operators_do_not(
    engine: str | None,
) -> None:
    """An engine's task says after its expired lease what the engine does with it; one of
    zombietop's own tasks keeps an operator's resume reason in the same field, said elsewhere."""
    words = "stalled in BullMQ's words, no worker on queue q"
    limits = replace(LIMITS, engine=engine)
    verdict = classify(NOW, task(state_reason=words), lease(expires_in=-40), beat(), None, limits)
    assert verdict.health is Health.RECLAIMABLE
    said = [r.words(NOW) for r in verdict.reasons if r.code == "lease_expired"]
    line = verdict.context(NOW)
    if engine:
        assert said == [f"lease expired 40s ago (ttl 5m): {words}"]
        assert f"lease expired 40s ago ({words})" in line
    else:
        assert said == ["lease expired 40s ago (ttl 5m)"]
        assert words not in line


@pytest.mark.parametrize(
    ("engine", "expires_in", "said"),
    [
        ("Dramatiq", 50.0, "pid 4121 gone (its worker died 3m05s ago; {why})"),
        (None, 50.0, None),  # zombietop's own task: an operator's reason, said elsewhere
        ("Dramatiq", -40.0, "lease expired 40s ago (its worker died 3m05s ago; {why})"),
    ],
)
def test_an_engines_words_follow_a_dead_tasks_gone_process_once(
    engine: str | None, expires_in: float, said: str | None
) -> None:
    """A task whose worker process is gone says after "pid N gone" what its engine does with it
    (Dramatiq: nothing until a random maintenance pass), unless its expired lease said it."""
    why = "Dramatiq requeues it only in a random maintenance pass"
    words = f"its worker died 3m05s ago; {why}"
    limits = replace(LIMITS, engine=engine)
    heartbeat = beat(age=30.0, source=HeartbeatSource.SUPERVISOR)
    verdict = classify(
        NOW, task(state_reason=words), lease(expires_in), heartbeat, proc(alive=False), limits
    )
    assert verdict.health is Health.DEAD
    line = verdict.context(NOW)
    assert line.count(why) == (0 if said is None else 1), line
    if said is not None:
        assert said.format(why=why) in line, line


@pytest.mark.parametrize(
    ("engine", "state_reason", "said"),
    [
        ("Dagster", "STARTED in Dagster with no process behind it", True),
        ("Dagster", None, False),
        (None, "resumed by ops", False),
    ],
)
def test_a_dead_engine_task_without_a_beat_says_the_engines_words(
    engine: str | None, state_reason: str | None, said: bool
) -> None:
    """A running task that never beat and whose process is gone: an engine's words take the
    place of "no heartbeat yet"; zombietop's own tasks and a task without words keep it."""
    limits = replace(LIMITS, engine=engine)
    gone = proc(alive=False)
    verdict = classify(
        NOW, task(state_reason=state_reason), lease(expires_at=None), None, gone, limits
    )
    assert verdict.health is Health.DEAD
    line = verdict.context(NOW)
    if said:
        assert f"dead: {state_reason}, pid 4121 gone" in line, line
        assert "no heartbeat yet" not in line
        assert line.count(state_reason) == 1, line
    else:
        assert "no heartbeat yet" in line, line
