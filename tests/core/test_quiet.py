"""Quiet tasks (``zombietop.judge.quiet``): the store's test agrees with ``classify``.

A store of varied tasks (running, starting, queued, finished; beats reported, observed or none;
stale, stuck or fresh; leases expired or let go; quarantined, malformed, runs of a job, behind an
upstream, under a kill, sampled dead by an agent, on this host) is judged both ways at several
moments: every task the store counts as quiet must be one ``classify`` calls healthy or queued
with no reason and no flag, now and one refresh later. The reverse is not asked: the store's
test is a bound, and a task it reads whole is judged by ``classify`` as any other.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from zombietop.clock import FakeClock
from zombietop.config import Config, default_config
from zombietop.errors import LeaseLost
from zombietop.health import Health
from zombietop.heartbeat_line import BeatLine
from zombietop.judge.monitor import Monitor
from zombietop.judge.quiet import quiet_bounds
from zombietop.judge.snapshot import Fleet, Snapshot, build_snapshot
from zombietop.model import ProcessSample, Task, TaskState
from zombietop.store import Store

HERE = "this-host"
ELSEWHERE = "host-b"


def config() -> Config:
    """The defaults, and a step type whose every limit is shorter."""
    base = default_config()
    quick = replace(
        base.defaults,
        heartbeat_timeout=40.0,
        progress_timeout=300.0,
        stage=120.0,
        request=20.0,
        task=900.0,
        queue_timeout=200.0,
        lease_ttl=60.0,
        step_type="quick",
    )
    return replace(base, step_types={"quick": quick}, read_at_most=100)


def sample(rng: random.Random, now: float, pid: int) -> ProcessSample:
    """A process as a probe may find it: running or idle for long, stopped, a zombie, gone."""
    alive = rng.random() < 0.7
    return ProcessSample(
        pid=pid,
        alive=alive,
        status=rng.choice(["sleeping", "sleeping", "stopped", "zombie"]) if alive else None,
        cpu_percent=1.0,
        rss_bytes=1,
        threads=1,
        io_idle_s=1.0,
        idle_s=rng.choice([1.0, 5000.0]),
        children=0,
        create_time=now - 10,
        sampled_at=now,
    )


async def fill(
    store: Store, clock: FakeClock, rng: random.Random, tasks: int
) -> dict[str, ProcessSample]:
    """``tasks`` tasks, each made by a random walk through what happens to tasks; the
    samples this host's probe takes of its own (an agent on another host stores its own)."""
    samples: dict[str, ProcessSample] = {}
    here: dict[str, ProcessSample] = {}
    for n in range(tasks):
        task_id = f"t{n:03d}"
        roll = rng.random()
        await store.create_task(
            task_id=task_id,
            run_id=task_id,
            step="work",
            step_type=rng.choice(["quick", "batch"]),
            actor="test",
            upstream=("t000",) if roll < 0.05 else (),
            job="nightly" if 0.05 <= roll < 0.1 else None,
        )
        clock.advance(rng.choice([0.0, 0.1, 0.2]))
        if rng.random() < 0.2:
            if rng.random() < 0.3:
                await store.acquire_lease(task_id, owner="waiter", ttl=60.0, queued=True)
            continue  # queued
        lease = await store.acquire_lease(task_id, owner="w", ttl=rng.choice([60.0, 600.0]))
        with contextlib.suppress(LeaseLost):  # a worker whose lease ran out does no more
            await walk(store, clock, rng, task_id, lease.token, here if n % 2 else samples)
    await store.record_agent_round(
        ELSEWHERE, agent_id="a", pid=1, interval=10.0, reported_at=clock.now(), samples=samples
    )
    return here


async def walk(
    store: Store,
    clock: FakeClock,
    rng: random.Random,
    task_id: str,
    token: int,
    samples: dict[str, ProcessSample],
) -> None:
    """What befalls a claimed task: a process, beats, and perhaps a hold, an end or a kill."""
    n = int(task_id[1:])
    if rng.random() < 0.5:
        host = HERE if n % 2 else ELSEWHERE  # where ``samples`` are taken
        await store.set_process(
            task_id, owner="w", token=token, pid=1000 + n, pid_start_time=1.0, host=host
        )
        samples[task_id] = sample(rng, clock.now(), 1000 + n)
    if rng.random() < 0.15:
        return  # starting: no beat yet
    for _ in range(rng.randint(1, 3)):
        clock.advance(
            rng.choice([0.0, 0.1, 0.2]) if rng.random() < 0.95 else rng.choice([50.0, 400.0])
        )
        if rng.random() < 0.2:
            await store.record_observed_heartbeat(task_id, {"cpu": 1.0}, owner="w", token=token)
            continue
        line = BeatLine(
            stage=rng.choice(["load", "load", "save"]),
            progress=rng.choice([10.0, 10.0, 50.0]),
            request=rng.choice([None, None, "GET /x"]),
        )
        await store.record_heartbeat(task_id, line, owner="w", token=token)
    extra = rng.random()
    if extra < 0.05:
        await store.set_quarantine(task_id, quarantined=True, actor="test")
    elif extra < 0.1:
        await store.record_heartbeat_error(task_id, "bad line")
    elif extra < 0.15:
        await store.finish_task(task_id, owner="w", token=token, state=TaskState.SUCCEEDED)
    elif extra < 0.2:
        await store.open_kill(
            task_id, pid=1000 + n, pid_start_time=1.0, pgid=None, host=ELSEWHERE,
            requested_by="test", grace=30.0,
        )  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
