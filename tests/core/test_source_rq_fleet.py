"""An RQ worker on "another host", served by that host's real ``zombietop agent``.

The worker registers the host name ``worker-8`` (RQ's own ``--worker-class``, a worker that
sets its ``hostname``): zombietop here does not probe its horse, whose pid RQ's keys do not
hold. The agent, started with ``--host worker-8`` and the same ``--source rq+redis://...``,
reads the workers itself and samples the horse, so the dashboard here sees it stopped. Every
process is real and runs on this machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.core.realprocs import Children, wait_for, zombietop
from tests.queues_env import RQWorkers
from tests.queues_env import wait_for as wait_until
from tests.redis_server import ThrowawayRedis
from zombietop.config import Config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.procs import PsutilProbe
from zombietop.sources.rq import RQSource
from zombietop.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

WORKER = "worker-8"


async def test_a_remote_rq_job_is_judged_with_its_hosts_agent(
    rq_workers: RQWorkers,
    real_store: SQLiteStore,
    fast_config: Config,
    fast_config_path: Path,
    db: Path,
    children: Children,
    redis_server: ThrowawayRedis,
    redis_db: int,
    tmp_path: Path,
) -> None:
    rq_workers.start("w1", host=WORKER)
    marker = tmp_path / "m"
    job = rq_workers.enqueue(60, marker)
    text = wait_until("the job to start", lambda: marker.exists() and marker.read_text())
    horse = int(text.split()[0])
    zid = f"default/zqrq.spin/{job}"
    url = redis_server.url(redis_db, "rq+redis")
    source = RQSource(url)
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe(), sources=[source])
    os.kill(horse, signal.SIGSTOP)
    try:
        view = (await monitor.poll()).by_id()[zid]
        # RQ's keys name the worker's pid, not its horse's: only worker-8's agent finds it.
        assert view.task.host == WORKER and view.task.pid is None and view.process is None
        argv = zombietop(db, fast_config_path, "agent", "--host", WORKER, "--interval", "0.2")
        agent = children.start(
            [*argv, "--source", url], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

        async def sampled() -> bool:
            found = (await monitor.poll()).by_id()[zid].process
            return found is not None and found.cpu_percent is not None

        await wait_for(sampled, timeout=40, what=f"{WORKER}'s agent to sample the horse")
        view = monitor.last.by_id()[zid]
        assert view.remote and view.process is not None and view.process.pid == horse
        assert view.health is Health.STALLED
        assert view.verdict.reasons[0].code == "process_stopped"
        agent.send_signal(signal.SIGTERM)
        agent.wait(10)
    finally:
        os.kill(horse, signal.SIGCONT)
        await source.close()
