"""The RQ source against real RQ workers on a throwaway redis-server.

Each test starts real ``rq worker`` processes (tests/queues_env.py), enqueues a real job, makes
the fault happen, and polls zombietop's monitor with the real process probe.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.core.test_watchdog import ListNotifier
from tests.queues_env import RQWorkers, wait_for
from tests.redis_server import ThrowawayRedis
from zombietop.actions import ActionKind
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import SourceError
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import TaskView
from zombietop.model import HeartbeatSource
from zombietop.procs import PsutilProbe
from zombietop.sources import open_source
from zombietop.sources.base import Capability, Origin
from zombietop.sources.rq import RQSource, dependency_ids
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


class Watch:
    def __init__(self, monitor: Monitor, clock: FakeClock) -> None:
        self.monitor, self.clock = monitor, clock

    async def view(self, task_id: str) -> TaskView:
        """Two polls a second apart (the probe needs a CPU delta); the task's view."""
        await self.monitor.poll()
        self.clock.advance(1)
        snapshot = await self.monitor.poll()
        assert snapshot.ok and not snapshot.source_errors, snapshot.source_errors
        found = snapshot.by_id()
        assert task_id in found, sorted(found)
        return found[task_id]


@pytest.fixture
async def watch(
    tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> AsyncIterator[Watch]:
    clock = FakeClock(time.time())
    source = RQSource(redis_server.url(redis_db, "rq+redis"), clock=clock)
    await source.open()
    config = tmp_path / "config.toml"
    config.write_text("")
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    monitor = Monitor(
        store, load_config(config), probe=PsutilProbe(clock=clock), clock=clock, sources=[source]
    )
    try:
        yield Watch(monitor, clock)
    finally:
        await source.close()
        await store.close()


@pytest.fixture
def client(redis_server: ThrowawayRedis, redis_db: int) -> Any:
    found = redis.Redis.from_url(redis_server.url(redis_db))
    yield found
    found.close()


def _horse(marker: Path) -> int:
    text = wait_for(f"the job to start ({marker})", lambda: marker.exists() and marker.read_text())
    return int(text.split()[0])


def _values(client: Any) -> dict[bytes, bytes]:
    return {key: client.dump(key) for key in sorted(client.keys("*"))}


async def test_a_cpu_job_is_healthy_and_a_waiting_one_queued(
    rq_workers: RQWorkers, watch: Watch, tmp_path: Path
) -> None:
    rq_workers.start("w1")
    first = rq_workers.enqueue(30, tmp_path / "first")
    horse = _horse(tmp_path / "first")
    second = rq_workers.enqueue(1, tmp_path / "second")
    view = await watch.view(f"default/zqrq.spin/{first}")
    assert view.health is Health.HEALTHY, view.verdict.context(watch.clock.now())
    assert view.task.pid == horse
    assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.SUPERVISOR
    assert view.lease is not None and view.lease.expires_at is not None  # RQ's own lease
    waiting = (await watch.monitor.poll()).by_id()[f"default/zqrq.spin/{second}"]
    assert waiting.health is Health.QUEUED
    # Both are runs of one job, the function's name, for [O]'s history and thresholds.
    assert view.task.job == waiting.task.job == "zqrq.spin"


async def test_a_stopped_horse_is_stalled_and_redis_is_left_as_it_was(
    rq_workers: RQWorkers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    rq_workers.start("w1")
    job = rq_workers.enqueue(60, tmp_path / "m")
    horse = _horse(tmp_path / "m")
    os.kill(horse, signal.SIGSTOP)
    try:
        wait_for("the horse to stop", lambda: _status(horse) == "T")
        before = _values(client)
        view = await watch.view(f"default/zqrq.spin/{job}")
        after = _values(client)
    finally:
        os.kill(horse, signal.SIGCONT)
    assert view.health is Health.STALLED
    said = [reason.words(watch.clock.now()) for reason in view.verdict.reasons]
    assert f"pid {horse} stopped (SIGSTOP) while its engine's beat says it runs" in said
    assert after == before


def _status(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _status_or_gone(pid: int) -> str:
    try:
        return _status(pid)
    except FileNotFoundError:
        return "gone"


async def test_a_killed_worker_and_horse_leave_the_job_dead_before_rq_cleans_up(
    rq_workers: RQWorkers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    worker = rq_workers.start("w1")
    job = rq_workers.enqueue(60, tmp_path / "m")
    horse = _horse(tmp_path / "m")
    zid = f"default/zqrq.spin/{job}"
    assert (await watch.view(zid)).health is Health.HEALTHY
    os.killpg(worker.pid, signal.SIGKILL)
    os.kill(horse, signal.SIGKILL)  # the horse runs in a session of its own (setsid)
    worker.wait()
    wait_for("the horse to exit", lambda: _status_or_gone(horse) in ("gone", "Z"))
    view = await watch.view(zid)
    # The worker's last beat is fresh: the end waits one heartbeat interval for RQ's record.
    assert view.health is Health.HEALTHY
    assert view.verdict.reasons[0].code == "exit_unrecorded"
    watch.clock.advance(10)
    view = await watch.view(zid)
    assert view.health is Health.DEAD
    assert [r.code for r in view.verdict.reasons][:1] in (["process_gone"], ["process_zombie"])
    # RQ itself still says it runs: STARTED, in the registry, its worker listed.
    assert client.hget(f"rq:job:{job}", "status") == b"started"
    assert client.zcard("rq:wip:default") == 1
    assert client.sismember("rq:workers", "rq:worker:w1")


def test_resume_and_discard_name_the_engine_command() -> None:
    source = open_source("rq+redis://127.0.0.1:6379/0")
    assert isinstance(source, RQSource)
    origin = Origin(
        source=source.name,
        kind="rq",
        capability=Capability.READ_ONLY,
        ids={"queue": "default", "function": "zqrq.spin", "job_id": "abc"},
    )
    resume = source.refusal(ActionKind.RESUME, origin)
    assert resume is not None and "use the engine's command: rq requeue" in resume
    discard = source.refusal(ActionKind.DISCARD, origin)
    assert discard is not None and "send_stop_job_command" in discard
    assert source.refusal(ActionKind.KILL, origin) is None


@pytest.mark.parametrize(
    "url", ["rq+redis://host:port/0", "rq+redis://host:6379/zero", "rq+redis://h:1/0?x=1"]
)
def test_a_wrong_url_says_how_to_write_one(url: str) -> None:
    with pytest.raises(SourceError, match=r"rq\+redis|port"):
        open_source(url)


async def test_the_watchdog_pages_a_stopped_horse_and_leaves_redis_as_it_was(
    rq_workers: RQWorkers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    """The dashboard's monitor is checked above; this is the watchdog's look over the same
    source: it pages the stalled job once, and no key in Redis changes."""
    rq_workers.start("w1")
    job = rq_workers.enqueue(60, tmp_path / "m")
    horse = _horse(tmp_path / "m")
    notifier = ListNotifier()
    dog = Watchdog(
        watch.monitor,
        watch.monitor.config,
        executor=None,
        notifiers=[notifier],
        clock=watch.clock,
        log=lambda line: None,
    )
    os.kill(horse, signal.SIGSTOP)
    try:
        wait_for("the horse to stop", lambda: _status(horse) == "T")
        before = _values(client)
        for _ in range(3):
            await dog.tick()
            watch.clock.advance(1)
        after = _values(client)
    finally:
        os.kill(horse, signal.SIGCONT)
    assert after == before
    zid = f"default/zqrq.spin/{job}"
    paged = [p for p in notifier.pages if p.task_id == zid and p.kind == "incident"]
    assert [p.health for p in paged] == ["stalled"], notifier.pages


async def test_jobs_deferred_behind_a_stopped_horse_are_named_in_its_page_only(
    rq_workers: RQWorkers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    """``load`` depends on ``extract``, ``report`` on ``load``: RQ defers both until the job
    before succeeds. When ``extract``'s horse stops, its page names the two it blocks."""
    rq_workers.start("w1")
    extract = rq_workers.enqueue(60, tmp_path / "extract")
    horse = _horse(tmp_path / "extract")
    load = rq_workers.enqueue(1, tmp_path / "load", depends_on=extract)
    report = rq_workers.enqueue(1, tmp_path / "report", depends_on=load)
    assert client.zcard("rq:deferred:default") == 2
    ids = {job: f"default/zqrq.spin/{job}" for job in (extract, load, report)}
    views = (await watch.monitor.poll()).by_id()
    assert views[ids[load]].task.upstream == (ids[extract],)
    assert views[ids[report]].task.upstream == (ids[load],)
    assert views[ids[report]].task.state_reason == "rq deferred"
    assert views[ids[load]].health is Health.QUEUED
    assert views[ids[load]].waiting_on == ((ids[extract], Health.HEALTHY),)
    notifier = ListNotifier()
    dog = Watchdog(
        watch.monitor,
        watch.monitor.config,
        executor=None,
        notifiers=[notifier],
        clock=watch.clock,
        log=lambda line: None,
    )
    os.kill(horse, signal.SIGSTOP)
    try:
        wait_for("the horse to stop", lambda: _status(horse) == "T")
        for _ in range(3):
            await dog.tick()
            watch.clock.advance(1)
    finally:
        os.kill(horse, signal.SIGCONT)
    paged = [(p.kind, p.task_id) for p in notifier.pages]
    assert paged == [("incident", ids[extract])], notifier.pages
    blocked = ", ".join(sorted([ids[load], ids[report]]))
    assert f"; blocks 2: {blocked}" in notifier.pages[0].shown


def test_the_dependency_ids_as_rq_keeps_them() -> None:
    assert dependency_ids('["a", "b"]', "a") == ["a", "b"]
    assert dependency_ids(None, "a") == ["a"]  # RQ before dependency_ids
    assert dependency_ids(None, None) == []
    assert dependency_ids("{", "a") == [] and dependency_ids('{"a": 1}', None) == []