async def test_every_task_the_store_counts_as_quiet_is_healthy_or_queued_with_nothing_to_say(
    store: Store, clock: FakeClock, seed: int
) -> None:
    rng = random.Random(seed)
    cfg = config()
    here = await fill(store, clock, rng, 200)
    quiet_seen: set[Health] = set()
    for step in (0.0, 10.0, 30.0, 100.0, 400.0, 1000.0, 2000.0):
        clock.advance(step)
        now = await store.now()
        bounds = quiet_bounds(now, cfg, HERE)
        loud = await store.poll_loud(None, bounds.params(), limit=1000)
        everything = await store.poll(None)
        agents = {agent.host: agent for agent in await store.agents()}
        fleet = Fleet(host=HERE, agents=agents, samples=await store.process_samples())
        read = {record.task.task_id for record in loud.records}
        quiet = {r.task.task_id for r in everything if not r.task.state.finished} - read
        assert sum(loud.quiet.values()) == len(quiet)
        assert loud.loud == sum(1 for r in loud.records if not r.task.state.finished)
        for at in (now, bounds.at):
            snapshot = build_snapshot(at, everything, cfg, here, fleet)
            for view in (view for view in snapshot.tasks if view.task_id in quiet):
                verdict = view.verdict
                said = (view.task_id, verdict.health, verdict.reasons, verdict.flags)
                assert verdict.health in (Health.HEALTHY, Health.QUEUED), said
                assert not verdict.reasons and not verdict.flags, said
                quiet_seen.add(verdict.health)
    # The walk made quiet tasks of both kinds: the test above tested something.
    assert quiet_seen == {Health.HEALTHY, Health.QUEUED}


@pytest.mark.backends("postgresql")
async def test_a_poll_of_a_large_store_counts_its_quiet_tasks_and_reads_the_loud_ones(
    store: Store, clock: FakeClock
) -> None:
    """Past ``read_at_most`` active tasks the monitor reads the loud ones, the longest silent
    first, counts the quiet into the snapshot's counts, and says how many it left unread."""
    for n in range(130):
        task_id = f"t{n:03d}"
        await store.create_task(
            task_id=task_id, run_id=task_id, step="w", step_type="batch", actor="test"
        )
        lease = await store.acquire_lease(task_id, owner="w", ttl=3600.0)
        await store.record_heartbeat(task_id, BeatLine(stage="s", progress=1.0), owner="w",
                                     token=lease.token)  # fmt: skip
        clock.advance(1.0 if n < 120 else 0.0)
    # The beats are 124.5 s to 4.5 s old: the first 5 are older than the 120 s timeout, and the
    # next 2 will be by the next poll (one 2 s refresh on): those 7 are read.
    clock.advance(4.5)
    for n in range(130, 140):
        await store.create_task(
            task_id=f"t{n:03d}", run_id=f"t{n:03d}", step="w", step_type="batch", actor="test"
        )  # queued, nothing to say
    cfg = replace(default_config(), read_at_most=100)
    monitor = Monitor(store, cfg, clock=clock, host=HERE)
    snapshot = await monitor.poll()
    assert snapshot.error is None
    assert snapshot.counted is not None
    assert [view.task_id for view in snapshot.tasks] == [f"t{n:03d}" for n in range(7)]
    assert [v.verdict.health for v in snapshot.tasks] == [Health.STALLED] * 5 + [Health.HEALTHY] * 2
    assert snapshot.counted.quiet == {Health.HEALTHY: 123, Health.QUEUED: 10}
    assert snapshot.counted.unread == 0
    assert snapshot.counts[Health.HEALTHY] == 125
    assert snapshot.counts[Health.STALLED] == 5
    assert snapshot.counts[Health.QUEUED] == 10

    # More loud tasks than a poll reads: the longest silent are read, the rest said.
    clock.advance(200.0)  # every beat is stale now
    snapshot = await monitor.poll()
    assert snapshot.counted is not None
    assert len(snapshot.tasks) == 100
    assert snapshot.tasks[0].task_id == "t000"
    assert snapshot.counted.unread == 30
    assert snapshot.counted.quiet == {Health.HEALTHY: 0, Health.QUEUED: 10}

    # At or under the limit again, every task is read.
    for n in range(100, 140):
        lease = await store.get_lease(f"t{n:03d}")
        token = None if lease is None else lease.token
        await store.discard_task(f"t{n:03d}", expected_token=token, actor="test", reason="done")
    snapshot = await monitor.poll()  # this poll still counts: the last one saw 140 active
    snapshot = await monitor.poll()
    assert snapshot.counted is None
    assert len(snapshot.tasks) >= 100


