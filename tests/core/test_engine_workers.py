"""The workers list against real engines: RQ and Celery workers and BullMQ's (Node) workers on
a throwaway redis-server.

Each test starts real workers (tests/queues_env.py), gives one a task, then makes the worker
go: killed, and (for RQ) its hash expired as RQ's own key expiry would. The monitor's snapshot
lists every worker with its host, pid and last beat, and ``worker_list`` puts the one gone
with a task still on it first. Nothing is written to Redis by zombietop.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.bullmq_env import BullWorkers, require_bullmq
from tests.core.test_source_celery import SHORT_INTERVAL, Watch, _child, _send, _values
from tests.core.test_source_celery import _watch as celery_watch
from tests.core.test_source_rq import _horse
from tests.queues_env import RQWorkers, Workers, wait_for
from tests.redis_server import ThrowawayRedis
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import Snapshot
from zombietop.judge.workers import worker_list
from zombietop.procs import PsutilProbe
from zombietop.sources.bullmq import BullMQSource
from zombietop.sources.rq import RQSource
from zombietop.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

HOST = socket.gethostname()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(time.time())


@pytest.fixture
def client(redis_server: ThrowawayRedis, redis_db: int) -> Any:
    found = redis.Redis.from_url(redis_server.url(redis_db))
    yield found
    found.close()


@pytest.fixture
async def rq_monitor(
    tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int, clock: FakeClock
) -> AsyncIterator[Monitor]:
    source = RQSource(redis_server.url(redis_db, "rq+redis"), clock=clock)
    await source.open()
    config = tmp_path / "config.toml"
    config.write_text("")
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    try:
        yield Monitor(
            store,
            load_config(config),
            probe=PsutilProbe(clock=clock),
            clock=clock,
            sources=[source],
        )
    finally:
        await source.close()
        await store.close()


async def _poll(monitor: Monitor) -> Snapshot:
    snapshot = await monitor.poll()
    assert snapshot.ok and not snapshot.source_errors, snapshot.source_errors
    return snapshot


def _rq_values(client: Any) -> dict[bytes, bytes]:
    return {key: client.dump(key) for key in sorted(client.keys("*"))}


async def test_rq_workers_are_listed_and_a_gone_one_with_its_job_leads(
    rq_workers: RQWorkers, rq_monitor: Monitor, tmp_path: Path, client: Any
) -> None:
    busy = rq_workers.start("w1")
    job = rq_workers.enqueue(60, tmp_path / "m")
    horse = _horse(tmp_path / "m")
    idle = rq_workers.start("w2")
    # Registered first, then idle: RQ writes its own hash once more in between, and a write
    # of RQ's own after ``before`` would read as ours.
    wait_for("w2 to be idle", lambda: client.hget("rq:worker:w2", "state") == b"idle")
    before = _rq_values(client)
    snapshot = await _poll(rq_monitor)
    assert _rq_values(client) == before  # read, never written
    found = {w.name: w for w in snapshot.workers}
    assert set(found) == {"w1", "w2"}
    assert (found["w1"].pid, found["w1"].host, found["w1"].holds) == (busy.pid, HOST, 1)
    assert (found["w2"].pid, found["w2"].holds) == (idle.pid, 0)
    assert not found["w1"].gone and found["w1"].kind == "rq"
    beat = found["w1"].last_beat
    assert beat is not None and abs(beat - time.time()) < 60

    # w1 dies with its horse; RQ's hash of it expires (deleted here as its TTL would).
    os.killpg(busy.pid, signal.SIGKILL)
    os.kill(horse, signal.SIGKILL)
    busy.wait()
    client.delete("rq:worker:w1")
    client.srem("rq:workers", "rq:worker:w1")
    snapshot = await _poll(rq_monitor)
    listed = worker_list(snapshot, rq_monitor.clock.now())
    first = listed[0]
    assert (first.name, first.gone, first.holds) == ("w1", True, 1), listed
    assert "expired" in first.why
    assert [w.name for w in listed] == ["w1", "w2"]
    # RQ still says the job runs: only the worker is gone.
    assert client.hget(f"rq:job:{job}", "status") == b"started"


@pytest.fixture
async def celery_monitor(
    tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int, clock: FakeClock
) -> AsyncIterator[Watch]:
    url = redis_server.url(redis_db, "celery+redis")
    async for found in celery_watch(tmp_path, url, clock, SHORT_INTERVAL):
        yield found


async def test_celery_workers_are_listed_and_a_silent_one_with_its_task_leads(
    celery_workers: Workers, celery_monitor: Watch, tmp_path: Path, client: Any
) -> None:
    busy = celery_workers.start("w1")
    _send(celery_workers, 60, tmp_path / "m")
    _child(tmp_path / "m")
    celery_workers.start("w2")

    def both_answer() -> bool:
        return len(celery_monitor.source.workers()) == 2

    async def polled_until_both() -> Snapshot:
        deadline = time.monotonic() + 30
        while True:
            snapshot = await celery_monitor.poll()
            if both_answer() or time.monotonic() > deadline:
                return snapshot

    before = _values(client)
    snapshot = await polled_until_both()
    assert _values(client) == before  # asked over the pidbox, nothing of the tasks written
    found = {w.name: w for w in snapshot.workers}
    assert set(found) == {f"w1@{HOST}", f"w2@{HOST}"}, found
    assert (found[f"w1@{HOST}"].holds, found[f"w1@{HOST}"].host) == (1, HOST)
    assert found[f"w2@{HOST}"].holds == 0
    assert not any(w.gone for w in snapshot.workers)

    # w1 is stopped: it answers no more. Past the heartbeat timeout it is gone, its task on it.
    os.killpg(busy.pid, signal.SIGSTOP)
    try:
        celery_monitor.clock.advance(10)
        snapshot = await celery_monitor.poll()
        listed = worker_list(snapshot, celery_monitor.clock.now())
        first = listed[0]
        assert (first.name, first.gone, first.holds) == (f"w1@{HOST}", True, 1), listed
        assert "no answer" in first.why
        assert [w.gone for w in listed] == [True, False]
    finally:
        os.killpg(busy.pid, signal.SIGCONT)


@pytest.fixture
def bull(tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int) -> Iterator[BullWorkers]:
    require_bullmq()
    workers = BullWorkers(tmp_path, redis_server.port, redis_db)
    try:
        yield workers
    finally:
        workers.stop()


@pytest.fixture
async def bull_monitor(
    tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> AsyncIterator[Monitor]:
    clock = FakeClock(time.time())
    source = BullMQSource(redis_server.url(redis_db, "bullmq+redis"), clock=clock)
    await source.open()
    config = tmp_path / "config.toml"
    config.write_text("")
    store = await SQLiteStore.open(tmp_path / "zt-bull.db", create=True, clock=clock)
    try:
        yield Monitor(
            store,
            load_config(config),
            probe=PsutilProbe(clock=clock),
            clock=clock,
            sources=[source],
        )
    finally:
        await source.close()
        await store.close()


async def test_bullmq_worker_connections_are_listed_and_a_killed_one_with_its_job_leads(
    bull: BullWorkers, bull_monitor: Monitor, tmp_path: Path, client: Any
) -> None:
    mailer = bull.start("emails", name="mailer")
    bull.start("reports")
    job = bull.add("emails", "send", {"seconds": 60, "marker": str(tmp_path / "m"), "kind": "spin"})
    wait_for("the job to start", lambda: (tmp_path / "m").exists())
    snapshot = await _poll(bull_monitor)
    found = {w.name: w for w in snapshot.workers}
    assert set(found) == {"mailer", "a worker of queue reports"}, found
    assert (found["mailer"].holds, found["mailer"].pid) == (1, mailer.pid)
    assert found["mailer"].host == "127.0.0.1" and not found["mailer"].gone
    assert found["a worker of queue reports"].holds == 0

    os.killpg(mailer.pid, signal.SIGKILL)
    mailer.wait()
    wait_for(
        "Redis to drop the killed worker's connection",
        lambda: b":w:mailer" not in b" ".join(c["name"].encode() for c in client.client_list()),
    )
    snapshot = await _poll(bull_monitor)
    first = worker_list(snapshot, bull_monitor.clock.now())[0]
    assert (first.name, first.gone, first.holds) == ("mailer", True, 1)
    assert "CLIENT LIST" in first.why
    assert client.lrange("bull:emails:active", 0, -1) == [job.encode()]  # BullMQ keeps it active
