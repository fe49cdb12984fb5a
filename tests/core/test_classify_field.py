"""The rules a real Airflow showed were missing (issue 29): a finished task whose process lives
on is orphaned, a task process idle under beats that prove only life is stalled (issue 46: it
was spinning, and nobody was paged), and the words a page ends with."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.core.test_classify import LIMITS, NOW, beat, lease, proc, task
from zombietop.config import Limits
from zombietop.health import Flag, Health
from zombietop.judge.classify import classify
from zombietop.model import Heartbeat, HeartbeatSource, ProcessSample, Task, TaskState

M = 60.0


def supervisor(**overrides: Any) -> Heartbeat:
    """A beat Airflow's supervisor wrote: no stage, no percent, progress "moving" with it."""
    fields: dict[str, Any] = {
        "stage": None,
        "progress": None,
        "counters": {},
        "stuck": 2.0,
        "age": 2.0,
        "source": HeartbeatSource.SUPERVISOR,
    }
    fields.update(overrides)
    return beat(**fields)


def idle(minutes: float, **overrides: Any) -> ProcessSample:
    return proc(idle_s=minutes * M, io_idle_s=minutes * M, **overrides)


# (id, task, heartbeat, process, expected health, reason codes)
IDLE_CASES = [
    (
        "supervisor-idle-past-timeout",
        task(),
        supervisor(),
        idle(35),
        Health.STALLED,
        ["process_idle"],
    ),
    # idle_timeout (20m by default) is its own limit, shorter than progress_timeout (30m).
    ("supervisor-idle-past-idle-timeout", task(), supervisor(), idle(21), Health.STALLED, None),
    ("supervisor-idle-at-timeout", task(), supervisor(), idle(20), Health.HEALTHY, []),
    # Progress reported by the supervisor's task, flat, while the process works: spinning.
    (
        "supervisor-busy-progress-flat",
        task(),
        supervisor(progress=40.0, stuck=35 * M),
        proc(idle_s=0.0, cpu_percent=40.0),
        Health.SPINNING,
        ["progress_stuck"],
    ),
    # Flat and idle: the idle process is the worse news, and pages.
    (
        "supervisor-idle-progress-flat",
        task(),
        supervisor(progress=40.0, stuck=35 * M),
        idle(35),
        Health.STALLED,
        ["process_idle", "progress_stuck"],
    ),
    (
        "supervisor-busy",
        task(),
        supervisor(),
        proc(idle_s=0.0, cpu_percent=40.0),
        Health.HEALTHY,
        [],
    ),
    ("supervisor-idle-unknown", task(), supervisor(), proc(), Health.HEALTHY, []),
    ("supervisor-without-probe", task(), supervisor(), None, Health.HEALTHY, []),
    (
        "observed-idle-past-timeout",
        task(),
        supervisor(source=HeartbeatSource.OBSERVED),
        idle(35),
        Health.STALLED,
        ["process_idle"],
    ),
    # A job that reports its progress is judged on it: an idle process may wait for a reply.
    ("reported-idle-is-judged-on-progress", task(), beat(), idle(35), Health.HEALTHY, []),
    (
        "supervisor-stale-is-stalled-first",
        task(),
        supervisor(age=300),
        idle(35),
        Health.STALLED,
        ["heartbeat_stale"],
    ),
    (
        "supervisor-gone-is-dead-not-idle",
        task(),
        supervisor(age=15),
        idle(35, alive=False),
        Health.DEAD,
        ["process_gone"],
    ),
]


@pytest.mark.parametrize(
    ("the_task", "the_beat", "the_proc", "health", "codes"),
    [pytest.param(*case[1:], id=case[0]) for case in IDLE_CASES],
)
def test_an_idle_process_under_beats_of_life_is_stalled(
    the_task: Task,
    the_beat: Heartbeat,
    the_proc: ProcessSample | None,
    health: Health,
    codes: list[str] | None,
) -> None:
    verdict = classify(NOW, the_task, lease(), the_beat, the_proc, LIMITS)
    assert verdict.health is health
    if codes is not None:
        assert [r.code for r in verdict.reasons] == codes


def test_the_idle_reason_and_the_context_say_how_long() -> None:
    verdict = classify(NOW, task(), lease(), supervisor(), idle(35), LIMITS)
    (reason,) = verdict.reasons
    assert reason.words(NOW) == "supervisor beats; task process idle 35m00s (no CPU, no I/O)"
    assert reason.age(NOW) == 35 * M and reason.limit == LIMITS.idle_timeout == 20 * M
    assert verdict.health.pages
    assert verdict.context(NOW) == (
        "export-2031 stalled: supervisor beats; task process idle 35m00s (no CPU, no I/O), "
        "supervisor heartbeat 2s old, lease expires in 4m00s, pid 4121 alive cpu 0% - resume "
        "or discard"
    )
    assert verdict.progress_changed_at == NOW - 35 * M


