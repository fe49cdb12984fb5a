"""A step type's ``resume_command`` resumes a Celery task or an RQ job: zombietop runs the
command, and the command enqueues it again through the engine's own API (Celery's
``send_task``, RQ's ``Queue.enqueue``), with real workers."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import redis
import rq

from tests.core.test_source_celery import _child, _inspect, _send, _watch
from tests.queues_env import RQWorkers, Workers, wait_for
from tests.redis_server import ThrowawayRedis
from zombietop.act.executor import Executor
from zombietop.act.source_actions import SourceActions
from zombietop.actions import ActionKind, ActionRequest, Outcome
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.judge.monitor import Monitor
from zombietop.sources.rq import RQSource
from zombietop.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

AGAIN = """\
import sys

from celery import Celery

broker, task_id, marker = sys.argv[1:]
queue, name, _ = task_id.split("/", 2)
sent = Celery(broker=broker).send_task(name, args=(60, marker), queue=queue)
print("sent again as", sent.id)
"""


async def test_resume_command_enqueues_a_celery_task_again(
    celery_workers: Workers, redis_server: ThrowawayRedis, redis_db: int, tmp_path: Path
) -> None:
    script = tmp_path / "again.py"
    script.write_text(AGAIN)
    broker = redis_server.url(redis_db)
    again = tmp_path / "m2"
    config = (
        '[step_types."zq.spin"]\n'
        f'resume_command = ["{sys.executable}", "{script}", "{broker}", "{{task_id}}", '
        f'"{again}"]\n'
    )
    celery_workers.start("w1", concurrency=2)
    task_id = _send(celery_workers, 60, tmp_path / "m")
    _child(tmp_path / "m")
    clock = FakeClock(time.time())
    url = redis_server.url(redis_db, "celery+redis")
    async for watch in _watch(tmp_path / "zt", url, clock, config_text=config):
        zid = f"celery/zq.spin/{task_id}"
        view = await watch.view(zid)
        assert view.lease is not None
        request = ActionRequest(
            kind=ActionKind.RESUME, task_id=zid, expected_token=view.lease.token, actor="me"
        )
        executor = Executor(watch.monitor.store, watch.monitor.config)
        done = await SourceActions(watch.monitor, executor).run(request)
        assert done.outcome is Outcome.RELAUNCHED, done.message
        assert f"ran resume_command for {zid}" in done.message
        # The worker runs the task sent again: its child writes the second marker.
        wait_for("the task sent again to start", lambda: again.exists() and again.read_text())
        active = [t["id"] for ts in _inspect(celery_workers, "active").values() for t in ts]
        assert task_id in active and len(active) == 2, active


async def test_without_resume_command_a_resume_is_refused_with_celerys_command(
    celery_workers: Workers, redis_server: ThrowawayRedis, redis_db: int, tmp_path: Path
) -> None:
    celery_workers.start("w1")
    task_id = _send(celery_workers, 60, tmp_path / "m")
    _child(tmp_path / "m")
    clock = FakeClock(time.time())
    url = redis_server.url(redis_db, "celery+redis")
    async for watch in _watch(tmp_path / "zt", url, clock):
        zid = f"celery/zq.spin/{task_id}"
        view = await watch.view(zid)
        assert view.lease is not None
        request = ActionRequest(
            kind=ActionKind.RESUME, task_id=zid, expected_token=view.lease.token, actor="me"
        )
        executor = Executor(watch.monitor.store, watch.monitor.config)
        done = await SourceActions(watch.monitor, executor).run(request)
        assert done.outcome is Outcome.REFUSED
        assert "app.send_task('zq.spin', ...)" in done.message


RQ_AGAIN = """\
import sys

import redis
import rq

url, task_id, marker = sys.argv[1:]
queue, name, _ = task_id.split("/", 2)
with redis.Redis.from_url(url) as conn:
    job = rq.Queue(queue, connection=conn).enqueue(name, 60, marker, job_timeout=600)
print("enqueued again as", job.id)
"""


async def test_resume_command_enqueues_an_rq_job_again(
    rq_workers: RQWorkers, redis_server: ThrowawayRedis, redis_db: int, tmp_path: Path
) -> None:
    script = tmp_path / "again.py"
    script.write_text(RQ_AGAIN)
    url = redis_server.url(redis_db)
    again = tmp_path / "m2"
    folder = tmp_path / "zt"
    folder.mkdir()
    (folder / "config.toml").write_text(
        '[step_types."zqrq.spin"]\n'
        f'resume_command = ["{sys.executable}", "{script}", "{url}", "{{task_id}}", '
        f'"{again}"]\n'
    )
    rq_workers.start("w1")
    job = rq_workers.enqueue(60, tmp_path / "m")
    wait_for("the job to start", lambda: (tmp_path / "m").exists())
    clock = FakeClock(time.time())
    source = RQSource(redis_server.url(redis_db, "rq+redis"), clock=clock)
    await source.open()
    store = await SQLiteStore.open(folder / "zombietop.db", create=True, clock=clock)
    try:
        monitor = Monitor(store, load_config(folder / "config.toml"), clock=clock, sources=[source])
        zid = f"default/zqrq.spin/{job}"
        view = (await monitor.poll()).by_id()[zid]
        request = ActionRequest(
            kind=ActionKind.RESUME, task_id=zid, expected_token=view.token, actor="me"
        )
        done = await SourceActions(monitor, Executor(store, monitor.config)).run(request)
        assert done.outcome is Outcome.RELAUNCHED, done.message
        # RQ's own queue holds the job enqueued again, behind the one that still runs.
        with redis.Redis.from_url(url) as conn:
            queued = wait_for(
                "the job enqueued again", lambda: rq.Queue("default", connection=conn).jobs
            )
            assert [j.func_name for j in queued] == ["zqrq.spin"]
            assert queued[0].args == (60, str(again)) and queued[0].id != job
    finally:
        await source.close()
        await store.close()
