"""A dashboard's monitor reuses verdicts between polls: it must never disagree with one that
classifies every task afresh, and at rest it must not re-classify what did not change."""

from __future__ import annotations

from core.clock import FakeClock
from core.config import default_config
from core.heartbeat_line import parse_line
from core.model import ProcessSample, TaskRecord, TaskState
from core.monitor import Monitor, Snapshot, build_snapshot
from core.store import Store
from tests.core.test_monitor import running


def judged(snapshot: Snapshot) -> list[tuple[object, ...]]:
    """Everything a face shows, ages included (read as of the snapshot's moment)."""
    now = snapshot.taken_at
    assert now is not None
    rows = []
    for view in snapshot.tasks:
        verdict = view.verdict_at(now)
        rows.append(
            (
                view.task_id,
                view.health,
                verdict.health,
                verdict.flags,
                tuple(r.code for r in verdict.reasons),
                verdict.heartbeat_age_s,
                verdict.lease_expires_in_s,
                verdict.budgets.stage.used_s,
                verdict.context,
            )
        )
    return rows


async def test_reusing_verdicts_never_disagrees_with_classifying_afresh(
    store: Store, clock: FakeClock
) -> None:
    config = default_config()  # heartbeat 2m, lease 5m, progress 30m, grace 1m, stage 15m
    token = {name: await running(store, name) for name in ("steady", "quiet", "stuck")}
    await store.create_task(task_id="fresh", run_id="r", step="s", step_type="d", actor="t")
    await store.acquire_lease("fresh", owner="w", ttl=300)
    await store.create_task(
        task_id="later", run_id="r", step="s", step_type="d", actor="t", upstream=["quiet"]
    )
    reusing = Monitor(store, config, clock=clock, reuse_verdicts=True)
    afresh = Monitor(store, config, clock=clock)
    progress = 1
    # Steps that land before, on and past each threshold, with writes between some of them.
    for step, advance in enumerate([1, 1, 30, 29, 61, 1, 118, 2, 300, 600, 900, 1, 1800, 5]):
        clock.advance(advance)
        if step % 3 == 0:
            progress += 1
            await store.record_heartbeat(
                "steady", parse_line(f"stage=a p={progress}"), owner="w", token=token["steady"]
            )
            await store.renew_lease("steady", owner="w", token=token["steady"], ttl=3600)
        if step % 4 == 0:
            await store.record_heartbeat(
                "stuck", parse_line("stage=a p=1"), owner="w", token=token["stuck"]
            )
            await store.renew_lease("stuck", owner="w", token=token["stuck"], ttl=3600)
        ours, theirs = await reusing.poll(), await afresh.poll()
        assert judged(ours) == judged(theirs), f"step {step} (+{advance}s)"
    healths = {view.task_id: str(view.health) for view in reusing.last.tasks}
    assert healths == {
        "steady": "healthy",
        "quiet": "reclaimable",
        "stuck": "spinning",
        "fresh": "reclaimable",
        "later": "queued",
    }


async def test_at_rest_nothing_is_classified_again(store: Store, clock: FakeClock) -> None:
    await running(store, "a")
    await running(store, "b")
    monitor = Monitor(store, default_config(), clock=clock, reuse_verdicts=True)
    first = await monitor.poll()
    clock.advance(5)
    second = await monitor.poll()
    assert [v is w for v, w in zip(first.tasks, second.tasks, strict=True)] == [True, True]
    view = second.by_id()["a"]
    assert view.verdict.at == first.taken_at and second.taken_at == first.taken_at + 5
    assert view.verdict_at(clock.now()).heartbeat_age_s == view.verdict.heartbeat_age_s + 5


def sample(alive: bool = True, cpu: float = 0.0) -> ProcessSample:
    return ProcessSample(pid=4121, alive=alive, cpu_percent=cpu, sampled_at=0.0)


def test_a_process_reading_keeps_the_verdict_until_the_process_is_gone() -> None:
    config = default_config()
    now = 1_796_000_000.0
    from tests.core.test_classify import beat, lease, task

    record = TaskRecord(task=task(), lease=lease(), heartbeat=beat(), pending_kill=None)
    first = build_snapshot(now, [record], config, {"export-2031": sample(cpu=1.0)})
    kept = first.by_id()
    busier = build_snapshot(
        now + 1, [record], config, {"export-2031": sample(cpu=99.0)}, previous=kept
    )
    view = busier.tasks[0]
    assert view is not first.tasks[0] and view.verdict is first.tasks[0].verdict
    assert view.process is not None and view.process.cpu_percent == 99.0
    assert "cpu 99%" in view.verdict_at(now + 1).context
    gone = build_snapshot(
        now + 2, [record], config, {"export-2031": sample(alive=False)}, previous=kept
    )
    assert str(gone.tasks[0].health) == "dead" and gone.tasks[0].verdict.at == now + 2


def test_a_changed_record_is_classified_again() -> None:
    config = default_config()
    now = 1_796_000_000.0
    from tests.core.test_classify import beat, lease, task

    record = TaskRecord(task=task(), lease=lease(), heartbeat=beat(), pending_kill=None)
    kept = build_snapshot(now, [record], config, {}).by_id()
    finished = TaskRecord(
        task=task(state=TaskState.SUCCEEDED, finished_at=now),
        lease=None,
        heartbeat=beat(),
        pending_kill=None,
    )
    again = build_snapshot(now + 1, [finished], config, {}, previous=kept)
    assert str(again.tasks[0].health) == "succeeded" and again.tasks[0].verdict.at == now + 1
