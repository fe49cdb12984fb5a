"""Observed heartbeats in the store, on both backends: activity recorded, progress untouched."""

from __future__ import annotations

import pytest

from zombietop.clock import FakeClock
from zombietop.errors import LeaseLost
from zombietop.heartbeat_line import parse_line
from zombietop.model import HeartbeatSource, TaskState
from zombietop.store import Store


async def _claimed(store: Store, task_id: str = "t1") -> int:
    await store.create_task(
        task_id=task_id, run_id="r", step="s", step_type="default", actor="test", command=["tar"]
    )
    return (await store.acquire_lease(task_id, owner="w1", ttl=300)).token


async def test_a_first_observed_beat_starts_the_task_without_progress(
    store: Store, clock: FakeClock
) -> None:
    token = await _claimed(store)
    beat = await store.record_observed_heartbeat(
        "t1", {"cpu_s": 1.5, "io_bytes": 4096.0, "out_lines": 0.0}, owner="w1", token=token
    )
    assert beat.source is HeartbeatSource.OBSERVED and beat.observed
    assert (beat.stage, beat.progress) == (None, None) and not beat.reports_progress
    assert beat.counters == {"cpu_s": 1.5, "io_bytes": 4096.0, "out_lines": 0.0}
    task = await store.get_task("t1")
    assert task.state is TaskState.RUNNING and task.started_at is not None
    record = (await store.poll(None))[0]
    assert record.heartbeat is not None and record.heartbeat.source is HeartbeatSource.OBSERVED


async def test_observed_beats_keep_the_reported_progress_and_add_their_counters(
    store: Store, clock: FakeClock
) -> None:
    token = await _claimed(store)
    reported = await store.record_heartbeat(
        "t1", parse_line("stage=copy p=40 files=12"), owner="w1", token=token
    )
    clock.advance(60)
    observed = await store.record_observed_heartbeat(
        "t1", {"cpu_s": 30.0, "io_bytes": 1e6, "out_lines": 3.0}, owner="w1", token=token
    )
    assert (observed.stage, observed.progress) == ("copy", 40)
    assert observed.progress_changed_at == reported.progress_changed_at
    assert observed.stage_started_at == reported.stage_started_at
    assert observed.written_at == reported.written_at + 60 and observed.seq == reported.seq + 1
    assert observed.counters == {"files": 12, "cpu_s": 30.0, "io_bytes": 1e6, "out_lines": 3.0}
    assert observed.reports_progress  # the job did say where it was

    # The job speaks again with the same progress: a reported beat, progress still unmoved
    # though the observation's counters are gone from its line.
    clock.advance(60)
    again = await store.record_heartbeat(
        "t1", parse_line("stage=copy p=40 files=12"), owner="w1", token=token
    )
    assert again.source is HeartbeatSource.REPORTED
    assert again.progress_changed_at == reported.progress_changed_at
    clock.advance(60)
    moved = await store.record_heartbeat(
        "t1", parse_line("stage=copy p=41 files=13"), owner="w1", token=token
    )
    assert moved.progress_changed_at == moved.written_at


async def test_observed_beats_are_fenced(store: Store) -> None:
    token = await _claimed(store)
    with pytest.raises(LeaseLost):
        await store.record_observed_heartbeat("t1", {"cpu_s": 1.0}, owner="w1", token=token + 1)
