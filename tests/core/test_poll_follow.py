"""The SQLite poll reads only the tasks changed since its last read: it must always agree with a
full read, keep unchanged records as they were, and fall back to a full read when it must."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.stores import open_kill_for_test
from zombietop.clock import FakeClock
from zombietop.errors import ZombietopError
from zombietop.heartbeat_line import parse_line
from zombietop.model import TaskRecord, TaskState
from zombietop.store.columns import TASK_COLUMNS
from zombietop.store.sqlite import APPLICATION_ID, MIGRATIONS, SQLiteStore, _statements

WINDOW = 600.0
OWN = len(TASK_COLUMNS)
"""A poll row's first columns, the task's own; then its lease's, beat's and kill's."""


async def full_read(path: Path, since: float) -> dict[str, TaskRecord]:
    async with await SQLiteStore.open(path, read_only=True) as cold:
        return {r.task.task_id: r for r in await cold.poll(since)}


async def random_change(store: SQLiteStore, rng: random.Random, clock: FakeClock) -> None:
    task_id = f"t{rng.randrange(8)}"
    lease = await store.get_lease(task_id) if rng.random() < 0.9 else None
    token = lease.token if lease is not None else 0
    owner = lease.owner if lease is not None and lease.owner else "w"
    choice = rng.randrange(11)
    try:
        if choice == 0:
            await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="t")
        elif choice == 1:
            await store.acquire_lease(task_id, owner="w", ttl=60)
        elif choice == 2:
            line = f"stage=s{rng.randrange(3)} p={rng.randrange(100)}"
            await store.record_heartbeat(task_id, parse_line(line), owner=owner, token=token)
        elif choice == 3:
            await store.renew_lease(task_id, owner=owner, token=token, ttl=60)
        elif choice == 4:
            await store.release_lease(task_id, owner=owner, token=token)
        elif choice == 5:
            state = rng.choice([TaskState.SUCCEEDED, TaskState.FAILED])
            await store.finish_task(task_id, owner=owner, token=token, state=state)
        elif choice == 6:
            await store.set_quarantine(task_id, quarantined=rng.random() < 0.5, actor="t")
        elif choice == 7:
            await store.resume_task(task_id, expected_token=token or None, actor="t")
        elif choice == 8:
            await store.discard_task(task_id, expected_token=token or None, actor="t")
        elif choice == 9:
            await open_kill_for_test(store, task_id)
        else:
            await store.close_kill(task_id, outcome="exited", actor="t", message="gone")
    except ZombietopError:
        pass  # refused, lost or missing: the store is unchanged, which the poll must see too
    clock.advance(rng.choice([0.0, 0.5, 3.0, 45.0, WINDOW / 2]))


@pytest.mark.parametrize("seed", range(4))
async def test_following_the_store_agrees_with_a_full_read(
    db: Path, clock: FakeClock, seed: int
) -> None:
    rng = random.Random(seed)
    before: dict[str, TaskRecord] = {}
    async with await SQLiteStore.open(db, create=True, clock=clock) as store:
        for step in range(160):
            await random_change(store, rng, clock)
            if step % 3:
                continue
            since = clock.now() - WINDOW
            polled = {r.task.task_id: r for r in await store.poll(since)}
            assert polled == await full_read(db, since), f"seed {seed} step {step}"
            changes = store.poll_changes()
            assert changes is not None
            if changes.after is not None:
                # What the poll says it changed is all that changed since the poll before.
                assert before.keys() - polled.keys() <= changes.dropped
                assert not changes.dropped & polled.keys()
                assert {i: r for i, r in polled.items() if i in changes.changed} == changes.changed
                kept = {i: r for i, r in polled.items() if i not in changes.changed}
                assert all(before.get(i) is r for i, r in kept.items()), f"step {step}"
            before = polled


async def test_unchanged_tasks_keep_their_records(db: Path, clock: FakeClock) -> None:
    async with await SQLiteStore.open(db, create=True, clock=clock) as store:
        for task_id in ("a", "b"):
            await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="t")
        lease = await store.acquire_lease("a", owner="w", ttl=60)
        first = {r.task.task_id: r for r in await store.poll(clock.now() - WINDOW)}
        await store.record_heartbeat("a", parse_line("p=5"), owner="w", token=lease.token)
        second = {r.task.task_id: r for r in await store.poll(clock.now() - WINDOW)}
    assert second["b"] is first["b"]
    assert second["a"] is not first["a"] and second["a"].heartbeat is not None


async def test_a_task_deleted_behind_the_store_s_back_is_dropped(
    db: Path, clock: FakeClock
) -> None:
    async with await SQLiteStore.open(db, create=True, clock=clock) as store:
        for task_id in ("a", "b"):
            await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="t")
        assert len(await store.poll(clock.now() - WINDOW)) == 2
        with sqlite3.connect(db) as con:  # someone cleaning up with the sqlite3 shell
            con.execute("DELETE FROM tasks WHERE task_id = 'b'")
        assert [r.task.task_id for r in await store.poll(clock.now() - WINDOW)] == ["a"]


async def test_finished_tasks_leave_as_the_window_moves_on(db: Path, clock: FakeClock) -> None:
    async with await SQLiteStore.open(db, create=True, clock=clock) as store:
        await store.create_task(task_id="done", run_id="r", step="s", step_type="d", actor="t")
        lease = await store.acquire_lease("done", owner="w", ttl=60)
        await store.finish_task("done", owner="w", token=lease.token, state=TaskState.SUCCEEDED)
        assert len(await store.poll(clock.now() - WINDOW)) == 1
        clock.advance(WINDOW + 1)
        assert await store.poll(clock.now() - WINDOW) == []
        # Asking for a longer window than the one held reads everything again.
        assert len(await store.poll(clock.now() - 2 * WINDOW)) == 1


