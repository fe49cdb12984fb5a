"""How one read of Celery's workers and of the Redis transport becomes tasks: pure, no Redis."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import psutil
import pytest

from zombietop.model import TaskState
from zombietop.sources.celery_reports import (
    ACTIVE,
    DELIVERIES_KEPT,
    RESERVED,
    Reads,
    Sighting,
    Unacked,
    WorkerMemory,
    records,
    sightings_of,
    unacked_of,
)

NOW = 1_796_000_000.0
HERE = frozenset({"vm"})


def _sighting(listed: str, worker: str = "w1@vm", task_id: str = "t1") -> Sighting:
    return Sighting(
        task_id=task_id,
        name="tasks.export",
        queue="celery",
        worker=worker,
        listed=listed,
        worker_pid=None,
        time_start=NOW - 60 if listed == ACTIVE else None,
    )


def _judge(reads: Reads, memory: WorkerMemory) -> dict[str, object]:
    found = records(
        reads,
        memory.update(reads),
        visibility_timeout=30,
        heartbeat_timeout=10,
        source="celery+redis://r/0",
        host="vm",
        local=HERE,
        deliveries=memory.deliveries,
    )
    return {r.record.task.task_id: r.record for r in found}


def test_a_silent_worker_keeps_its_running_task_with_its_last_answer_as_the_beat() -> None:
    memory = WorkerMemory(kept_for=3600)
    _judge(Reads(read_at=NOW, answered={"w1@vm": (_sighting(ACTIVE),)}), memory)
    later = _judge(Reads(read_at=NOW + 20, answered={}), memory)
    record = later["celery/tasks.export/t1"]
    assert record.task.state is TaskState.RUNNING  # type: ignore[attr-defined]
    assert record.task.job == "tasks.export"  # type: ignore[attr-defined]
    assert record.heartbeat.written_at == NOW  # type: ignore[attr-defined]


def test_a_silent_worker_holds_its_waiting_tasks_only_within_the_heartbeat_timeout() -> None:
    memory = WorkerMemory(kept_for=3600)
    message = Unacked(task_id="t1", name="tasks.export", queue="celery", delivered_at=NOW - 100)
    _judge(
        Reads(read_at=NOW, answered={"w1@vm": (_sighting(RESERVED),)}, unacked=(message,)), memory
    )
    soon = _judge(Reads(read_at=NOW + 5, answered={}, unacked=(message,)), memory)
    assert soon["celery/tasks.export/t1"].task.state is TaskState.QUEUED  # type: ignore[attr-defined]
    # A Celery task's job is its task name, for [O]'s history and thresholds.
    assert soon["celery/tasks.export/t1"].task.job == "tasks.export"  # type: ignore[attr-defined]
    late = _judge(Reads(read_at=NOW + 15, answered={}, unacked=(message,)), memory)
    lost = late["celery/tasks.export/t1"]
    assert lost.task.state is TaskState.RUNNING  # type: ignore[attr-defined]
    assert lost.lease.expires_at == NOW - 70  # type: ignore[attr-defined]


def test_active_and_reserved_at_once_is_redelivered() -> None:
    reads = Reads(
        read_at=NOW,
        answered={"w1@vm": (_sighting(ACTIVE),), "w2@vm": (_sighting(RESERVED, "w2@vm"),)},
    )
    record = _judge(reads, WorkerMemory(kept_for=3600))["celery/tasks.export/t1"]
    assert record.task.redelivered  # type: ignore[attr-defined]
    assert record.task.state_reason == (  # type: ignore[attr-defined]
        "delivered 2 times: the visibility timeout 30s is shorter than the task runs; "
        "also reserved on w2@vm"
    )


def _run(worker: str, pid: int, start: float, *, redelivered: bool = False) -> Sighting:
    return replace(
        _sighting(ACTIVE, worker), worker_pid=pid, time_start=start, redelivered=redelivered
    )


def test_a_task_run_four_times_by_the_visibility_timeout_counts_from_its_first_start() -> None:
    """The field's case: a 120 s task, a 60 s visibility timeout, acks_late. Each time the
    timeout runs out another child takes the message while the last one still runs."""
    memory = WorkerMemory(kept_for=3600)
    polls = [
        (NOW, {"w1@vm": (_run("w1@vm", 11, NOW),)}),
        (NOW + 61, {"w1@vm": (_run("w1@vm", 11, NOW),), "w2@vm": (_run("w2@vm", 21, NOW + 60),)}),
        (
            NOW + 121,
            {"w1@vm": (_run("w1@vm", 12, NOW + 120),), "w2@vm": (_run("w2@vm", 21, NOW + 60),)},
        ),
        (
            NOW + 181,
            {"w1@vm": (_run("w1@vm", 12, NOW + 120),), "w2@vm": (_run("w2@vm", 22, NOW + 180),)},
        ),
        (NOW + 245, {"w1@vm": (), "w2@vm": (_run("w2@vm", 22, NOW + 180, redelivered=True),)}),
    ]
    for at, answered in polls:
        found = _judge(Reads(read_at=at, answered=answered), memory)
    task = found["celery/tasks.export/t1"].task  # type: ignore[attr-defined]
    assert task.redelivered
    assert task.state_reason == (
        "delivered 4 times: the visibility timeout 30s is shorter than the task runs"
    )
    assert task.started_at == NOW  # its clock did not start again with the fourth run


def test_a_retry_with_the_same_id_is_no_redelivery() -> None:
    """``self.retry()`` sends the same task id again once the first run has ended."""
    memory = WorkerMemory(kept_for=3600)
    _judge(Reads(read_at=NOW, answered={"w1@vm": (_run("w1@vm", 11, NOW),)}), memory)
    _judge(Reads(read_at=NOW + 5, answered={"w1@vm": ()}), memory)
    found = _judge(
        Reads(read_at=NOW + 10, answered={"w1@vm": (_run("w1@vm", 11, NOW + 9),)}), memory
    )
    task = found["celery/tasks.export/t1"].task  # type: ignore[attr-defined]
    assert not task.redelivered and task.state_reason is None
    assert task.started_at == NOW + 9


def test_celerys_own_redelivered_mark_is_read() -> None:
    """A worker lost before it acknowledged: the transport restored the message, and the next
    worker's request says ``delivery_info.redelivered``."""
    [seen] = sightings_of(
        "w2@vm",
        ACTIVE,
        [{"id": "t1", "name": "tasks.export", "delivery_info": {"redelivered": True}}],
    )
    assert seen.redelivered
    found = _judge(Reads(read_at=NOW, answered={"w2@vm": (seen,)}), WorkerMemory(kept_for=60))
    task = found["?/tasks.export/t1"].task  # type: ignore[attr-defined]
    assert task.redelivered
    assert task.state_reason == "delivered again (Celery's delivery_info.redelivered)"


