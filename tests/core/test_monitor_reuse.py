"""A dashboard's monitor reuses verdicts between polls: it must never disagree with one that
classifies every task afresh, and at rest it must not re-classify what did not change."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import zombietop.judge.reuse as reuse_module
from tests.core.test_monitor import running
from tests.stores import open_kill_for_test
from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.errors import ZombietopError
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor, Snapshot, build_snapshot
from zombietop.judge.reuse import KeptSnapshot
from zombietop.model import ProcessSample, Task, TaskRecord, TaskState
from zombietop.store import Store


def judged(snapshot: Snapshot) -> list[tuple[object, ...]]:
    """Everything a face shows, ages included (read as of the snapshot's moment)."""
    now = snapshot.taken_at
    assert now is not None
    rows = []
    for view in snapshot.tasks:
        verdict = view.verdict
        rows.append(
            (
                view.task_id,
                view.health,
                verdict.health,
                verdict.flags,
                tuple((r.code, r.words(now), r.age(now), r.limit) for r in verdict.reasons),
                verdict.heartbeat_age(now),
                verdict.lease_expires_in(now),
                verdict.budgets(now),
                verdict.context(now),
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
    assert second.taken_at == first.taken_at + 5 and first.taken_at is not None
    verdict = view.verdict
    assert verdict.heartbeat_age(clock.now()) == verdict.heartbeat_age(first.taken_at) + 5


def sample(alive: bool = True, cpu: float = 0.0) -> ProcessSample:
    return ProcessSample(pid=4121, alive=alive, cpu_percent=cpu, sampled_at=0.0)


def test_a_new_process_reading_is_judged_and_said_at_once() -> None:
    config = default_config()
    now = 1_796_000_000.0
    from tests.core.test_classify import beat, lease, task

    record = TaskRecord(task=task(), lease=lease(), heartbeat=beat(), pending_kill=None)
    first = build_snapshot(now, [record], config, {"export-2031": sample(cpu=1.0)})
    kept = first.by_id()
    same = build_snapshot(
        now + 1, [record], config, {"export-2031": sample(cpu=1.0)}, previous=kept
    )
    assert same.tasks[0] is first.tasks[0]
    busier = build_snapshot(
        now + 1, [record], config, {"export-2031": sample(cpu=99.0)}, previous=kept
    )
    view = busier.tasks[0]
    assert view.process is not None and view.process.cpu_percent == 99.0
    assert "cpu 99%" in view.verdict.context(now + 1)
    gone = build_snapshot(
        now + 2, [record], config, {"export-2031": sample(alive=False)}, previous=kept
    )
    assert str(gone.tasks[0].health) == "dead"


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
    assert str(again.tasks[0].health) == "succeeded"


class ScriptedProbe:
    """A probe whose readings the test sets: a process per task id, seen only for the tasks
    the monitor asks about (those with a PID on this host)."""

    host = "here"

    def __init__(self) -> None:
        self.readings: dict[str, ProcessSample] = {}
        self.pids: dict[str, int] = {}
        """The PIDs the script gave tasks, to read (or lose sight of) those processes."""

    async def sample(self, tasks: Sequence[Task]) -> Mapping[str, ProcessSample]:
        return {t.task_id: self.readings[t.task_id] for t in tasks if t.task_id in self.readings}


async def scripted_change(
    store: Store, probe: ScriptedProbe, rng: random.Random, clock: FakeClock
) -> None:
    """One random write, process change or both, then a step of time that often lands on or
    past a threshold (heartbeat 2m, start grace 1m, lease, stage 15m, progress 30m, window)."""
    task_id = f"t{rng.randrange(8)}"
    lease = await store.get_lease(task_id) if rng.random() < 0.9 else None
    token = lease.token if lease is not None else 0
    owner = lease.owner if lease is not None and lease.owner else "w"
    choice = rng.randrange(14)
    now = clock.now()
    try:
        if choice == 0:
            upstream = rng.sample([f"t{i}" for i in range(8)], rng.choice([0, 0, 1, 2]))
            await store.create_task(
                task_id=task_id, run_id="r", step="s", step_type="d", actor="t", upstream=upstream
            )
        elif choice == 1:
            await store.acquire_lease(task_id, owner="w", ttl=rng.choice([60, 300, 3600]))
        elif choice in (2, 3):
            line = f"stage=s{rng.randrange(2)} p={rng.randrange(3)}"
            await store.record_heartbeat(task_id, parse_line(line), owner=owner, token=token)
            if choice == 3:
                await store.renew_lease(task_id, owner=owner, token=token, ttl=300)
        elif choice == 4:
            await store.release_lease(task_id, owner=owner, token=token)
        elif choice == 5:
            state = rng.choice([TaskState.SUCCEEDED, TaskState.FAILED, TaskState.INTERRUPTED])
            await store.finish_task(task_id, owner=owner, token=token, state=state)
        elif choice == 6:
            await store.set_quarantine(task_id, quarantined=rng.random() < 0.5, actor="t")
        elif choice == 7:
            await store.resume_task(task_id, expected_token=token or None, actor="t")
        elif choice == 8:
            await store.discard_task(task_id, expected_token=token or None, actor="t")
        elif choice in (9, 12):
            if lease is None or not lease.held or lease.expired(clock.now()):
                lease = await store.acquire_lease(task_id, owner="w", ttl=3600)
            pid = 4000 + rng.randrange(100)
            host = rng.choice(["here", "here", "elsewhere"])
            await store.set_process(
                task_id, owner="w", token=lease.token, pid=pid, pid_start_time=1.0, host=host
            )
            probe.pids[task_id] = pid
            if rng.random() < 0.5:
                probe.readings[task_id] = ProcessSample(pid=pid, alive=True, sampled_at=now)
        elif choice == 10:
            await open_kill_for_test(store, task_id)
        elif choice == 11:
            await store.close_kill(task_id, outcome="exited", actor="t", message="gone")
        elif probe.readings and rng.random() < 0.3:
            probe.readings.pop(rng.choice(sorted(probe.readings)))
        elif probe.pids:
            # A process appears to the probe, dies or is replaced behind an unchanged task.
            task_id = rng.choice(sorted(probe.pids))
            alive, reused = rng.random() < 0.7, rng.random() < 0.2
            probe.readings[task_id] = ProcessSample(
                pid=probe.pids[task_id], alive=alive, identity_ok=not reused, sampled_at=now
            )
    except ZombietopError:
        pass  # refused, lost or missing: the store is unchanged
    # A probe reads the CPU afresh every poll: it only colours the words.
    for reading_id, reading in probe.readings.items():
        probe.readings[reading_id] = replace(reading, cpu_percent=float(rng.randrange(100)))
    clock.advance(rng.choice([0.0, 0.5, 1.0, 1.0, 1.0, 5.0, 5.0, 30.0, 61.0, 120.0, 301.0, 901.0]))


@pytest.mark.parametrize("seed", range(3))
async def test_judging_only_what_changed_agrees_with_classifying_afresh(
    store: Store,
    reopen: Callable[..., Awaitable[Store]],
    clock: FakeClock,
    backend: str,
    seed: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tasks crossing their ``stable_until`` while unchanged, finishing and leaving the window,
    waiting behind upstream, with local processes appearing, dying and vanishing: at every
    step a reusing monitor on a store of its own shows what a fresh one shows."""
    followed = []
    follow = KeptSnapshot.follow

    def counting(kept: KeptSnapshot, *args: Any) -> Snapshot:
        followed.append(True)
        return follow(kept, *args)

    monkeypatch.setattr(KeptSnapshot, "follow", counting)
    if seed == 2:
        monkeypatch.setattr(reuse_module, "_DUE_SLACK", -(10**6))  # rebuild its heap each poll
    config = replace(default_config(), finished_window=2000.0)
    rng = random.Random(seed)
    probe = ScriptedProbe()
    async with await reopen(read_only=True) as own:
        reusing = Monitor(own, config, clock=clock, probe=probe, reuse_verdicts=True)
        afresh = Monitor(store, config, clock=clock, probe=probe)
        steps = 150
        for step in range(steps):
            await scripted_change(store, probe, rng, clock)
            ours, theirs = await reusing.poll(), await afresh.poll()
            assert ours.ok and theirs.ok
            assert judged(ours) == judged(theirs), f"seed {seed} step {step}"
            assert shown(ours) == shown(theirs), f"seed {seed} step {step}"
    if backend == "sqlite":
        # Most polls after the first judged only what changed: the shortcut was exercised.
        assert len(followed) > steps * 0.8
    else:
        assert followed == []  # no revision to follow: every poll reads and judges it all


def shown(snapshot: Snapshot) -> tuple[object, ...]:
    """The rest of what a face shows: counts, processes, upstream waits and fleet notes."""
    return (
        snapshot.counts,
        snapshot.quarantined,
        snapshot.host,
        snapshot.agents,
        [
            (v.task_id, v.process, v.waiting_on, v.remote, v.agent_note, v.pending_kill, v.limits)
            for v in snapshot.tasks
        ],
    )


async def test_a_monitor_sharing_its_store_never_follows_another_s_poll(
    store: Store, clock: FakeClock
) -> None:
    """Two monitors on one store object: a poll's changes are against the other monitor's
    poll, so the reusing one must not take them as all that changed since its own."""
    token = await running(store, "a")
    reusing = Monitor(store, default_config(), clock=clock, reuse_verdicts=True)
    other = Monitor(store, default_config(), clock=clock)
    await reusing.poll()
    clock.advance(100)
    await store.record_heartbeat("a", parse_line("stage=a p=2"), owner="w", token=token)
    await other.poll()  # reads the beat
    clock.advance(100)  # the first beat is now stale, the second is not
    assert str((await reusing.poll()).tasks[0].health) == "healthy"


async def test_an_agent_or_an_owed_request_is_seen_at_once(
    store: Store, reopen: Callable[..., Awaitable[Store]], clock: FakeClock
) -> None:
    """Agents and owed requests change what a task's view says without changing its record:
    a monitor that judges only what changed must notice them (and follow again once they go)."""
    token = await running(store, "far", host="elsewhere")
    await store.set_process(
        "far", owner="w", token=token, pid=77, pid_start_time=1.0, host="elsewhere"
    )
    async with await reopen(read_only=True) as own:
        reusing = Monitor(own, default_config(), clock=clock, host="here", reuse_verdicts=True)
        afresh = Monitor(store, default_config(), clock=clock, host="here")

        async def agree(why: str) -> None:
            clock.advance(1)
            ours, theirs = await reusing.poll(), await afresh.poll()
            assert (judged(ours), shown(ours)) == (judged(theirs), shown(theirs)), why

        await agree("first")
        await agree("at rest")
        request = await store.request_host_action(
            task_id="far", host="elsewhere", kind="kill", expected_token=token, actor="t"
        )
        await agree("a request waits for an agent")
        await store.finish_host_request(request.request_id, outcome="done", message="", actor="t")
        await agree("the request is done")
        await agree("at rest again")
        await store.record_agent_beat(
            "elsewhere", agent_id="a", pid=5, interval=2.0, reported_at=clock.now()
        )
        await agree("an agent reports")


class Placed:
    """A view as ``reordered`` sees it: only its urgency."""

    def __init__(self, urgency: tuple[int, float, str]) -> None:
        self.urgency = urgency


@given(
    kept=st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, 1.0, 2.0])), max_size=40),
    leaving=st.lists(st.booleans(), max_size=40),
    moved=st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, 1.5, 2.0])), max_size=40),
)
def test_reordering_puts_each_view_where_sorting_every_view_would(
    kept: list[tuple[int, float]], leaving: list[bool], moved: list[tuple[int, float]]
) -> None:
    """Views leave from anywhere (the first, the last, side by side) and arrive anywhere (before
    every view, between equal ranks, after the last, many at one place): the order is the one a
    sort of every view gives."""
    before = sorted(
        (Placed((rank, moment, f"k{index:02}")) for index, (rank, moment) in enumerate(kept)),
        key=lambda view: view.urgency,
    )
    out = [view for view, leaves in zip(before, leaving, strict=False) if leaves]
    arriving = [Placed((rank, at, f"m{index:02}")) for index, (rank, at) in enumerate(moved)]

    views = reuse_module.reordered(
        tuple(before),  # type: ignore[arg-type]
        out,  # type: ignore[arg-type]
        arriving,  # type: ignore[arg-type]
    )

    expected = sorted(
        [view for view in before if view not in out] + arriving, key=lambda view: view.urgency
    )
    assert list(views) == expected
