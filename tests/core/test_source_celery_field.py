"""The Celery source in real time, as a platform engineer tried it: what the workers and Redis
say, beside zombietop's row, ``status --json`` and the watchdog's page.

Real ``celery worker`` processes on the session's throwaway redis-server; the source reads with
this host's real clock, because kombu's visibility timeout runs on it too (a faked clock hides
what kombu does when it runs out). ``redis-cli monitor`` watches every command that zombietop's
connections send.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.core.test_watchdog import ListNotifier
from tests.queues_env import Workers, wait_for
from tests.redis_monitor import RedisMonitor, outside_pidbox
from tests.redis_server import ThrowawayRedis
from zombietop.clock import SystemClock
from zombietop.config import load_config
from zombietop.health import Flag, Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import Snapshot
from zombietop.procs import PsutilProbe
from zombietop.sources.celery import CelerySource
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def client(redis_server: ThrowawayRedis, redis_db: int) -> Any:
    found = redis.Redis.from_url(redis_server.url(redis_db))
    yield found
    found.close()


class Looks:
    """zombietop's monitor and watchdog on one Celery source, on this host's real clock."""

    def __init__(self, monitor: Monitor, notifier: ListNotifier, dog: Watchdog) -> None:
        self.monitor, self.notifier, self.dog = monitor, notifier, dog
        self.earlier: list[Any] = []
        """The pages of the watchdogs stopped by ``restart``."""

    async def poll(self) -> Snapshot:
        snapshot = await self.monitor.poll()
        assert snapshot.ok and not snapshot.source_errors, snapshot.source_errors
        return snapshot

    async def restart(self) -> None:
        """Stop the watchdog and start another on the same store, as a restart does (its pages
        go to a new notifier; the old one's stay in ``earlier``)."""
        await self.dog.release()
        self.earlier += self.notifier.pages
        self.notifier = ListNotifier()
        self.dog = Watchdog(
            self.monitor,
            self.monitor.config,
            executor=None,
            notifiers=[self.notifier],
            clock=self.monitor.clock,
            log=lambda line: None,
        )

    def pages(self, task_id: str) -> list[Any]:
        """The pages about ``task_id`` (a closing page of a task gone carries only its line)."""
        every = [*self.earlier, *self.notifier.pages]
        return [p for p in every if p.line.startswith(f"{task_id} ")]


async def _looks(tmp_path: Path, url: str, config_text: str = "") -> AsyncIterator[Looks]:
    source = CelerySource(url, heartbeat_timeout=5.0)
    await source.open()
    tmp_path.mkdir(exist_ok=True)
    config = tmp_path / "config.toml"
    config.write_text(config_text)
    clock = SystemClock()
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    loaded = load_config(config)
    monitor = Monitor(store, loaded, probe=PsutilProbe(clock=clock), clock=clock, sources=[source])
    notifier = ListNotifier()
    dog = Watchdog(
        monitor, loaded, executor=None, notifiers=[notifier], clock=clock, log=lambda line: None
    )
    try:
        yield Looks(monitor, notifier, dog)
    finally:
        await source.close()
        await store.close()


def _child(marker: Path) -> int:
    text = wait_for(f"the task to start ({marker})", lambda: marker.exists() and marker.read_text())
    return int(text.split()[0])


def _zombietop(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The installed command on the store and config of ``_looks(folder, ...)``."""
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(folder / "zombietop.db")]
    return subprocess.run(
        [*base, "--config", str(folder / "config.toml"), *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _status_json(tmp_path: Path, url: str) -> dict[str, Any]:
    """``zombietop status --json --source URL``: a fresh process, as a check script runs it."""
    store, config = tmp_path / "status.db", tmp_path / "status.toml"
    config.write_text("")
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(store), "--config", str(config)]
    subprocess.run([*base, "init"], check=True, capture_output=True)
    done = subprocess.run(
        [*base, "status", "--json", "--source", url], capture_output=True, text=True, timeout=60
    )
    assert done.stdout, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


async def test_a_lost_acks_late_message_reads_reclaimable_and_stays_where_it_is(
    celery_workers: Workers,
    redis_server: ThrowawayRedis,
    redis_db: int,
    client: Any,
    tmp_path: Path,
) -> None:
    """The worker dies mid-task with ``acks_late``: the message stays in ``unacked``. Past its
    visibility timeout, in real time, zombietop's polls, ``status`` and the watchdog read it
    ``reclaimable`` and write nothing outside the pidbox: the message is still unacked after,
    and the queue still empty (a kombu channel would have moved it back into the queue)."""
    worker = celery_workers.start("w1", acks_late=True, visibility=2)
    result = celery_workers.app().send_task("zq.nap", args=(60, str(tmp_path / "m")))
    child = _child(tmp_path / "m")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    wait_for("the child to be gone", lambda: not Path(f"/proc/{child}").exists())
    assert client.hlen("unacked") == 1 and client.llen("celery") == 0
    delivered = float(client.zrange("unacked_index", 0, -1, withscores=True)[0][1])
    wait_for("the visibility timeout to run out", lambda: time.time() > delivered + 3)
    zid = f"celery/zq.nap/{result.id}"
    url = redis_server.url(redis_db, "celery+redis") + "?visibility_timeout=2"
    with RedisMonitor(redis_server.port) as monitor:
        async for looks in _looks(tmp_path / "w", url):
            for _ in range(3):
                await looks.dog.tick()
            view = (await looks.poll()).by_id()[zid]
            paged = looks.pages(zid)
        report = _status_json(tmp_path, url)
        writes, seen = monitor.writes(client)
    # What the engine says: the message is still delivered and unacknowledged, nobody runs it.
    assert client.hlen("unacked") == 1 and client.llen("celery") == 0
    assert seen > 0 and outside_pidbox(writes) == [], outside_pidbox(writes)
    # The row.
    assert view.health is Health.RECLAIMABLE, view.verdict.context(time.time())
    assert view.task.state_reason is not None
    assert view.task.state_reason.startswith("unacked for ")
    assert "no worker reports it (visibility timeout 2s)" in view.task.state_reason
    # status --json, from a process of its own.
    row = next(t for t in report["tasks"] if t["task_id"] == zid)
    assert row["health"] == "reclaimable"
    assert row["state_reason"].startswith("unacked for ")
    assert any(r["code"] == "lease_expired" and r["age_s"] > 0 for r in row["reasons"])
    assert "lease expired" in row["context"] and "since claim" in row["context"]
    # The page, once.
    assert [p.health for p in paged if p.kind == "incident"] == ["reclaimable"], paged
    assert paged[0].line.startswith(f"{zid} reclaimable: no heartbeat yet (")


def _active(workers: Workers) -> list[dict[str, Any]]:
    """What ``celery inspect active`` says now, every worker's list in one."""
    answer = workers.app().control.inspect(timeout=1.0).active() or {}
    return [task for tasks in answer.values() for task in tasks]


async def test_a_task_run_again_by_a_short_visibility_timeout_is_flagged_and_paged_once(
    celery_workers: Workers,
    redis_server: ThrowawayRedis,
    redis_db: int,
    tmp_path: Path,
) -> None:
    """A visibility timeout (2s) shorter than the task (40s), with ``acks_late``: the message
    comes back to the queue while the first child still runs it, and a second worker runs it
    too, marked ``delivery_info.redelivered`` by Celery. zombietop flags ``redelivered`` with
    how often and why, pages it once, and the task's clock runs from its first start."""
    celery_workers.start("w1", acks_late=True, visibility=2)
    result = celery_workers.app().send_task("zq.nap", args=(40, str(tmp_path / "m")))
    _child(tmp_path / "m")
    celery_workers.start("w2", acks_late=True, visibility=2)
    runs = wait_for(
        "the same task active on both workers",
        lambda: (
            [t for t in _active(celery_workers) if t["id"] == result.id][1:]
            and [t for t in _active(celery_workers) if t["id"] == result.id]
        ),
        timeout=30,
    )
    # What the engine says: two runs of one task, the later one marked redelivered.
    assert sorted(t["delivery_info"]["redelivered"] for t in runs) == [False, True]
    first_start = min(t["time_start"] for t in runs)
    zid = f"celery/zq.nap/{result.id}"
    url = redis_server.url(redis_db, "celery+redis") + "?visibility_timeout=2"
    async for looks in _looks(tmp_path / "w", url):
        for _ in range(3):
            await looks.dog.tick()
        view = (await looks.poll()).by_id()[zid]
        paged = looks.pages(zid)
    report = _status_json(tmp_path, url)
    # The row.
    assert Flag.REDELIVERED in view.verdict.flags
    assert view.task.started_at == pytest.approx(first_start)
    said = [r.words(time.time()) for r in view.verdict.reasons if r.code == "redelivered"]
    assert len(said) == 1 and said[0].startswith("delivered "), view.verdict.reasons
    assert "times: the visibility timeout 2s is shorter than the task runs" in said[0]
    # status --json.
    row = next(t for t in report["tasks"] if t["task_id"] == zid)
    assert "redelivered" in row["flags"]
    assert any(
        r["code"] == "redelivered" and "visibility timeout 2s" in r["message"]
        for r in row["reasons"]
    )
    # The page, once in three looks, with the same words.
    assert [p.kind for p in paged] == ["redelivered"], paged
    assert paged[0].line.startswith(f"{zid} redelivered: ")
    assert "the visibility timeout 2s is shorter than the task runs" in paged[0].line


async def test_a_task_that_left_celery_without_an_end_is_paged_lost_once_and_closed(
    celery_workers: Workers,
    redis_server: ThrowawayRedis,
    redis_db: int,
    client: Any,
    tmp_path: Path,
) -> None:
    """The worker and its child die mid-task without ``acks_late``: the message was
    acknowledged at the start, so nothing in Celery holds the task. It is paged dead, then,
    once its worker is silent past the heartbeat timeout (5s here), paged lost once, and its
    incident closes: no re-notice, no row left. The watchdog is restarted between the two
    pages: the source of the incident's task is read back from the event log."""
    worker = celery_workers.start("w1")
    result = celery_workers.app().send_task("zq.nap", args=(60, str(tmp_path / "m")))
    child = _child(tmp_path / "m")
    zid = f"celery/zq.nap/{result.id}"
    url = redis_server.url(redis_db, "celery+redis")
    # A gone process waits one heartbeat interval for the engine's record of its end: 1s
    # here, inside the source's heartbeat timeout (5s), as the defaults are (10s inside 60s).
    config = '[thresholds]\nheartbeat_interval = "1s"\n'
    async for looks in _looks(tmp_path / "w", url, config):
        await looks.dog.tick()
        assert [v.task_id for v in looks.monitor.last.tasks] == [zid]
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        killed = time.monotonic()
        wait_for("the child to be gone", lambda: not Path(f"/proc/{child}").exists())
        wait_for("the wait for Celery's record", lambda end=killed + 1.5: time.monotonic() > end)
        await looks.dog.tick()
        dead = looks.monitor.last.by_id()[zid]
        # zombietop ack, a process of its own: its fresh read of Celery finds nothing, and the
        # open incident's page says whose the task is.
        # (in a thread: the test's own store keeps answering meanwhile).
        argv = ("ack", zid, "--source", url, "--reason", "on it")
        acked = await asyncio.to_thread(_zombietop, tmp_path / "w", *argv)
        # A watchdog started after the dead page knows from the log that the task is Celery's.
        await looks.restart()
        wait_for("the heartbeat timeout to pass", lambda end=killed + 6: time.monotonic() > end)
        for _ in range(3):
            await looks.dog.tick()
        left = [v.task_id for v in looks.monitor.last.tasks]
        paged = looks.pages(zid)
    # What the engine says: no worker runs it, no message holds it.
    assert client.hlen("unacked") == 0 and client.llen("celery") == 0
    assert dead.health is Health.DEAD
    assert left == []
    assert [p.kind for p in paged] == ["incident", "all_clear"], paged
    assert paged[0].health == "dead"
    assert paged[1].line.startswith(f"{zid} lost: {url} no longer holds it and recorded no end")
    assert "(was dead for " in paged[1].line
    assert acked.returncode == 0, acked.stderr
    assert acked.stdout.startswith(f"{zid}: acked by ")
    report = _status_json(tmp_path, url)
    assert all(t["task_id"] != zid for t in report["tasks"])
