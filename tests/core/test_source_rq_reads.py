"""What the RQ source's poll does to Redis (nothing) and with the text it reads (bounds it).

A real ``rq worker`` on the session's throwaway redis-server; ``redis-cli monitor`` watches the
commands that zombietop's connections send.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
import rq

from tests.queues_env import RQWorkers, wait_for
from tests.redis_monitor import RedisMonitor
from tests.redis_server import ThrowawayRedis
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.judge.monitor import Monitor
from zombietop.procs import PsutilProbe
from zombietop.sources.engine_text import ID_PART_LIMIT
from zombietop.sources.rq import RQSource
from zombietop.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

HUGE = 30 * 1024 * 1024
"""The description's length in the field report: 30 MB."""


@pytest.fixture
def client(redis_server: ThrowawayRedis, redis_db: int) -> Any:
    found = redis.Redis.from_url(redis_server.url(redis_db))
    yield found
    found.close()


async def _polls(tmp_path: Path, url: str, count: int) -> Any:
    """``count`` polls of a monitor on the RQ source at ``url``; the last snapshot."""
    clock = FakeClock(time.time())
    source = RQSource(url, clock=clock)
    await source.open()
    config = tmp_path / "config.toml"
    config.write_text("")
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    monitor = Monitor(
        store, load_config(config), probe=PsutilProbe(clock=clock), clock=clock, sources=[source]
    )
    try:
        for _ in range(count):
            snapshot = await monitor.poll()
            assert snapshot.ok and not snapshot.source_errors, snapshot.source_errors
            clock.advance(1)
        return snapshot
    finally:
        await source.close()
        await store.close()


async def test_an_rq_poll_writes_nothing(
    rq_workers: RQWorkers,
    redis_server: ThrowawayRedis,
    redis_db: int,
    client: Any,
    tmp_path: Path,
) -> None:
    """A running job, a queued one and a deferred one: three polls send no write at all."""
    rq_workers.start("w1")
    first = rq_workers.enqueue(60, tmp_path / "m")
    wait_for("the job to start", lambda: (tmp_path / "m").exists())
    rq_workers.enqueue(1, tmp_path / "n")
    rq_workers.enqueue(1, tmp_path / "o", depends_on=first)
    with RedisMonitor(redis_server.port) as monitor:
        snapshot = await _polls(tmp_path, redis_server.url(redis_db, "rq+redis"), 3)
        writes, seen = monitor.writes(client)
    assert len(snapshot.tasks) == 3, [v.task_id for v in snapshot.tasks]
    assert seen > 0, "the monitor saw no command from zombietop's connections"
    assert writes == []


async def test_a_30_mb_description_makes_a_bounded_id_and_a_small_status(
    redis_server: ThrowawayRedis, redis_db: int, client: Any, tmp_path: Path
) -> None:
    """RQ sets no limit on a job's description, and zombietop's id is made from it: each part
    of the id is bounded as it is read, in the row and in ``status --json`` of a fresh
    process."""
    description = "a" * HUGE
    job = rq.Queue("default", connection=client).enqueue(
        "zqrq.spin", 1, "m", description=description
    )
    assert client.hstrlen(f"rq:job:{job.id}", "description") == HUGE
    url = redis_server.url(redis_db, "rq+redis")
    snapshot = await _polls(tmp_path, url, 1)
    [view] = snapshot.tasks
    assert len(view.task_id) <= 3 * ID_PART_LIMIT + 2
    queue, name, job_id = view.task_id.split("/")
    assert (queue, job_id) == ("default", job.id)
    assert name.startswith("aaaa") and f"[...{HUGE} characters, sha256 " in name
    assert view.task.step == name and view.task.job == name
    store, config = tmp_path / "status.db", tmp_path / "status.toml"
    config.write_text("")
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(store), "--config", str(config)]
    subprocess.run([*base, "init"], check=True, capture_output=True)
    done = subprocess.run(
        [*base, "status", "--json", "--source", url], capture_output=True, text=True, timeout=60
    )
    assert len(done.stdout) < 20_000, len(done.stdout)
    [row] = json.loads(done.stdout)["tasks"]
    assert row["task_id"] == view.task_id