@pytest.mark.backends("postgresql")
async def test_a_task_that_goes_quiet_is_listed_once_more_so_that_its_recovery_is_seen(
    store: Store, clock: FakeClock
) -> None:
    """A stalled task of a large store that beats again is quiet at once; the next poll still
    lists it, healthy, so the dashboard and the watchdog see it recover (a page closes as
    recovered, a flip is counted); the one after counts it."""
    tokens: dict[str, int] = {}
    for n in range(120):
        task_id = f"t{n:03d}"
        await store.create_task(
            task_id=task_id, run_id=task_id, step="w", step_type="batch", actor="test"
        )
        tokens[task_id] = (await store.acquire_lease(task_id, owner="w", ttl=3600.0)).token
        await store.record_heartbeat(task_id, BeatLine(stage="s", progress=1.0), owner="w",
                                     token=tokens[task_id])  # fmt: skip
        clock.advance(200.0 if n == 0 else 0.0)  # t000's beat is stale, the others are fresh
    monitor = Monitor(store, replace(default_config(), read_at_most=100), clock=clock, host=HERE)

    def listed(snapshot: Snapshot) -> dict[str, Health]:
        return {view.task_id: view.verdict.health for view in snapshot.tasks}

    first = await monitor.poll()
    assert listed(first) == {"t000": Health.STALLED}
    await store.record_heartbeat("t000", BeatLine(stage="s", progress=2.0), owner="w",
                                 token=tokens["t000"])  # fmt: skip
    recovered = await monitor.poll()
    assert listed(recovered) == {"t000": Health.HEALTHY}
    assert recovered.counts[Health.HEALTHY] == 120
    assert recovered.counted is not None and recovered.counted.quiet[Health.HEALTHY] == 119
    counted = await monitor.poll()
    assert listed(counted) == {}
    assert counted.counted is not None and counted.counted.quiet[Health.HEALTHY] == 120


@pytest.mark.backends("sqlite")
async def test_a_sqlite_store_past_the_limit_is_still_read_whole(
    store: Store, clock: FakeClock
) -> None:
    """SQLite's polls after the first read only what changed: it keeps every task listed."""
    for n in range(120):
        await store.create_task(
            task_id=f"t{n:03d}", run_id=f"t{n:03d}", step="w", step_type="batch", actor="test"
        )
    monitor = Monitor(store, replace(default_config(), read_at_most=100), clock=clock, host=HERE)
    for _ in range(2):
        snapshot = await monitor.poll()
        assert snapshot.counted is None
        assert len(snapshot.tasks) == 120


class GoneHere:
    """This host's probe: every task's process here is gone."""

    host = HERE

    async def sample(self, tasks: Sequence[Task]) -> dict[str, ProcessSample]:
        return {task.task_id: replace(DEAD, pid=task.pid or 0) for task in tasks}


DEAD = ProcessSample(pid=0, alive=False, sampled_at=0.0)


