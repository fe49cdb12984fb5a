"""A source that hangs withholds only its own tasks, however short ``[watch] interval`` is.

The source is Celery over a real redis-server of this test's own, stopped with SIGSTOP (a
broker that hangs: its socket takes the connection and never answers). zombietop's own stalled
tasks are still paged within one look, and the page about the source names it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from tests.core.test_watchdog import ListNotifier, config, start
from tests.redis_server import NO_REDIS, ThrowawayRedis, find_server
from zombietop.clock import FakeClock
from zombietop.judge.monitor import Monitor
from zombietop.sources.celery import CelerySource
from zombietop.store import Store
from zombietop.watch.watchdog import Watchdog

pytestmark = pytest.mark.backends("sqlite")
INTERVAL = 2.0
STALLED = 20


@pytest.fixture
def own_redis() -> Iterator[ThrowawayRedis]:
    """A server that this test alone uses, since it stops it."""
    binary = find_server()
    if binary is None:
        pytest.skip(NO_REDIS)
    server = ThrowawayRedis(binary)
    server.start()
    try:
        yield server
    finally:
        if server.proc is not None:
            os.kill(server.proc.pid, signal.SIGCONT)
        server.stop()


async def test_a_hung_broker_withholds_only_its_own_tasks(
    store: Store, clock: FakeClock, own_redis: ThrowawayRedis
) -> None:
    source = CelerySource(own_redis.url(1, "celery+redis"), clock=clock)
    await source.open()
    cfg = config(interval=INTERVAL)
    notifier, logs = ListNotifier(), []
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, sources=[source], source_deadline=INTERVAL),
        cfg,
        executor=None,
        notifiers=[notifier],
        clock=clock,
        log=logs.append,
    )
    try:
        for number in range(STALLED):
            await start(store, task_id=f"export-{number}")
        assert (await dog.tick()).withheld is None
        assert own_redis.proc is not None
        os.kill(own_redis.proc.pid, signal.SIGSTOP)
        clock.advance(600)  # every one of them is stalled now
        report = await dog.tick()
        assert report.withheld is None, report.withheld
        paged = sorted(p.task_id for p in notifier.pages if p.kind == "incident")
        assert paged == sorted(f"export-{n}" for n in range(STALLED))
        [about] = [p.line for p in notifier.pages if p.kind == "watchdog"]
        assert about.startswith(f"zombietop watchdog cannot read source {source.name}")
        assert f"did not answer within {INTERVAL:g}s" in about
    finally:
        if own_redis.proc is not None:
            os.kill(own_redis.proc.pid, signal.SIGCONT)
        await source.close()