def test_idle_timeout_is_per_step_type_and_judged_at_its_moment() -> None:
    short = replace(LIMITS, idle_timeout=5 * M)
    assert classify(NOW, task(), lease(), supervisor(), idle(6), short).health is Health.STALLED
    early = classify(NOW, task(), lease(), supervisor(), idle(4.5), short)
    assert early.health is Health.HEALTHY
    # The verdict says when to look again: the moment the idle process crosses the limit.
    assert early.stable_until == NOW + 0.5 * M


def finished(state: TaskState = TaskState.FAILED, ago: float = 18 * M, **overrides: Any) -> Task:
    return task(state=state, finished_at=NOW - ago, **overrides)


AIRFLOW = replace(
    LIMITS, engine="Airflow", engine_actions="clear it in Airflow, mark it failed, or kill it"
)

# (id, task, process, limits, expected health, reason codes)
ORPHAN_CASES = [
    ("failed-alive", finished(), proc(), AIRFLOW, Health.ORPHANED, ["process_orphaned", "failed"]),
    (
        "succeeded-alive",
        finished(TaskState.SUCCEEDED),
        proc(),
        LIMITS,
        Health.ORPHANED,
        ["process_orphaned", "succeeded"],
    ),
    (
        "discarded-alive",
        finished(TaskState.DISCARDED),
        proc(),
        LIMITS,
        Health.ORPHANED,
        ["process_orphaned", "discarded"],
    ),
    ("failed-gone", finished(), proc(alive=False), AIRFLOW, Health.FAILED, ["failed"]),
    ("failed-pid-reused", finished(), proc(identity_ok=False), AIRFLOW, Health.FAILED, ["failed"]),
    ("failed-zombie", finished(), proc(status="zombie"), AIRFLOW, Health.FAILED, ["failed"]),
    ("failed-not-probed", finished(), None, AIRFLOW, Health.FAILED, ["failed"]),
]


@pytest.mark.parametrize(
    ("the_task", "the_proc", "limits", "health", "codes"),
    [pytest.param(*case[1:], id=case[0]) for case in ORPHAN_CASES],
)
def test_a_finished_task_whose_process_lives_is_orphaned(
    the_task: Task,
    the_proc: ProcessSample | None,
    limits: Limits,
    health: Health,
    codes: list[str],
) -> None:
    verdict = classify(NOW, the_task, None, None, the_proc, limits)
    assert verdict.health is health
    assert [r.code for r in verdict.reasons] == codes


def test_the_orphan_page_names_the_pid_its_age_and_the_kill() -> None:
    verdict = classify(NOW, finished(exit_code=1), None, None, proc(pid=17466), AIRFLOW)
    assert verdict.context(NOW) == (
        "export-2031 orphaned: pid 17466 alive 18m00s after Airflow marked it failed, "
        "failed 18m00s ago (exit 1) - kill it"
    )
    ours = classify(NOW, finished(TaskState.DISCARDED), None, None, proc(pid=17466), LIMITS)
    assert ours.context(NOW).startswith(
        "export-2031 orphaned: pid 17466 alive 18m00s after it finished, discarded"
    )
    assert ours.context(NOW).endswith(" - kill it")


def test_an_engine_task_page_names_the_actions_that_work() -> None:
    """resume and discard are refused for an engine's task: the page says what works."""
    stalled = classify(NOW, task(), lease(), supervisor(age=300), None, AIRFLOW)
    assert stalled.health is Health.STALLED
    assert stalled.context(NOW).endswith(" - clear it in Airflow, mark it failed, or kill it")
    ours = classify(NOW, task(), lease(), beat(age=300), None, LIMITS)
    assert ours.context(NOW).endswith(" - resume or discard")


QUEUE = replace(LIMITS, queue_timeout=30 * M)
WAITING = task(
    state=TaskState.QUEUED,
    created_at=NOW - 35 * M,
    claimed_at=None,
    started_at=None,
    pid=None,
    state_reason="airflow state scheduled, pool zt_empty: 0 of 0 slots open",
)

