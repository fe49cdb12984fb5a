"""How RQ's jobs end, and RQ's keys that do not read, against real RQ workers.

One ``rq worker`` (tests/queues_env.py) runs for the whole module on a Redis database of the
module's own; each test enqueues its own jobs and looks only at them. Each scenario is checked
three ways: the row of zombietop's monitor, ``status --json`` of the installed command, and the
watchdog's page; and each against what RQ's own Python API says of the job.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
import rq
import rq.command
from rq.job import Job

from tests.core.test_watchdog import ListNotifier
from tests.queues_env import RQWorkers, wait_for
from tests.redis_server import ThrowawayRedis
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.model import TaskState
from zombietop.procs import PsutilProbe
from zombietop.sources.rq import RQSource
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def rq_db(redis_server: ThrowawayRedis) -> int:
    return redis_server.fresh_db()


@pytest.fixture(scope="module")
def workers(
    tmp_path_factory: pytest.TempPathFactory, redis_server: ThrowawayRedis, rq_db: int
) -> Iterator[RQWorkers]:
    """One real RQ worker for the module."""
    found = RQWorkers(tmp_path_factory.mktemp("rq"), redis_server.url(rq_db))
    found.start("w1")
    try:
        yield found
    finally:
        found.stop()


@pytest.fixture
def client(redis_server: ThrowawayRedis, rq_db: int) -> Iterator[Any]:
    found = redis.Redis.from_url(redis_server.url(rq_db))
    yield found
    found.close()


class Look:
    """zombietop's monitor and watchdog over the module's RQ, on a clock the test moves."""

    def __init__(self, monitor: Monitor, clock: FakeClock, source: RQSource) -> None:
        self.monitor, self.clock, self.source = monitor, clock, source
        self.notifier = ListNotifier()
        self.dog = Watchdog(
            monitor,
            monitor.config,
            executor=None,
            notifiers=[self.notifier],
            clock=clock,
            log=lambda line: None,
        )

    def pages(self, task_id: str) -> list[tuple[str, str]]:
        return [(p.kind, p.line) for p in self.notifier.pages if p.task_id == task_id]


@pytest.fixture
async def look(tmp_path: Path, redis_server: ThrowawayRedis, rq_db: int) -> AsyncIterator[Look]:
    clock = FakeClock(time.time())
    source = RQSource(redis_server.url(rq_db, "rq+redis"), clock=clock)
    await source.open()
    config = tmp_path / "config.toml"
    config.write_text("")
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    monitor = Monitor(
        store, load_config(config), probe=PsutilProbe(clock=clock), clock=clock, sources=[source]
    )
    try:
        yield Look(monitor, clock, source)
    finally:
        await source.close()
        await store.close()


def _status_json(tmp_path: Path, url: str) -> dict[str, Any]:
    """``zombietop status --json --source URL``, the installed command, in a process of its
    own."""
    store, config = tmp_path / "cli.db", tmp_path / "cli.toml"
    config.write_text("")
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(store), "--config", str(config)]
    if not store.exists():
        subprocess.run([*base, "init"], check=True, capture_output=True)
    done = subprocess.run(
        [*base, "status", "--json", "--source", url], capture_output=True, text=True, timeout=60
    )
    assert done.stdout, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _task(said: dict[str, Any], task_id: str) -> dict[str, Any]:
    tasks = {task["task_id"]: task for task in said["tasks"]}
    assert task_id in tasks, sorted(tasks)
    found: dict[str, Any] = tasks[task_id]
    return found


def _values(client: Any, job_id: str) -> dict[str, bytes]:
    """What Redis holds of one ended job: its hash, its results and its registry (the worker
    writes its own keys meanwhile)."""
    keys = (f"rq:job:{job_id}", f"rq:results:{job_id}", "rq:failed:default")
    return {key: client.dump(key) for key in keys}


def _rq_status(client: Any, job_id: str) -> str:
    status = Job.fetch(job_id, connection=client).get_status(refresh=True)
    return str(getattr(status, "value", status))


async def test_a_failed_job_is_a_failed_run_with_rqs_error_and_pages_once(
    workers: RQWorkers, look: Look, client: Any, tmp_path: Path, redis_server: ThrowawayRedis
) -> None:
    job = workers.enqueue_call("zqrq.boom", str(tmp_path / "failing"))
    wait_for("RQ to fail the job", lambda: _rq_status(client, job) == "failed")
    zid = f"default/zqrq.boom/{job}"
    # What RQ says: in its FailedJobRegistry, its latest result the ValueError.
    assert job in rq.registry.FailedJobRegistry("default", connection=client).get_job_ids()
    result = Job.fetch(job, connection=client).latest_result()
    assert result is not None and result.exc_string is not None
    rq_error = result.exc_string.strip().splitlines()[-1]
    assert rq_error == "ValueError: boom in failing"

    before = _values(client, job)
    view = (await look.monitor.poll()).by_id()[zid]
    assert view.task.state is TaskState.FAILED and view.health is Health.FAILED
    assert view.task.state_reason == rq_error
    assert view.task.finished_at is not None and view.task.started_at is not None

    said = _task(_status_json(tmp_path, redis_server.url(look_db(look), "rq+redis")), zid)
    assert said["health"] == "failed" and said["state"] == "failed", said
    assert said["state_reason"] == rq_error
    assert said["context"].startswith(f"{zid} failed"), said["context"]

    for _ in range(3):
        await look.dog.tick()
        look.clock.advance(1)
    assert _values(client, job) == before  # read, never written
    pages = look.pages(zid)
    assert [kind for kind, _ in pages] == ["incident"], look.notifier.pages
    assert f"{zid} failed: {rq_error}" in pages[0][1]


def look_db(look: Look) -> int:
    """The Redis database number the look's source reads."""
    return int(look.source.redis_url.rsplit("/", 1)[1])


