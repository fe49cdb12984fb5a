"""The rules a real Airflow showed were missing (issue 29): a task process idle under beats
that prove only life is spinning, and how a page says it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.test_classify import LIMITS, NOW, beat, lease, proc, task
from zombietop.classify import classify
from zombietop.health import Health
from zombietop.model import Heartbeat, HeartbeatSource, ProcessSample, Task

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
        Health.SPINNING,
        ["process_idle"],
    ),
    ("supervisor-idle-at-timeout", task(), supervisor(), idle(30), Health.HEALTHY, []),
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
        Health.SPINNING,
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
        supervisor(),
        idle(35, alive=False),
        Health.DEAD,
        ["process_gone"],
    ),
]


@pytest.mark.parametrize(
    ("the_task", "the_beat", "the_proc", "health", "codes"),
    [pytest.param(*case[1:], id=case[0]) for case in IDLE_CASES],
)
def test_an_idle_process_under_beats_of_life_is_spinning(
    the_task: Task,
    the_beat: Heartbeat,
    the_proc: ProcessSample | None,
    health: Health,
    codes: list[str],
) -> None:
    verdict = classify(NOW, the_task, lease(), the_beat, the_proc, LIMITS)
    assert verdict.health is health
    assert [r.code for r in verdict.reasons] == codes


def test_the_idle_reason_and_the_context_say_how_long() -> None:
    verdict = classify(NOW, task(), lease(), supervisor(), idle(35), LIMITS)
    (reason,) = verdict.reasons
    assert reason.words(NOW) == "supervisor beats; task process idle 35m00s (cpu 0%, no I/O)"
    assert reason.age(NOW) == 35 * M and reason.limit == LIMITS.progress_timeout
    assert verdict.context(NOW) == (
        "export-2031 spinning: supervisor heartbeat 2s old, lease expires in 4m00s, "
        "pid 4121 alive cpu 0%, idle 35m00s (no CPU, no I/O)"
    )
    # Spinning rows sort by how long they are flat: here, how long the process has been idle.
    assert verdict.progress_changed_at == NOW - 35 * M