async def test_each_part_of_the_test_keeps_its_own_kind_of_task_loud(
    store: Store, clock: FakeClock
) -> None:
    """A quiet task and a queued one, and beside them tasks that each differ from the quiet
    one in one way: the store counts exactly the two as quiet, and ``classify`` finds
    something to say about each of the others (but a kill under way, which it shows, not
    judges). Leaving any part out of the store's test makes its task quiet here."""
    limits = replace(
        default_config().defaults,
        heartbeat_timeout=120.0, progress_timeout=600.0, stage=900.0, request=90.0,
        task=3000.0, queue_timeout=600.0,
    )  # fmt: skip
    cfg = replace(default_config(), defaults=limits, read_at_most=100)
    tokens: dict[str, int] = {}

    async def running(task_id: str, ttl: float = 1e6, **task: Any) -> None:
        await store.create_task(
            task_id=task_id, run_id=task_id, step="w", step_type="batch", actor="t", **task
        )
        lease = await store.acquire_lease(task_id, owner="w", ttl=ttl)
        tokens[task_id] = lease.token
        await beat(task_id, stage="s", progress=1.0)

    async def beat(task_id: str, **line: Any) -> None:
        await store.record_heartbeat(task_id, BeatLine(**line), owner=None)

    async def on(task_id: str, host: str) -> None:
        await store.set_process(
            task_id, owner="w", token=tokens[task_id], pid=4242, pid_start_time=1.0, host=host
        )

    # t = 0
    await running("over_task_budget")
    for n in range(5):  # a job's usual run takes 100 s
        await running(f"nightly/{n}", job="nightly")
    await store.create_task(task_id="queued_long", run_id="q", step="w", step_type="b", actor="t")
    clock.advance(100.0)
    for n in range(5):
        await store.finish_task(
            f"nightly/{n}", owner="w", token=tokens[f"nightly/{n}"], state=TaskState.SUCCEEDED
        )
    clock.advance(900.0)
    # t = 1000
    for task_id in ("quiet", "stuck", "over_stage", "over_request", "stale", "quarantined",
                    "malformed", "killing", "idle", "here", "gone", "zombie", "reused"):  # fmt: skip
        await running(task_id)
    await running("lease_expired", ttl=2400.0)
    await running("lease_ending", ttl=2501.0)  # expires within the next refresh
    await running("slow_run", job="nightly")
    await store.record_observed_heartbeat("idle", {"cpu": 1.0}, owner="w", token=tokens["idle"])
    clock.advance(1800.0)
    # t = 2800: a new stage, and progress as it was (it has not moved since)
    await beat("stuck", stage="s2", progress=1.0)
    clock.advance(500.0)
    # t = 3300
    await beat("stale", stage="s2", progress=2.0)
    await beat("idle", stage="s2", progress=2.0)
    await beat("over_request", stage="s2", progress=2.0, request="GET /slow")
    await store.create_task(task_id="queued", run_id="q1", step="w", step_type="b", actor="t")
    await store.create_task(
        task_id="behind", run_id="q2", step="w", step_type="b", actor="t", upstream=("quiet",)
    )
    await store.create_task(task_id="waiter_gone", run_id="q3", step="w", step_type="b",
                            actor="t")  # fmt: skip
    await store.acquire_lease("waiter_gone", owner="waiter", ttl=100.0, queued=True)
    clock.advance(200.0)
    # t = 3500: the last beats
    for task_id in ("quiet", "over_task_budget", "over_stage", "over_request", "quarantined",
                    "malformed", "killing", "here", "gone", "zombie", "reused", "lease_expired",
                    "lease_ending", "slow_run"):  # fmt: skip
        stage = "s" if task_id == "over_stage" else "s2"
        request = "GET /slow" if task_id == "over_request" else None
        await beat(task_id, stage=stage, progress=2.0, request=request)
    await beat("stuck", stage="s2", progress=1.0)
    await store.record_observed_heartbeat("idle", {"cpu": 2.0}, owner="w", token=tokens["idle"])
    await store.set_quarantine("quarantined", quarantined=True, actor="t")
    await store.record_heartbeat_error("malformed", "bad line")
    await store.open_kill(
        "killing", pid=4242, pid_start_time=1.0, pgid=None, host=ELSEWHERE, requested_by="t",
        grace=30.0,
    )  # fmt: skip
    await on("here", HERE)
    now = clock.now()
    found = {
        "idle": replace(DEAD, pid=4242, alive=True, status="sleeping", idle_s=5000.0),
        "gone": replace(DEAD, pid=4242),
        "zombie": replace(DEAD, pid=4242, alive=True, status="zombie"),
        "reused": replace(DEAD, pid=4242, alive=True, status="sleeping", identity_ok=False),
    }
    for task_id in found:
        await on(task_id, ELSEWHERE)
    found = {task_id: replace(s, sampled_at=now) for task_id, s in found.items()}
    await store.record_agent_round(
        ELSEWHERE, agent_id="a", pid=1, interval=10.0, reported_at=now, samples=found
    )

    bounds = quiet_bounds(await store.now(), cfg, HERE)
    loud = await store.poll_loud(0.0, bounds.params(), limit=1000)
    read = {record.task.task_id for record in loud.records if not record.task.state.finished}
    everything = {r.task.task_id for r in await store.poll(None) if not r.task.state.finished}
    assert everything - read == {"quiet", "queued"}

    clock.advance(cfg.refresh)  # judged as the next poll will be: by then the lease has ended
    snapshot = await Monitor(store, cfg, probe=GoneHere(), clock=clock, host=HERE).poll()
    said_nothing = {
        view.task_id
        for view in snapshot.tasks
        if view.verdict.health in (Health.HEALTHY, Health.QUEUED)
        and not view.verdict.reasons
        and not view.verdict.flags
        and not view.task.state.finished
    }
    assert said_nothing == {"quiet", "queued", "killing"}
