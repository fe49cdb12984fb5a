"""The Dramatiq source against real Dramatiq workers on a throwaway redis-server.

Each test starts real ``dramatiq`` workers (tests/dramatiq_env.py), sends real messages through
Dramatiq's own ``send``, makes the fault happen with real signals, and polls zombietop's monitor
with the real process probe. ``redis-cli monitor`` shows that zombietop's connection sends no
write.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis

from tests.dramatiq_env import DramatiqWorkers, require_dramatiq, started
from tests.queues_env import wait_for
from tests.redis_monitor import RedisMonitor
from tests.redis_server import ThrowawayRedis
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import TaskView
from zombietop.model import HeartbeatSource
from zombietop.procs import PsutilProbe
from zombietop.sources.dramatiq import DRAMATIQ_HEARTBEAT_TIMEOUT, DramatiqSource
from zombietop.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
REQUEUED_ONLY = "Dramatiq requeues it only in a random maintenance pass"


class Watch:
    def __init__(self, monitor: Monitor, clock: FakeClock, source: DramatiqSource) -> None:
        self.monitor, self.clock, self.source = monitor, clock, source

    async def view(self, task_id: str) -> TaskView:
        """Two polls a second apart (the probe needs a CPU delta); the task's view."""
        await self.once(task_id)
        await asyncio.sleep(1)
        return await self.once(task_id)

    async def once(self, task_id: str, *, ahead: float = 0.0) -> TaskView:
        """One poll, now (or ``ahead`` seconds from now); the task's view. The clock keeps
        real time: Dramatiq's workers write their beats on this host's clock."""
        self.clock.set(time.time() + ahead)
        snapshot = await self.monitor.poll()
        assert snapshot.ok and not snapshot.source_errors, snapshot.source_errors
        found = snapshot.by_id()
        assert task_id in found, sorted(found)
        return found[task_id]

    async def until(self, task_id: str, health: Health, bound: float = 30.0) -> TaskView:
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
    source = DramatiqSource(url, clock=clock)
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
def workers(
    tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> Iterator[DramatiqWorkers]:
    require_dramatiq()
    found = DramatiqWorkers(tmp_path, redis_server.url(redis_db))
    try:
        yield found
    finally:
        found.stop()


@pytest.fixture
async def watch(
    tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> AsyncIterator[Watch]:
    url = redis_server.url(redis_db, "dramatiq+redis")
    async for found in _watch(tmp_path, url, FakeClock(time.time())):
        yield found


@pytest.fixture
def client(redis_server: ThrowawayRedis, redis_db: int) -> Iterator[Any]:
    found = redis.Redis.from_url(redis_server.url(redis_db))
    yield found
    found.close()


def _held(client: Any) -> dict[str, set[bytes]]:
    """Each acks key of the broker and the message ids in it: what Dramatiq says is held."""
    return {key.decode(): client.smembers(key) for key in client.scan_iter("dramatiq:__acks__.*")}


async def test_a_running_message_is_healthy_with_its_worker_and_a_waiting_one_queued(
    workers: DramatiqWorkers, watch: Watch, tmp_path: Path
) -> None:
    main = workers.start()
    first = workers.send("nap", 60, str(tmp_path / "first"))
    pid = started(tmp_path / "first")
    assert psutil.Process(pid).ppid() == main.pid  # a worker process, a fork of `dramatiq`
    second = workers.send("nap", 1, str(tmp_path / "second"), delay_ms=3_600_000)
    view = await watch.view(f"default/nap/{first}")
    assert view.health is Health.HEALTHY, view.verdict.context(watch.clock.now())
    assert view.task.pid == pid  # from the connections that name the worker's id
    assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.SUPERVISOR
    assert view.lease is not None and view.lease.expires_at is not None
    delayed = (await watch.monitor.poll()).by_id()[f"default/nap/{second}"]
    assert delayed.health is Health.QUEUED and not delayed.task.waits_in_queue
    assert view.task.job == delayed.task.job == "nap"


async def test_a_killed_worker_leaves_its_message_dead_while_dramatiq_still_holds_it(
    workers: DramatiqWorkers,
    watch: Watch,
    tmp_path: Path,
    client: Any,
    redis_server: ThrowawayRedis,
    redis_db: int,
) -> None:
    """Dramatiq's zombie: a worker killed mid-message. zombietop says ``dead`` at the next poll
    (it knew the worker's process); a zombietop that starts later (``status``) reads the
    worker's last beat, and once Dramatiq itself would call the worker dead, says what becomes
    of the message in Dramatiq's words. Dramatiq still holds it in the dead worker's acks set."""
    main = workers.start()
    message = workers.send("nap", 120, str(tmp_path / "m"))
    pid = started(tmp_path / "m")
    zid = f"default/nap/{message}"
    assert (await watch.view(zid)).health is Health.HEALTHY
    with RedisMonitor(redis_server.port) as monitor:
        os.kill(pid, signal.SIGKILL)
        wait_for("the worker process to go", lambda: not psutil.pid_exists(pid))
        killed_at = time.monotonic()
        # Dead once the grace for an engine to record an end is over: one beat of Dramatiq's
        # (a second), since the beats came from the worker process itself.
        view = await watch.until(zid, Health.DEAD)
        dead_after = time.monotonic() - killed_at
        assert view.verdict.reasons[0].code == "process_gone"
        assert view.task.state_reason is not None and REQUEUED_ONLY in view.task.state_reason
        later = FakeClock(time.time())
        url = redis_server.url(redis_db, "dramatiq+redis")
        async for fresh in _watch(tmp_path, url, later):
            # A minute after the last beat, Dramatiq too would call the worker dead.
            seen = await fresh.once(zid, ahead=DRAMATIQ_HEARTBEAT_TIMEOUT + 1)
        writes, sent = monitor.writes(client)
    assert sent > 0 and writes == [], writes
    assert seen.health is Health.RECLAIMABLE
    line = seen.verdict.context(later.now())
    assert "its worker died 1m0" in line and REQUEUED_ONLY in line, line
    # Dramatiq still holds it for the dead worker; nothing moved it back to its queue.
    assert sum(len(ids) for ids in _held(client).values()) == 1
    assert client.llen("dramatiq:default") == 0
    assert main.poll() is None  # the main process lives on: nothing tells Dramatiq
    print(f"\ndramatiq times: dead {dead_after:.1f}s after the worker process went")
