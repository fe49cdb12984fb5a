"""The lease protocol: exclusive acquire, CAS renew, release, reclaim-only-once-expired, fencing."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stores import Reopen, open_for_test
from zombietop.clock import FakeClock
from zombietop.errors import LeaseHeld, LeaseLost, ReadOnlyStore
from zombietop.model import EventKind, TaskState
from zombietop.store import Store

REPO = Path(__file__).resolve().parents[2]
RACER_OPERATIONS = 50


async def new_task(store: Store, task_id: str = "t1") -> None:
    await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="test")


async def test_acquire_is_exclusive_and_tokens_grow(store: Store, clock: FakeClock) -> None:
    await new_task(store)
    first = await store.acquire_lease("t1", owner="w1", ttl=60)
    assert (first.owner, first.token, first.expires_at) == ("w1", 1, clock.now() + 60)
    with pytest.raises(LeaseHeld, match="leased to w1 \\(token 1\\) for another 1m00s"):
        await store.acquire_lease("t1", owner="w2", ttl=60)
    await store.release_lease("t1", owner="w1", token=1)
    second = await store.acquire_lease("t1", owner="w2", ttl=60)
    assert second.token == 2


async def test_renew_is_compare_and_swap(store: Store, clock: FakeClock) -> None:
    await new_task(store)
    await store.acquire_lease("t1", owner="w1", ttl=60)
    clock.advance(59)
    renewed = await store.renew_lease("t1", owner="w1", token=1, ttl=60)
    assert renewed.expires_at == clock.now() + 60
    with pytest.raises(
        LeaseLost, match="w2 \\(token 1\\) no longer owns t1; the lease is held by w1"
    ):
        await store.renew_lease("t1", owner="w2", token=1, ttl=60)
    with pytest.raises(LeaseLost, match="no longer owns"):
        await store.renew_lease("t1", owner="w1", token=0, ttl=60)


async def test_an_expired_lease_cannot_be_resurrected(store: Store, clock: FakeClock) -> None:
    await new_task(store)
    await store.acquire_lease("t1", owner="w1", ttl=60)
    clock.advance(61)
    with pytest.raises(LeaseLost, match="w1's lease on t1 expired 1s ago"):
        await store.renew_lease("t1", owner="w1", token=1, ttl=60)
    assert not await store.still_owner("t1", owner="w1", token=1)


async def test_reclaim_only_once_expired(store: Store, clock: FakeClock) -> None:
    await new_task(store)
    await store.acquire_lease("t1", owner="w1", ttl=60)
    with pytest.raises(LeaseHeld, match="is live for another 1m00s; it cannot be reclaimed yet"):
        await store.reclaim_lease("t1", owner="w2", ttl=60)
    clock.advance(60)
    with pytest.raises(LeaseHeld):  # at the exact expiry the lease is still live
        await store.reclaim_lease("t1", owner="w2", ttl=60)
    clock.advance(1)
    with pytest.raises(LeaseHeld, match="expired 1s ago: reclaim it instead"):
        await store.acquire_lease("t1", owner="w2", ttl=60)
    taken = await store.reclaim_lease("t1", owner="w2", ttl=60)
    assert (taken.owner, taken.token) == ("w2", 2)
    task = await store.get_task("t1")
    assert task.attempt == 2 and task.state is TaskState.STARTING
    # The old owner is fenced off everywhere.
    assert not await store.still_owner("t1", owner="w1", token=1)
    assert await store.still_owner("t1", owner="w2", token=2)
    with pytest.raises(LeaseLost):
        await store.release_lease("t1", owner="w1", token=1)
    with pytest.raises(LeaseLost):
        await store.finish_task("t1", owner="w1", token=1, state=TaskState.SUCCEEDED, exit_code=0)


async def test_nothing_to_reclaim_and_finished_tasks(store: Store) -> None:
    await new_task(store)
    with pytest.raises(LeaseHeld, match="has no lease to reclaim: acquire it instead"):
        await store.reclaim_lease("t1", owner="w1", ttl=60)
    lease = await store.acquire_lease("t1", owner="w1", ttl=60)
    await store.finish_task(
        "t1", owner="w1", token=lease.token, state=TaskState.SUCCEEDED, exit_code=0
    )
    with pytest.raises(LeaseHeld, match="t1 is succeeded; a finished task cannot be leased"):
        await store.acquire_lease("t1", owner="w2", ttl=60)


async def test_every_lease_change_is_an_event(store: Store, clock: FakeClock) -> None:
    await new_task(store)
    await store.acquire_lease("t1", owner="w1", ttl=60)
    await store.renew_lease("t1", owner="w1", token=1, ttl=60)
    clock.advance(61)
    await store.reclaim_lease("t1", owner="w2", ttl=60)
    await store.release_lease("t1", owner="w2", token=2)
    events = list(reversed(await store.events(task_id="t1")))
    assert [e.kind for e in events] == [
        EventKind.TASK_CREATED,
        EventKind.LEASE_ACQUIRED,
        EventKind.LEASE_RENEWED,
        EventKind.LEASE_RECLAIMED,
        EventKind.LEASE_RELEASED,
    ]
    reclaim = events[3]
    assert reclaim.data["previous_owner"] == "w1" and reclaim.data["token"] == 2


async def test_read_only_store_cannot_touch_leases(store: Store, reopen: Reopen) -> None:
    await new_task(store)
    async with await reopen(read_only=True) as ro:
        with pytest.raises(ReadOnlyStore):
            await ro.acquire_lease("t1", owner="w1", ttl=60)


async def test_concurrent_acquires_in_one_process_have_one_winner(store: Store) -> None:
    await new_task(store)
    results = await asyncio.gather(
        *(store.acquire_lease("t1", owner=f"w{i}", ttl=60) for i in range(8)),
        return_exceptions=True,
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    assert len(winners) == 1
    assert all(isinstance(r, LeaseHeld) for r in results if isinstance(r, BaseException))


@pytest.mark.slow
async def test_multi_process_lease_race(store_location: Path | str) -> None:
    """Six processes, started together, fight over two leases on one store (a SQLite file, or a
    PostgreSQL database on the server's real clock), 50 operations each.

    Replaying the event log must show: a grant only when nobody holds a live lease (so never two
    owners at once), every token one more than the last, no renewal with a stale token or after
    expiry, and no process dying of "database is locked". How fast they go is for bench/.
    """
    async with await open_for_test(store_location, create=True) as store:
        for task_id in ("race-a", "race-b"):
            await new_task(store, task_id)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    racers = [
        subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("lease_racer.py")),
                str(store_location),
                f"racer{i}",
                str(RACER_OPERATIONS),
                str(i),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(6)
    ]
    try:
        # Each says "ready" once its store is open; then all are let go at once.
        for racer in racers:
            assert racer.stdout is not None
            said = await asyncio.to_thread(racer.stdout.readline)
            assert said == "ready\n", said + (racer.stderr.read() if racer.stderr else "")
        outputs = [racer.communicate("go\n", timeout=100) for racer in racers]
    finally:
        for racer in racers:
            racer.kill()  # none is left waiting for its "go" should the test fail
            racer.communicate()
    for racer, (_out, err) in zip(racers, outputs, strict=True):
        assert racer.returncode == 0, err
        assert "locked" not in err

    async with await open_for_test(store_location) as store:
        events = sorted(await store.events(limit=1_000_000), key=lambda e: e.event_id)
    state: dict[str, dict[str, float | str | int | None]] = {
        t: {"owner": None, "token": 0, "expires_at": None} for t in ("race-a", "race-b")
    }
    counts = dict.fromkeys(("acquired", "reclaimed", "renewed", "released"), 0)
    # Per task: PostgreSQL serializes the writes to one task (its row lock), not to the store,
    # so two tasks' events may interleave out of time order; one task's never may.
    last_at = dict.fromkeys(state, 0.0)
    for event in events:
        if event.kind not in {k.value for k in EventKind if k.value.startswith("lease_")}:
            continue
        assert event.at >= last_at[event.task_id or ""], "events committed out of time order"
        last_at[event.task_id or ""] = event.at
        lease = state[event.task_id or ""]
        data = event.data
        if event.kind == EventKind.LEASE_ACQUIRED:
            assert lease["owner"] is None, f"{event.message}: {lease['owner']} still held it"
            assert data["token"] == lease["token"] + 1  # type: ignore[operator]
            lease.update(owner=data["owner"], token=data["token"], expires_at=data["expires_at"])
            counts["acquired"] += 1
        elif event.kind == EventKind.LEASE_RECLAIMED:
            assert lease["owner"] is not None
            assert event.at > lease["expires_at"], f"{event.message}: reclaimed a live lease"  # type: ignore[operator]
            assert data["previous_owner"] == lease["owner"]
            assert data["token"] == lease["token"] + 1  # type: ignore[operator]
            lease.update(owner=data["owner"], token=data["token"], expires_at=data["expires_at"])
            counts["reclaimed"] += 1
        elif event.kind == EventKind.LEASE_RENEWED:
            assert (data["owner"], data["token"]) == (lease["owner"], lease["token"]), (
                "stale renewal"
            )
            assert event.at <= lease["expires_at"], "renewed after expiry"  # type: ignore[operator]
            lease["expires_at"] = data["expires_at"]
            counts["renewed"] += 1
        elif event.kind == EventKind.LEASE_RELEASED:
            assert (data["owner"], data["token"]) == (lease["owner"], lease["token"]), (
                "stale release"
            )
            lease.update(owner=None, expires_at=None)
            counts["released"] += 1
    # The race exercised every path, or it proved nothing.
    assert all(n > 5 for n in counts.values()), counts