async def test_a_finished_job_is_a_succeeded_run(
    workers: RQWorkers, look: Look, client: Any, tmp_path: Path
) -> None:
    job = workers.enqueue(0, tmp_path / "quick")
    wait_for("RQ to finish the job", lambda: _rq_status(client, job) == "finished")
    assert job in rq.registry.FinishedJobRegistry("default", connection=client).get_job_ids()
    view = (await look.monitor.poll()).by_id()[f"default/zqrq.spin/{job}"]
    assert view.task.state is TaskState.SUCCEEDED and view.health is Health.SUCCEEDED
    assert view.task.finished_at is not None


async def test_a_job_deferred_behind_a_failed_one_says_it_waits_for_ever(
    workers: RQWorkers, look: Look, client: Any, tmp_path: Path, redis_server: ThrowawayRedis
) -> None:
    """RQ keeps a job deferred for ever once the job it depends on failed: the row says what
    it waits on, and that it failed; the failure is paged once, the deferred job is not."""
    first = workers.enqueue_call("zqrq.boom", str(tmp_path / "first"))
    then = workers.enqueue(1, tmp_path / "then", depends_on=first)
    wait_for("RQ to fail the first job", lambda: _rq_status(client, first) == "failed")
    assert _rq_status(client, then) == "deferred"
    assert then in rq.registry.DeferredJobRegistry("default", connection=client).get_job_ids()
    up, down = f"default/zqrq.boom/{first}", f"default/zqrq.spin/{then}"
    view = (await look.monitor.poll()).by_id()[down]
    assert view.task.upstream == (up,)
    words = f"rq deferred: waits for ever on {up}, which failed"
    assert view.task.state_reason == words
    assert view.waiting_on == ((up, Health.FAILED),)

    said = _task(_status_json(tmp_path, redis_server.url(look_db(look), "rq+redis")), down)
    assert said["state_reason"] == words
    assert said["context"] == f"{down} queued: waiting on {up} (failed)", said["context"]

    for _ in range(3):
        await look.dog.tick()
        look.clock.advance(1)
    assert [kind for kind, _ in look.pages(up)] == ["incident"]
    assert look.pages(down) == []


