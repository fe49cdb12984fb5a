"""The BullMQ source against real BullMQ workers (Node processes) on a throwaway redis-server.

Each test starts real workers (tests/bullmq_env.py), adds real jobs through BullMQ's own
``Queue.add``, makes the fault happen with real signals, and polls zombietop's monitor with the
real process probe. ``redis-cli monitor`` shows that zombietop's connection sends no write.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.bullmq_env import BullWorkers, require_bullmq
from tests.core.test_watchdog import ListNotifier
from tests.queues_env import wait_for
from tests.redis_monitor import RedisMonitor
from tests.redis_server import ThrowawayRedis
from zombietop.actions import ActionKind
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import SourceError
from zombietop.health import Flag, Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import TaskView
from zombietop.model import HeartbeatSource
from zombietop.procs import PsutilProbe
from zombietop.sources import open_source
from zombietop.sources.base import Capability, Origin
from zombietop.sources.bullmq import BullMQSource
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


class Watch:
    def __init__(self, monitor: Monitor, clock: FakeClock, source: BullMQSource) -> None:
        self.monitor, self.clock, self.source = monitor, clock, source

    async def view(self, task_id: str) -> TaskView:
        """Two polls a second apart (the probe needs a CPU delta); the task's view. The clock
        keeps real time: BullMQ's lock counts down in Redis's."""
        self.clock.set(time.time())
        await self.monitor.poll()
        await asyncio.sleep(1)
        return await self.once(task_id)

    async def once(self, task_id: str) -> TaskView:
        """One poll, now; the task's view."""
        self.clock.set(time.time())
        snapshot = await self.monitor.poll()
        assert snapshot.ok and not snapshot.source_errors, snapshot.source_errors
        found = snapshot.by_id()
        assert task_id in found, sorted(found)
        return found[task_id]

    async def until(self, task_id: str, health: Health, bound: float = 60.0) -> TaskView:
        """Poll until the task reads ``health``; fail after ``bound`` seconds."""
        deadline = time.monotonic() + bound
        while True:
            view = await self.once(task_id)
            if view.health is health:
                return view
            if time.monotonic() > deadline:
                said = view.verdict.context(self.clock.now())
                raise AssertionError(f"waited {bound:g}s for {health}: {said}")
            await asyncio.sleep(0.2)


async def _watch(tmp_path: Path, url: str, clock: FakeClock) -> AsyncIterator[Watch]:
    source = BullMQSource(url, clock=clock)
    await source.open()
    config = tmp_path / "config.toml"
    config.write_text("")
    store = await SQLiteStore.open(tmp_path / f"zt-{id(source)}.db", create=True, clock=clock)
    monitor = Monitor(
        store, load_config(config), probe=PsutilProbe(clock=clock), clock=clock, sources=[source]
    )
    try:
        yield Watch(monitor, clock, source)
    finally:
        await source.close()
        await store.close()


@pytest.fixture
def bull(tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int) -> Iterator[BullWorkers]:
    require_bullmq()
    workers = BullWorkers(tmp_path, redis_server.port, redis_db)
    try:
        yield workers
    finally:
        workers.stop()


