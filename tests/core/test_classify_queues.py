"""The rules a task queue's tasks bring to ``classify``: a stopped child under a worker that
still beats, and the redelivered flag."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.core.test_classify import LIMITS, NOW, beat, lease, proc, task
from zombietop.health import Flag, Health
from zombietop.judge.classify import classify
from zombietop.model import HeartbeatSource

SUPERVISED = beat(source=HeartbeatSource.SUPERVISOR, stage=None, progress=None, counters={})


@pytest.mark.parametrize(
    ("name", "heartbeat", "status", "health", "codes"),
    [
        ("stopped-under-a-worker", SUPERVISED, "stopped", Health.STALLED, ["process_stopped"]),
        ("traced-under-a-worker", SUPERVISED, "tracing-stop", Health.STALLED, ["process_stopped"]),
        ("running-under-a-worker", SUPERVISED, "running", Health.HEALTHY, []),
        # A job that reports its own beats stops beating when stopped: the timeout judges it.
        ("stopped-reporting-job", beat(), "stopped", Health.HEALTHY, []),
        ("stopped-without-beat-source", None, "stopped", Health.HEALTHY, []),
    ],
)
def test_a_stopped_process_is_stalled_only_while_a_worker_beats_for_it(
    name: str,
    heartbeat: object,
    status: str,
    health: Health,
    codes: list[str],
) -> None:
    started = task(started_at=NOW - 30)  # within the heartbeat timeout even without a beat
    verdict = classify(NOW, started, lease(), heartbeat, proc(status=status), LIMITS)  # type: ignore[arg-type]
    assert verdict.health is health, name
    assert [r.code for r in verdict.reasons] == codes


def test_a_gone_process_is_dead_before_it_is_stopped() -> None:
    beaten = replace(SUPERVISED, written_at=NOW - 15)  # past the grace for the engine's record
    verdict = classify(NOW, task(), lease(), beaten, proc(alive=False, status="stopped"), LIMITS)
    assert verdict.health is Health.DEAD
    assert [r.code for r in verdict.reasons] == ["process_gone"]


def test_a_redelivered_task_is_flagged_and_its_page_leads_with_it() -> None:
    running = replace(task(), redelivered=True)
    verdict = classify(NOW, running, lease(), SUPERVISED, proc(cpu_percent=90.0), LIMITS)
    assert verdict.health is Health.HEALTHY
    assert verdict.flags == (Flag.REDELIVERED,)
    assert verdict.context(NOW).startswith("export-2031 redelivered: supervisor heartbeat 5s old")
    assert classify(NOW, task(), lease(), SUPERVISED, None, LIMITS).flags == ()
