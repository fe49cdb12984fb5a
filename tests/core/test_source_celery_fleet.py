"""A Celery worker on "another host", served by that host's real ``zombietop agent``.

The worker is named ``w1@worker-7``: zombietop here does not probe its child, and says that no
agent serves worker-7. The agent, started with ``--host worker-7`` and the same
``--source celery+redis://...``, reads the workers itself and samples the child, so the
dashboard here sees it stopped. Every process is real and runs on this machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.core.realprocs import Children, wait_for, zombietop
from tests.queues_env import Workers
from tests.queues_env import wait_for as wait_until
from tests.redis_server import ThrowawayRedis
from zombietop.config import Config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.procs import PsutilProbe
from zombietop.sources.celery import CelerySource
from zombietop.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

WORKER = "worker-7"


async def test_a_remote_celery_task_is_judged_with_its_hosts_agent(
    celery_workers: Workers,
    real_store: SQLiteStore,
    fast_config: Config,
    fast_config_path: Path,
    db: Path,
    children: Children,
    redis_server: ThrowawayRedis,
    redis_db: int,
    tmp_path: Path,
) -> None:
    celery_workers.start("w1", host=WORKER)
    marker = tmp_path / "m"
    result = celery_workers.app().send_task("zq.spin", args=(60, str(marker)))
    text = wait_until("the task to start", lambda: marker.exists() and marker.read_text())
    child = int(text.split()[0])
    zid = f"celery/zq.spin/{result.id}"
    url = redis_server.url(redis_db, "celery+redis")
    source = CelerySource(url)
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe(), sources=[source])
    os.kill(child, signal.SIGSTOP)
    try:
        view = (await monitor.poll()).by_id()[zid]
        assert view.task.host == WORKER and view.process is None
        assert view.agent_note == (
            f"no agent on {WORKER}: none has ever reported, so its process is not seen"
        )
        argv = zombietop(db, fast_config_path, "agent", "--host", WORKER, "--interval", "0.2")
        agent = children.start(
            [*argv, "--source", url], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

        async def sampled() -> bool:
            found = (await monitor.poll()).by_id()[zid].process
            return found is not None and found.cpu_percent is not None

        await wait_for(sampled, timeout=40, what=f"{WORKER}'s agent to sample the child")
        view = monitor.last.by_id()[zid]
        assert view.remote and view.process is not None and view.process.pid == child
        assert view.health is Health.STALLED
        assert view.verdict.reasons[0].code == "process_stopped"
        agent.send_signal(signal.SIGTERM)
        agent.wait(10)
    finally:
        os.kill(child, signal.SIGCONT)
        await source.close()