@pytest.fixture
async def watch(
    tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> AsyncIterator[Watch]:
    url = redis_server.url(redis_db, "bullmq+redis")
    async for found in _watch(tmp_path, url, FakeClock(time.time())):
        yield found


@pytest.fixture
def client(redis_server: ThrowawayRedis, redis_db: int) -> Iterator[Any]:
    found = redis.Redis.from_url(redis_server.url(redis_db))
    yield found
    found.close()


def _started(marker: Path) -> int:
    """The pid of the worker that started the job, as the job wrote it."""
    text = wait_for(f"the job to start ({marker})", lambda: marker.exists() and marker.read_text())
    return int(text.split()[0])


def _job(seconds: float, marker: Path, kind: str = "spin") -> dict[str, object]:
    return {"seconds": seconds, "marker": str(marker), "kind": kind}


async def test_a_working_job_is_healthy_with_its_worker_and_a_waiting_one_queued(
    bull: BullWorkers, watch: Watch, tmp_path: Path
) -> None:
    worker = bull.start("emails", name="mailer")
    first = bull.add("emails", "send", _job(60, tmp_path / "first"))
    assert _started(tmp_path / "first") == worker.pid
    second = bull.add("emails", "send", _job(1, tmp_path / "second"))
    view = await watch.view(f"emails/send/{first}")
    assert view.health is Health.HEALTHY, view.verdict.context(watch.clock.now())
    assert view.task.pid == worker.pid  # from CLIENT LIST and the kernel's sockets
    assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.SUPERVISOR
    assert view.lease is not None and view.lease.owner == "mailer"
    assert view.lease.expires_at is not None  # BullMQ's lock: 3 s in these tests
    waiting = (await watch.monitor.poll()).by_id()[f"emails/send/{second}"]
    assert waiting.health is Health.QUEUED
    assert view.task.job == waiting.task.job == "send"


async def test_a_killed_worker_leaves_its_job_dead_then_stalled_in_bullmqs_words(
    bull: BullWorkers,
    watch: Watch,
    tmp_path: Path,
    client: Any,
    redis_server: ThrowawayRedis,
    redis_db: int,
) -> None:
    """BullMQ's zombie: a worker killed mid-job. zombietop says ``dead`` at the next poll (it
    knew the worker's process); a zombietop that starts later (``status``) sees the lock gone
    and no worker on the queue. BullMQ itself leaves the job active until a worker starts."""
    worker = bull.start("emails")
    job = bull.add("emails", "send", _job(120, tmp_path / "m"))
    _started(tmp_path / "m")
    zid = f"emails/send/{job}"
    assert (await watch.view(zid)).health is Health.HEALTHY
    killed_at = time.monotonic()
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    with RedisMonitor(redis_server.port) as monitor:
        # The lock expires (3 s here, 30 s by default) and nothing moves the job.
        wait_for("the lock to expire", lambda: client.pttl(f"bull:emails:{job}:lock") == -2)
        expired_after = time.monotonic() - killed_at
        # Dead once the grace a worker has to record an end is over (one heartbeat interval).
        view = await watch.until(zid, Health.DEAD)
        dead_after = time.monotonic() - killed_at
        assert view.verdict.reasons[0].code == "process_gone"
        later = FakeClock(time.time())
        async for fresh in _watch(tmp_path, redis_server.url(redis_db, "bullmq+redis"), later):
            seen = await fresh.view(zid)
        writes, sent = monitor.writes(client)
    assert sent > 0 and writes == [], writes
    assert seen.health is Health.RECLAIMABLE
    line = seen.verdict.context(later.now())
    assert (
        "(stalled in BullMQ's words, no worker on queue emails; BullMQ moves it back only when "
        "a worker starts)"
    ) in line, line
    assert client.lrange("bull:emails:active", 0, -1) == [job.encode()]
    # A new worker's stalled check moves it back and runs it again, from the start.
    restarted_at = time.monotonic()
    again = bull.start("emails")
    wait_for(
        "BullMQ to run it again",
        lambda: (
            client.hget(f"bull:emails:{job}", "stc") == b"1"
            and (tmp_path / "m").read_text().count("\n") == 2
        ),
    )
    moved_after = time.monotonic() - restarted_at
    view = await watch.view(zid)
    assert view.health is Health.HEALTHY and view.task.pid == again.pid
    assert Flag.REDELIVERED in view.verdict.flags and view.task.attempt == 2
    print(
        f"\nbullmq times: dead after {dead_after:.1f}s; lock gone after {expired_after:.1f}s; "
        f"moved back {moved_after:.1f}s after a worker started"
    )


async def test_failed_and_completed_jobs_are_runs_that_ended(
    bull: BullWorkers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    bull.start("emails")
    failed = bull.add("emails", "boom", _job(0, tmp_path / "f", "boom"))
    done = bull.add("emails", "send", _job(0, tmp_path / "d"))
    wait_for("both to end", lambda: client.zcard("bull:emails:completed") == 1)
    wait_for("the failure", lambda: client.zcard("bull:emails:failed") == 1)
    views = (await watch.monitor.poll()).by_id()
    assert views[f"emails/boom/{failed}"].health is Health.FAILED
    assert views[f"emails/boom/{failed}"].task.state_reason == f"boom in {failed}"
    assert views[f"emails/send/{done}"].health is Health.SUCCEEDED


async def test_the_watchdog_pages_the_stalled_job_once_in_bullmqs_words(
    bull: BullWorkers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    worker = bull.start("reports")
    job = bull.add("reports", "render", _job(120, tmp_path / "m"))
    _started(tmp_path / "m")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    wait_for("the lock to expire", lambda: client.pttl(f"bull:reports:{job}:lock") == -2)
    notifier = ListNotifier()
    dog = Watchdog(
        watch.monitor,
        watch.monitor.config,
        executor=None,
        notifiers=[notifier],
        clock=watch.clock,
        log=lambda line: None,
    )
    for _ in range(3):
        await dog.tick()
        watch.clock.advance(1)
    paged = [p for p in notifier.pages if p.kind == "incident"]
    assert [(p.task_id, p.health) for p in paged] == [(f"reports/render/{job}", "reclaimable")]
    assert "no worker on queue reports" in paged[0].shown
    assert paged[0].shown.endswith(" - retry or remove it with BullMQ, or kill its worker")


async def test_the_kill_check_passes_a_worker_and_refuses_any_other_process(
    bull: BullWorkers, watch: Watch, tmp_path: Path
) -> None:
    worker = bull.start("emails", name="mailer")
    assert watch.source.kill_check(worker.pid) is None
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        said = watch.source.kill_check(sleeper.pid)
        assert said is not None and "not a BullMQ worker (node)" in said
    finally:
        sleeper.kill()
        sleeper.wait()
    # Node, but not a BullMQ worker: no connection of its own named as one.
    node = subprocess.Popen(["node", "-e", "setTimeout(() => {}, 60000)"])
    try:
        said = watch.source.kill_check(node.pid)
        assert said is not None and "holds no connection that Redis lists" in said
    finally:
        node.kill()
        node.wait()


def test_resume_and_discard_name_bullmqs_own_calls() -> None:
    source = open_source("bullmq+redis://127.0.0.1:6379/0?prefix=jobs")
    assert isinstance(source, BullMQSource) and source.prefix == "jobs"
    origin = Origin(
        source=source.name,
        kind="bullmq",
        capability=Capability.READ_ONLY,
        ids={"queue": "emails", "name": "send", "job_id": "7", "state": "active"},
    )
    resume = source.refusal(ActionKind.RESUME, origin)
    assert resume is not None and "start a worker on queue emails" in resume
    assert ".retry()" in resume
    discard = source.refusal(ActionKind.DISCARD, origin)
    assert discard is not None and "Job.fromId(new Queue('emails'), '7')).remove()" in discard
    assert source.refusal(ActionKind.KILL, origin) is None


@pytest.mark.parametrize(
    "url",
    [
        "bullmq+redis://host:port/0",
        "bullmq+redis://host:6379/zero",
        "bullmq+redis://h:1/0?x=1",
        "bullmq+redis://h:1/0?prefix=",
    ],
)
def test_a_wrong_url_says_how_to_write_one(url: str) -> None:
    with pytest.raises(SourceError, match=r"bullmq\+redis|port"):
        open_source(url)


def test_zombietop_kill_signals_the_jobs_worker_process(
    bull: BullWorkers, tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> None:
    """``zombietop kill`` of a running job: the source finds its worker through Redis's
    CLIENT LIST and the kernel's sockets, checks it is a BullMQ worker, and sends SIGTERM."""
    worker = bull.start("emails", name="mailer")
    job = bull.add("emails", "send", _job(120, tmp_path / "m"))
    _started(tmp_path / "m")
    config = tmp_path / "config.toml"
    config.write_text("")
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(tmp_path / "zt.db")]
    base += ["--config", str(config)]
    subprocess.run([*base, "init"], check=True, capture_output=True, timeout=60)
    url = redis_server.url(redis_db, "bullmq+redis")
    done = subprocess.run(
        [*base, "kill", f"emails/send/{job}", "--yes", "--source", url],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SIGTERM sent to process group {worker.pid}" in done.stdout, done.stdout
    assert worker.wait(timeout=30) == -signal.SIGTERM


async def test_a_job_that_blocks_its_workers_event_loop_loses_its_lock_and_runs_twice(
    bull: BullWorkers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    """A job that burns CPU without yielding keeps its worker from renewing the lock: the job
    is stalled in BullMQ's words while it still runs, and another worker's stalled check gives
    it to that worker, which runs it again (BullMQ's "job stalled more than allowable limit")."""
    first = bull.start("crunch", name="a")
    job = bull.add("crunch", "crunch", _job(30, tmp_path / "m", "block"))
    _started(tmp_path / "m")
    blocked_at = time.monotonic()
    zid = f"crunch/crunch/{job}"
    view = await watch.until(zid, Health.RECLAIMABLE)
    reclaimable_after = time.monotonic() - blocked_at
    assert view.task.pid == first.pid and view.process is not None and not view.process.gone
    line = view.verdict.context(watch.clock.now())
    # Its own worker is still on the queue (its connection lives), blocked by the job.
    assert "(stalled in BullMQ's words; a worker on queue crunch: the next stalled" in line, line
    second = bull.start("crunch", name="b")
    wait_for(
        "BullMQ to give the job to the second worker",
        lambda: (tmp_path / "m").read_text().count("\n") == 2,
    )
    twice_after = time.monotonic() - blocked_at
    assert first.poll() is None  # the first worker still runs it too
    view = await watch.until(zid, Health.HEALTHY)
    assert view.task.pid == second.pid and Flag.REDELIVERED in view.verdict.flags
    print(
        f"\nbullmq blocked loop: reclaimable after {reclaimable_after:.1f}s; "
        f"running twice {twice_after:.1f}s after the block began"
    )
