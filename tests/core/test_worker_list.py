"""The workers list as a pure function of one snapshot: agents and engine workers, a worker
gone with tasks on it first."""

from __future__ import annotations

from dataclasses import replace

from zombietop.judge.workers import AGENT, worker_list
from zombietop.tui.testing import NOW, sample_snapshot
from zombietop.tui.testing.workers import sample_agents, sample_engine_workers, workers_snapshot


def test_gone_with_tasks_first_then_the_live_busiest_first_then_the_gone_idle() -> None:
    listed = worker_list(workers_snapshot(), NOW)
    assert [(w.name, w.gone, w.holds) for w in listed] == [
        ("agent@batch-01", True, 8),  # the sample fleet's 8 running tasks, its agent silent
        ("celery@batch-04", True, 2),
        ("celery@batch-03", False, 3),
        ("rq-worker-a1", False, 1),
        ("agent@batch-02", False, 0),
        ("rq-worker-b7", True, 0),
    ]


def test_an_agent_is_gone_after_missed_beats_or_once_stopped() -> None:
    silent, live = sample_agents()
    (first, second) = worker_list(replace(sample_snapshot(), agents=(silent, live)), NOW)
    assert (first.kind, first.host, first.pid, first.gone) == (AGENT, "batch-01", 812, True)
    assert first.why == "no beat for 5m00s" and first.last_beat == NOW - 300
    assert not second.gone and second.why == ""
    stopped = replace(live, stopped_at=NOW - 60)
    (_, gone) = worker_list(replace(sample_snapshot(), agents=(silent, stopped)), NOW)
    assert gone.gone and gone.why == "stopped 1m00s ago"


def test_an_engines_task_is_held_by_its_worker_not_by_the_agent() -> None:
    snapshot = replace(sample_snapshot(), agents=sample_agents()[:1])
    engine_task = snapshot.tasks[0].task_id
    snapshot = replace(snapshot, origins={engine_task: object()})  # type: ignore[dict-item]
    (agent,) = worker_list(snapshot, NOW)
    assert agent.holds == 7


def test_no_agent_and_no_source_lists_nothing() -> None:
    assert worker_list(sample_snapshot(), NOW) == ()
    assert len(worker_list(replace(sample_snapshot(), workers=sample_engine_workers()), NOW)) == 4