def test_the_reports_are_read_as_celery_writes_them() -> None:
    scheduled = [
        {
            "eta": "2026-12-02T20:00:00",
            "request": {
                "id": "t2",
                "name": "tasks.later",
                "delivery_info": {"routing_key": "slow"},
            },
        }
    ]
    [found] = sightings_of("w1@vm", "scheduled", scheduled)
    assert (found.task_id, found.name, found.queue, found.eta) == (
        "t2",
        "tasks.later",
        "slow",
        "2026-12-02T20:00:00",
    )
    raw = json.dumps([{"headers": {"id": "t3", "task": "tasks.x"}}, "", "celery"]).encode()
    [message] = unacked_of({b"tag": raw, b"junk": b"not json"}, {b"tag": NOW - 5})
    assert (message.task_id, message.name, message.queue, message.delivered_at) == (
        "t3",
        "tasks.x",
        "celery",
        NOW - 5,
    )


def test_a_child_born_after_the_task_started_is_not_its_process() -> None:
    """The identity the probe checks: a pid older than ``time_start`` can be the child that
    took the task; one born after it got the pid by reuse, so the start no process has."""
    me = os.getpid()
    own = psutil.Process(me).create_time()

    def start_of(time_start: float) -> float | None:
        sighting = replace(_sighting(ACTIVE), worker_pid=me, time_start=time_start)
        reads = Reads(read_at=NOW, answered={"w1@vm": (sighting,)})
        record = _judge(reads, WorkerMemory(kept_for=3600))["celery/tasks.export/t1"]
        return record.task.pid_start_time  # type: ignore[attr-defined]

    assert start_of(own + 60) == pytest.approx(own, abs=1)  # the child took it later: itself
    assert start_of(own - 600) == own - 600  # born after the task started: a reused pid


def test_the_deliveries_of_waiting_and_long_gone_tasks_are_not_kept() -> None:
    """A busy fleet lists thousands of tasks an hour: only those that ran are counted, and
    only while a worker lists them (and a few minutes after)."""
    memory = WorkerMemory(kept_for=3600)
    waiting = replace(_sighting(RESERVED), task_id="t2")
    _judge(Reads(read_at=NOW, answered={"w1@vm": (_run("w1@vm", 11, NOW), waiting)}), memory)
    assert set(memory.deliveries) == {"t1"}
    _judge(Reads(read_at=NOW + DELIVERIES_KEPT + 1, answered={"w1@vm": ()}), memory)
    assert memory.deliveries == {}