# (id, task, limits, flags, reason codes)
QUEUE_CASES = [
    ("queued-past-timeout", WAITING, QUEUE, [Flag.QUEUED_TOO_LONG], ["queued_too_long"]),
    ("queued-at-timeout", replace(WAITING, created_at=NOW - 30 * M), QUEUE, [], []),
    ("queue-timeout-off", WAITING, LIMITS, [], []),
    ("running-is-not-queued", task(created_at=NOW - 35 * M), QUEUE, [], None),
    (
        "quarantined-queued-still-says-it",
        replace(WAITING, quarantined_at=NOW - 60),
        QUEUE,
        [Flag.QUEUED_TOO_LONG],
        ["quarantined", "queued_too_long"],
    ),
]


@pytest.mark.parametrize(
    ("the_task", "limits", "flags", "codes"),
    [pytest.param(*case[1:], id=case[0]) for case in QUEUE_CASES],
)
def test_a_task_queued_past_its_queue_timeout_is_flagged(
    the_task: Task, limits: Limits, flags: list[Flag], codes: list[str] | None
) -> None:
    verdict = classify(NOW, the_task, lease(), beat(), None, limits)
    assert list(verdict.flags) == flags
    if codes is not None:  # None: an executing task, whose other reasons are not the point
        assert [r.code for r in verdict.reasons] == codes
        assert verdict.health in (Health.QUEUED, Health.QUARANTINED)


def test_the_queue_flag_says_the_age_and_the_engine_reason() -> None:
    verdict = classify(NOW, WAITING, None, None, None, QUEUE)
    assert verdict.context(NOW) == (
        "export-2031 queued, queued_too_long: queued 35m00s (queue timeout 30m): airflow state "
        "scheduled, pool zt_empty: 0 of 0 slots open"
    )
    # Queued a while, not yet too long: the verdict holds until the timeout is crossed.
    early = classify(NOW, replace(WAITING, created_at=NOW - 10 * M), None, None, None, QUEUE)
    assert early.flags == () and early.stable_until == NOW + 20 * M


# A task that raises exits a few seconds before its supervisor records "failed" (issue 46: 3 of
# 4 ordinary Airflow failures were paged dead, then all clear, then failed). While the
# supervisor's beat is within one heartbeat interval (10s here), the end waits for the record.
# (id, heartbeat, process, expected health, reason codes)
EXIT_CASES = [
    ("gone-beat-2s", supervisor(age=2), proc(alive=False), Health.HEALTHY, ["exit_unrecorded"]),
    (
        "zombie-beat-5s",
        supervisor(age=5),
        proc(status="zombie"),
        Health.HEALTHY,
        ["exit_unrecorded"],
    ),
    ("gone-beat-at-grace", supervisor(age=10), proc(alive=False), Health.HEALTHY, None),
    ("gone-beat-past-grace", supervisor(age=11), proc(alive=False), Health.DEAD, ["process_gone"]),
    # A reused pid is no fresh exit: the task's process ended long ago.
    (
        "reused-beat-2s",
        supervisor(age=2),
        proc(identity_ok=False),
        Health.DEAD,
        ["pid_reused"],
    ),
    # zombietop's own beats: its wrapper records the end itself, at once.
    ("gone-reported-beat", beat(age=2), proc(alive=False), Health.DEAD, ["process_gone"]),
]


@pytest.mark.parametrize(
    ("the_beat", "the_proc", "health", "codes"),
    [pytest.param(*case[1:], id=case[0]) for case in EXIT_CASES],
)
def test_a_fresh_exit_under_a_beating_supervisor_waits_for_the_record(
    the_beat: Heartbeat, the_proc: ProcessSample, health: Health, codes: list[str] | None
) -> None:
    verdict = classify(NOW, task(), lease(), the_beat, the_proc, AIRFLOW)
    assert verdict.health is health, verdict.context(NOW)
    if codes is not None:
        assert [r.code for r in verdict.reasons] == codes


def test_the_wait_for_the_record_is_one_interval_at_most_30s_and_judged_again_then() -> None:
    waiting = classify(NOW, task(), lease(), supervisor(age=2), proc(alive=False), AIRFLOW)
    assert waiting.reasons[0].words(NOW) == (
        "pid 4121 exited; waiting up to 10s for Airflow to record the end"
    )
    assert waiting.stable_until == NOW + 8  # dead then, unless Airflow recorded the end
    slow = replace(AIRFLOW, heartbeat_interval=60.0, heartbeat_timeout=300.0)
    assert classify(NOW, task(), lease(), supervisor(age=29), proc(alive=False), slow).health is (
        Health.HEALTHY
    )
    assert classify(NOW, task(), lease(), supervisor(age=31), proc(alive=False), slow).health is (
        Health.DEAD
    )
