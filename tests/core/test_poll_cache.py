"""Records built from poll rows: a row read again must give the record a fresh read gives,
keeping what did not change, and the words rows repeat are held once."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from zombietop.heartbeat_line import parse_line
from zombietop.model import Heartbeat, Lease, PendingKill, Task, TaskRecord
from zombietop.store import Store
from zombietop.store.columns import HEARTBEAT_COLUMNS, KILL_COLUMNS, LEASE_COLUMNS, TASK_COLUMNS
from zombietop.store.poll_cache import record_from_values, shared_values


def row(rng: random.Random, task_id: str) -> tuple[Any, ...]:
    """A poll row (task, lease, heartbeat, kill columns) with random contents."""
    task: dict[str, Any] = dict.fromkeys(TASK_COLUMNS)
    task.update(
        task_id=task_id,
        run_id="r",
        step="s",
        step_type=rng.choice(["d", "export"]),
        state=rng.choice(["running", "starting", "queued"]),
        attempt=rng.randrange(1, 3),
        upstream=rng.choice([None, "[]", '["a"]']),
        command=rng.choice([None, '["sleep", "1"]']),
        created_at=1.0,
        updated_at=float(rng.randrange(3)),
    )
    lease: dict[str, Any] = dict.fromkeys(LEASE_COLUMNS)
    if rng.random() < 0.8:
        lease.update(
            task_id=task_id,
            owner=rng.choice(["w", None]),
            token=rng.randrange(1, 3),
            renewed_at=float(rng.randrange(3)),
            expires_at=float(rng.randrange(100, 103)),
        )
    beat: dict[str, Any] = dict.fromkeys(HEARTBEAT_COLUMNS)
    if rng.random() < 0.8:
        beat.update(
            task_id=task_id,
            stage=rng.choice(["a", "b", None]),
            progress=rng.choice([None, 1.0, 2.5]),
            counters=rng.choice([None, "", "{}", json.dumps({"rows": rng.randrange(3)})]),
            request_name=rng.choice([None, "GET"]),
            written_at=float(rng.randrange(3)),
            progress_changed_at=float(rng.randrange(2)),
            stage_started_at=0.0,
            seq=rng.randrange(1, 3),
            source=rng.choice(["reported", "observed"]),
        )
    kill: dict[str, Any] = dict.fromkeys(KILL_COLUMNS)
    if rng.random() < 0.3:
        kill.update(
            task_id=task_id,
            pid=7,
            requested_by="t",
            term_sent_at=1.0,
            deadline=31.0,
            outcome=rng.choice([None, "exited"]),
        )
    return tuple([*task.values(), *lease.values(), *beat.values(), *kill.values()])


def by_constructors(values: tuple[Any, ...]) -> TaskRecord:
    """The record as the model's own ``from_row`` constructors build it."""
    names = (
        TASK_COLUMNS
        + [f"l_{c}" for c in LEASE_COLUMNS]
        + [f"h_{c}" for c in HEARTBEAT_COLUMNS]
        + [f"k_{c}" for c in KILL_COLUMNS]
    )
    columns = dict(zip(names, values, strict=True))

    def part(prefix: str, names: list[str]) -> dict[str, Any] | None:
        if columns[f"{prefix}task_id"] is None:
            return None
        return {name: columns[f"{prefix}{name}"] for name in names}

    lease, beat, kill = (
        part("l_", LEASE_COLUMNS),
        part("h_", HEARTBEAT_COLUMNS),
        part("k_", KILL_COLUMNS),
    )
    return TaskRecord(
        task=Task.from_row(columns),
        lease=None if lease is None else Lease.from_row(lease),
        heartbeat=None if beat is None else Heartbeat.from_row(beat),
        pending_kill=None if kill is None else PendingKill.from_row(kill),
    )


@pytest.mark.parametrize("seed", range(3))
def test_a_row_read_again_gives_what_a_fresh_read_gives(seed: int) -> None:
    rng = random.Random(seed)
    old = row(rng, "t")
    kept = record_from_values(old)
    assert kept == by_constructors(old)
    for _ in range(300):
        new = row(rng, "t")
        record = record_from_values(new, old, kept)
        assert record == by_constructors(new)
        for part, (start, stop) in PARTS.items():
            if new[start:stop] == old[start:stop]:
                assert getattr(record, part) is getattr(kept, part), part
        old, kept = new, record


_T = len(TASK_COLUMNS)
_L = _T + len(LEASE_COLUMNS)
_H = _L + len(HEARTBEAT_COLUMNS)
PARTS = {"task": (0, _T), "lease": (_T, _L), "heartbeat": (_L, _H), "pending_kill": (_H, None)}


@pytest.mark.parametrize("seed", range(3))
def test_a_row_with_its_words_shared_holds_the_same_values(seed: int) -> None:
    rng = random.Random(seed)
    for number in range(50):
        values = row(rng, f"t{number}")
        assert shared_values(values) == values


async def test_the_words_a_fleet_repeats_are_held_once(store: Store) -> None:
    """sqlite3 and asyncpg hand over a new string for every value of every row. Two tasks of one
    run on one host, leased to one worker and beating in one stage, hold one string of each;
    a task's lease and beat hold the task's own id."""
    for task_id in ("export-2031-part-1", "export-2031-part-2"):
        await store.create_task(
            task_id=task_id,
            run_id="nightly-2026-12-04",
            step="transform",
            step_type="export",
            actor="cron@batch-host-17",
        )
        lease = await store.acquire_lease(task_id, owner="worker-17@batch-host-17", ttl=300)
        line = parse_line("stage=load-warehouse p=5")
        await store.record_heartbeat(task_id, line, owner=lease.owner, token=lease.token)

    first, second = sorted(await store.poll(None), key=lambda record: record.task.task_id)

    assert first.task.run_id is second.task.run_id
    assert first.task.step is second.task.step
    assert first.task.step_type is second.task.step_type
    assert first.lease is not None and second.lease is not None
    assert first.lease.owner is second.lease.owner
    assert first.heartbeat is not None and second.heartbeat is not None
    assert first.heartbeat.stage is second.heartbeat.stage
    assert first.lease.task_id is first.task.task_id
    assert first.heartbeat.task_id is first.task.task_id