async def test_a_poll_says_what_it_changed(db: Path, clock: FakeClock) -> None:
    async with await SQLiteStore.open(db, create=True, clock=clock) as store:
        for task_id in ("a", "b", "done"):
            await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="t")
        lease = await store.acquire_lease("done", owner="w", ttl=60)
        await store.finish_task("done", owner="w", token=lease.token, state=TaskState.SUCCEEDED)
        await store.poll(clock.now() - WINDOW)
        first = store.poll_changes()
        assert first is not None and first.after is None  # a full read: changes say nothing
        await store.set_quarantine("a", quarantined=True, actor="t")
        clock.advance(WINDOW + 1)
        await store.poll(clock.now() - WINDOW)
        second = store.poll_changes()
        assert second is not None and second.after == first.poll
        assert set(second.changed) == {"a"} and second.dropped == {"done"}
        # Without a window (every task ever) there is nothing to follow.
        await store.poll(None)
        assert store.poll_changes() is None


async def test_a_beat_is_read_without_the_task_s_own_columns(
    db: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A beat or a renewal stamps its task but not the task's own row (once the first beat
    started it): the poll reads the lease and the beat, keeps the task it holds, and still
    agrees with a full read."""
    async with await SQLiteStore.open(db, create=True, clock=clock) as store:
        for task_id in ("a", "b"):
            await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="t")
        lease = await store.acquire_lease("a", owner="w", ttl=60)
        await store.record_heartbeat("a", parse_line("p=1"), owner="w", token=lease.token)
        first = {r.task.task_id: r for r in await store.poll(clock.now() - WINDOW)}
        read: list[tuple[str, int]] = []
        rows = store._rows

        async def counting(db: Any, name: str, params: Mapping[str, Any]) -> Sequence[Any]:
            got = await rows(db, name, params)
            read.append((name, len(got)))
            return got

        monkeypatch.setattr(store, "_rows", counting)
        clock.advance(5)
        await store.record_heartbeat("a", parse_line("p=5"), owner="w", token=lease.token)
        await store.renew_lease("a", owner="w", token=lease.token, ttl=60)
        second = {r.task.task_id: r for r in await store.poll(clock.now() - WINDOW)}
        assert read == [("select_tasks_changed", 1)]
        assert second == await full_read(db, clock.now() - WINDOW)
        assert second["a"].task is first["a"].task
        assert second["a"].heartbeat is not None and second["a"].heartbeat.progress == 5
        read.clear()
        await store.set_quarantine("a", quarantined=True, actor="t")
        third = {r.task.task_id: r for r in await store.poll(clock.now() - WINDOW)}
        assert read == [("select_tasks_changed", 1)]
        assert third == await full_read(db, clock.now() - WINDOW) and third["a"].task.quarantined
        read.clear()
        await store.create_task(task_id="c", run_id="r", step="s", step_type="d", actor="t")
        fourth = {r.task.task_id: r for r in await store.poll(clock.now() - WINDOW)}
        assert read == [("select_tasks_changed", 1)]
        assert fourth == await full_read(db, clock.now() - WINDOW)
        changes = store.poll_changes()
        assert changes is not None and changes.after is not None  # followed, not read afresh


async def test_a_store_migrated_from_v4_is_followed_from_its_first_poll(
    db: Path, clock: FakeClock
) -> None:
    """A task written before v5 has no stamp of its own row (task_rev 0): its beats and its own
    changes are followed all the same."""
    con = sqlite3.connect(db)
    for migration in MIGRATIONS[:4]:
        for statement in _statements(migration):
            con.execute(statement)
    now = clock.now()
    con.execute(
        "INSERT INTO tasks (task_id, run_id, step, step_type, state, created_at, claimed_at,"
        " started_at, updated_at) VALUES ('old', 'r', 's', 'd', 'running', ?, ?, ?, ?)",
        (now, now, now, now),
    )
    con.execute(
        "INSERT INTO leases (task_id, owner, token, acquired_at, renewed_at, expires_at)"
        " VALUES ('old', 'w', 1, ?, ?, ?)",
        (now, now, now + 60),
    )
    con.execute(
        "INSERT INTO heartbeats (task_id, progress, written_at, progress_changed_at,"
        " stage_started_at, seq) VALUES ('old', 1, ?, ?, ?, 1)",
        (now, now, now),
    )
    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    con.execute("PRAGMA user_version = 4")
    con.commit()
    con.close()
    async with await SQLiteStore.open(db, clock=clock) as store:
        since = clock.now() - WINDOW
        first = {r.task.task_id: r for r in await store.poll(since)}
        await store.record_heartbeat("old", parse_line("p=2"), owner="w", token=1)
        second = {r.task.task_id: r for r in await store.poll(since)}
        assert second == await full_read(db, since)
        assert second["old"].task is first["old"].task
        assert second["old"].heartbeat is not None and second["old"].heartbeat.progress == 2
        await store.set_quarantine("old", quarantined=True, actor="t")
        third = {r.task.task_id: r for r in await store.poll(since)}
        assert third == await full_read(db, since) and third["old"].task.quarantined
        changes = store.poll_changes()
        assert changes is not None and changes.after is not None and set(changes.changed) == {"old"}