async def test_a_key_of_another_type_is_skipped_and_named_and_the_rest_is_read(
    workers: RQWorkers, look: Look, client: Any, tmp_path: Path, redis_server: ThrowawayRedis
) -> None:
    """``SET rq:wip:bad notazset`` with the queue ``bad`` registered, and a job listed in the
    queue ``other`` whose hash is a string: RQ's own API cannot read them; zombietop names
    both keys and still reads every other job."""
    job = workers.enqueue(0, tmp_path / "quick")
    wait_for("RQ to finish the job", lambda: _rq_status(client, job) == "finished")
    zid = f"default/zqrq.spin/{job}"
    client.sadd("rq:queues", "rq:queue:bad")
    client.set("rq:wip:bad", "notazset")
    client.sadd("rq:queues", "rq:queue:other")
    client.rpush("rq:queue:other", "nothash")
    client.set("rq:job:nothash", "a string")
    try:
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            rq.registry.StartedJobRegistry("bad", connection=client).get_job_ids()
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            Job.fetch("nothash", connection=client)
        snapshot = await look.monitor.poll()
        said = _status_json(tmp_path, redis_server.url(look_db(look), "rq+redis"))
    finally:
        client.delete("rq:wip:bad", "rq:queue:other", "rq:job:nothash")
        client.srem("rq:queues", "rq:queue:bad", "rq:queue:other")
    assert snapshot.source_errors == {}
    assert snapshot.by_id()[zid].task.state is TaskState.SUCCEEDED
    note = snapshot.source_notes[look.source.name]
    assert "skipped rq:wip:bad (not a sorted set), rq:job:nothash (not a hash)" in note, note
    assert said["source_errors"] == [] and _task(said, zid)["state"] == "succeeded"
    assert [n["note"] for n in said["source_notes"]] == [note]


async def test_a_start_time_that_does_not_read_is_stalled_after_the_start_grace(
    workers: RQWorkers, look: Look, client: Any, tmp_path: Path, redis_server: ThrowawayRedis
) -> None:
    """RQ's ``started_at`` of a running job set to ``not a date``: the job is ``starting`` from
    when zombietop first saw it, then ``stalled`` after the start grace, with the reason; the
    watchdog pages it once. Before, the job's start was "now" at every poll."""
    marker = tmp_path / "long"
    job = workers.enqueue(60, marker)
    wait_for("the job to start", lambda: marker.exists() and marker.read_text())
    zid = f"default/zqrq.spin/{job}"
    try:
        client.hset(f"rq:job:{job}", "started_at", "not a date")
        # RQ still says started; its own API cannot read the job any more.
        assert client.hget(f"rq:job:{job}", "status") == b"started"
        with pytest.raises(ValueError, match="not a date"):
            Job.fetch(job, connection=client)
        view = (await look.monitor.poll()).by_id()[zid]
        why = "RQ's start time 'not a date' does not read as a time"
        assert view.health is Health.STARTING and view.task.state_reason == why
        said = _task(_status_json(tmp_path, redis_server.url(look_db(look), "rq+redis")), zid)
        assert said["state"] == "starting" and said["state_reason"] == why
        grace = look.monitor.config.limits_for("zqrq.spin").start_grace
        for _ in range(2):
            await look.dog.tick()
            look.clock.advance(grace / 2 + 1)
        for _ in range(2):
            await look.dog.tick()
            look.clock.advance(1)
        view = look.monitor.last.by_id()[zid]
        # Enqueued two minutes ago, as RQ writes it: a one-shot status says stalled at once.
        enqueued = datetime.now(UTC) - timedelta(minutes=2)
        client.hset(f"rq:job:{job}", "enqueued_at", enqueued.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        once = _task(_status_json(tmp_path, redis_server.url(look_db(look), "rq+redis")), zid)
    finally:
        # RQ's own stop reads the job, so it needs a time RQ can read.
        client.hset(f"rq:job:{job}", "started_at", "2026-01-01T00:00:00.000000Z")
        rq.command.send_stop_job_command(client, job)
    assert view.health is Health.STALLED
    words = [reason.words(look.clock.now()) for reason in view.verdict.reasons]
    assert any(
        w.startswith("no first heartbeat") and w.endswith(f"(start grace 1m): {why}") for w in words
    ), words
    assert [kind for kind, _ in look.pages(zid)] == ["incident"], look.notifier.pages
    assert why in look.pages(zid)[0][1]
    assert once["health"] == "stalled", once
    assert once["state_reason"] == why
    assert "stalled: no heartbeat yet (2m0" in once["context"], once["context"]
    assert f" since claim): {why}, lease expires in " in once["context"], once["context"]
