"""The monitor: snapshots from a real store, urgency order, and keeping the last good data."""

from __future__ import annotations

from pathlib import Path

from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.health import Health
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.model import TaskState
from zombietop.store import Store, open_store


async def running(store: Store, task_id: str, **kwargs: object) -> int:
    await store.create_task(
        task_id=task_id, run_id="r", step="s", step_type="d", actor="t", **kwargs
    )  # type: ignore[arg-type]
    lease = await store.acquire_lease(task_id, owner="w", ttl=3600)
    await store.record_heartbeat(task_id, parse_line("stage=a p=1"), owner="w", token=lease.token)
    return lease.token


async def test_snapshot_classifies_and_orders(store: Store, clock: FakeClock) -> None:
    await running(store, "quiet")
    clock.advance(200)
    await running(store, "busy")
    await store.create_task(
        task_id="later", run_id="r", step="s", step_type="d", actor="t", upstream=["quiet"]
    )
    snapshot = await Monitor(store, default_config()).poll()
    assert snapshot.ok and snapshot.taken_at == clock.now()
    assert [v.task_id for v in snapshot.tasks] == ["quiet", "later", "busy"]
    assert [v.health for v in snapshot.tasks] == [Health.STALLED, Health.QUEUED, Health.HEALTHY]
    assert snapshot.counts[Health.STALLED] == 1 and snapshot.counts[Health.DEAD] == 0
    assert snapshot.paging == 1
    assert (
        snapshot.by_id()["later"].verdict.context(clock.now())
        == "later queued: waiting on quiet (stalled)"
    )


async def test_quarantined_counts_every_held_task_whatever_its_health_reads(
    store: Store, clock: FakeClock
) -> None:
    """The watchdog quarantines a stalled task, which still reads ``stalled``: the count of
    quarantined tasks says it is held. A finished task's old hold is not counted."""
    await running(store, "stuck")
    await running(store, "done")
    clock.advance(200)
    await running(store, "fine")
    for task_id in ("stuck", "done", "fine"):
        await store.set_quarantine(task_id, quarantined=True, actor="watchdog")
    await store.set_quarantine("fine", quarantined=False, actor="watchdog")
    lease = await store.get_lease("done")
    assert lease is not None and lease.owner is not None
    await store.finish_task("done", owner=lease.owner, token=lease.token, state=TaskState.FAILED)
    snapshot = await Monitor(store, default_config()).poll()
    healths = {view.task_id: view.health for view in snapshot.tasks}
    assert healths == {"stuck": Health.STALLED, "done": Health.FAILED, "fine": Health.HEALTHY}
    assert snapshot.counts[Health.QUARANTINED] == 0
    assert snapshot.quarantined == 1


async def test_a_failed_poll_keeps_the_last_good_snapshot(db_path: Path, clock: FakeClock) -> None:
    store = await open_store(db_path, create=True, clock=clock)
    await running(store, "t1")  # type: ignore[arg-type]
    monitor = Monitor(store, default_config(), clock=clock)
    good = await monitor.poll()
    await store.close()
    clock.advance(7)
    bad = await monitor.poll()
    assert not bad.ok and bad.error is not None and "is closed" in bad.error
    assert bad.tasks == good.tasks and bad.taken_at == good.taken_at
    assert bad.failed_at == clock.now()
    assert bad.age(clock.now()) == 7


async def test_first_poll_failing_is_an_empty_snapshot_with_the_reason(db_path: Path) -> None:
    store = await open_store(db_path, create=True)
    await store.close()
    snapshot = await Monitor(store, default_config()).poll()
    assert snapshot.taken_at is None and snapshot.tasks == () and snapshot.error


async def test_snapshots_iterates_without_overlap(store: Store) -> None:
    await running(store, "t1")
    monitor = Monitor(store, default_config())
    seen = []
    async for snapshot in monitor.snapshots(interval=0):
        seen.append(snapshot)
        if len(seen) == 3:
            break
    assert all(s.ok for s in seen)


async def test_events_leave_out_lease_renewals(store: Store, clock: FakeClock) -> None:
    token = await running(store, "t1")
    for _ in range(300):
        clock.advance(1)
        await store.renew_lease("t1", owner="w", token=token, ttl=3600)
    await store.record_event(kind="page", actor="watchdog", message="t1 stalled", task_id="t1")
    monitor = Monitor(store, default_config())
    kinds = [e.kind for e in await monitor.events("t1", limit=5)]
    assert kinds == ["page", "lease_acquired", "task_created"]
    everything = await monitor.events("t1", limit=5, renewals=True)
    assert [e.kind for e in everything][:2] == ["page", "lease_renewed"]
