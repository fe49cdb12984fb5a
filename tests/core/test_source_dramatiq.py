"""The Dramatiq source against real Dramatiq workers on a throwaway redis-server.

Each test starts real ``dramatiq`` workers (tests/dramatiq_env.py), sends real messages through
Dramatiq's own ``send``, makes the fault happen with real signals, and polls zombietop's monitor
with the real process probe. ``redis-cli monitor`` shows that zombietop's connection sends no
write.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis

from tests.core.test_watchdog import ListNotifier
from tests.dramatiq_env import DramatiqWorkers, require_dramatiq, started
from tests.queues_env import wait_for
from tests.redis_monitor import RedisMonitor
from tests.redis_server import ThrowawayRedis
from zombietop.actions import ActionKind
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import SourceError
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import TaskView
from zombietop.model import HeartbeatSource, TaskState
from zombietop.procs import PsutilProbe
from zombietop.sources import open_source
from zombietop.sources.base import Capability, Origin
from zombietop.sources.dramatiq import DRAMATIQ_HEARTBEAT_TIMEOUT, DramatiqSource
from zombietop.sources.engine_text import bounded_id
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

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
    workers.start()
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
    print(f"\ndramatiq times: dead {dead_after:.1f}s after the worker process went")


async def test_failed_and_acknowledged_messages_are_runs_that_ended(
    workers: DramatiqWorkers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    """A failed message is dead-lettered (``.XQ``): a failed run. Dramatiq keeps nothing of a
    message that succeeded: one seen held, then gone from every key, was acknowledged."""
    workers.start()
    done = workers.send("nap", 5, str(tmp_path / "d"))
    started(tmp_path / "d")
    zid = f"default/nap/{done}"
    assert (await watch.once(zid)).task.state.value == "running"
    failed = workers.send("boom", str(tmp_path / "f"))
    wait_for("the failure", lambda: client.zcard("dramatiq:default.XQ") == 1)
    wait_for("the acknowledgement", lambda: not any(_held(client).values()))
    views = (await watch.monitor.poll()).by_id()
    assert views[f"default/boom/{failed}"].health is Health.FAILED
    assert "dead-lettered by Dramatiq" in (views[f"default/boom/{failed}"].task.state_reason or "")
    assert views[zid].health is Health.SUCCEEDED
    again = (await watch.monitor.poll()).by_id()
    assert again[zid].health is Health.SUCCEEDED  # kept for the finished window


async def test_the_watchdog_pages_the_held_message_once_in_dramatiqs_words(
    workers: DramatiqWorkers, watch: Watch, tmp_path: Path
) -> None:
    workers.start()
    message = workers.send("nap", 120, str(tmp_path / "m"))
    pid = started(tmp_path / "m")
    await watch.once(f"default/nap/{message}")  # the worker's process is found
    os.kill(pid, signal.SIGKILL)
    wait_for("the worker process to go", lambda: not psutil.pid_exists(pid))
    notifier = ListNotifier()
    dog = Watchdog(
        watch.monitor,
        watch.monitor.config,
        executor=None,
        notifiers=[notifier],
        clock=watch.clock,
        log=lambda line: None,
    )
    watch.clock.set(time.time() + 2)  # past the second Dramatiq's worker has to beat
    for _ in range(3):
        await dog.tick()
        watch.clock.advance(1)
    paged = [p for p in notifier.pages if p.kind == "incident"]
    assert [(p.task_id, p.health) for p in paged] == [(f"default/nap/{message}", "dead")]
    assert REQUEUED_ONLY in paged[0].shown, paged[0].shown
    assert paged[0].shown.endswith(
        " - requeue or drop it with the redis-cli line shown, or kill its worker"
    )


async def test_the_resume_line_requeues_the_dead_workers_message_and_a_worker_runs_it(
    workers: DramatiqWorkers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    """The line zombietop prints (and never runs) does what Dramatiq's maintenance pass would:
    the message goes back on its queue, and a live worker runs it again."""
    first = workers.start()
    message = workers.send("nap", 120, str(tmp_path / "m"))
    started(tmp_path / "m")
    zid = f"default/nap/{message}"
    snapshot = await watch.monitor.poll()
    origin = snapshot.origins[zid]
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    refusal = watch.source.refusal(ActionKind.RESUME, origin)
    assert refusal is not None and "redis-cli" in refusal
    line = refusal.split("maintenance pass would: ", 1)[1]
    subprocess.run(shlex.split(line), check=True, capture_output=True, timeout=30)
    assert client.llen("dramatiq:default") == 1 and not any(_held(client).values())
    workers.start()
    again = started(tmp_path / "m", count=2)
    view = await watch.view(zid)
    assert view.health is Health.HEALTHY and view.task.pid == again
    discard = watch.source.refusal(ActionKind.DISCARD, (await watch.monitor.poll()).origins[zid])
    assert discard is not None and "acknowledge it as its worker would" in discard


async def test_the_kill_check_passes_a_worker_process_and_refuses_any_other(
    workers: DramatiqWorkers, watch: Watch, tmp_path: Path
) -> None:
    main = workers.start()
    workers.send("nap", 60, str(tmp_path / "m"))
    pid = started(tmp_path / "m")
    assert watch.source.kill_check(pid) is None
    said = watch.source.kill_check(main.pid)  # the main process: its parent is no `dramatiq`
    assert said is not None and "not `dramatiq`" in said, said
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        said = watch.source.kill_check(sleeper.pid)
        assert said is not None and "not a Dramatiq worker process" in said, said
    finally:
        sleeper.kill()
        sleeper.wait()


def test_zombietop_kill_signals_the_messages_worker_process(
    workers: DramatiqWorkers, tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> None:
    """``zombietop kill`` of a running message: the source finds its worker process, checks
    that it is a Dramatiq worker process, and sends SIGTERM to it alone (it does not lead its
    process group: the main ``dramatiq`` process does)."""
    main = workers.start()
    message = workers.send("nap", 120, str(tmp_path / "m"))
    pid = started(tmp_path / "m")
    config = tmp_path / "config.toml"
    config.write_text('[timeouts]\nkill_grace = "2s"\n')
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(tmp_path / "zt.db")]
    base += ["--config", str(config)]
    subprocess.run([*base, "init"], check=True, capture_output=True, timeout=60)
    url = redis_server.url(redis_db, "dramatiq+redis")
    done = subprocess.run(
        [*base, "kill", f"default/nap/{message}", "--yes", "--source", url],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SIGTERM sent to pid {pid}" in done.stdout, done.stdout
    wait_for(
        "the worker process to end",
        lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
    )
    assert main.poll() is None or main.returncode is not None


def test_resume_and_discard_name_redis_cli_lines_for_each_place() -> None:
    source = open_source("dramatiq+redis://127.0.0.1:6379/2?namespace=jobs")
    assert isinstance(source, DramatiqSource) and source.namespace == "jobs"
    ids = {
        "queue": "emails",
        "actor": "send",
        "message_id": "m1",
        "redis_message_id": "r1",
        "key_queue": "emails",
        "worker": "w1",
        "namespace": "jobs",
        "redis": "127.0.0.1:6379/2",
    }

    def origin(state: str) -> Origin:
        return Origin(
            source=source.name,
            kind="dramatiq",
            capability=Capability.READ_ONLY,
            ids={**ids, "state": state},
        )

    held = source.refusal(ActionKind.RESUME, origin("held")) or ""
    assert "redis-cli -h 127.0.0.1 -p 6379 -n 2 EVAL" in held
    assert "jobs:__acks__.w1.emails jobs:emails r1" in held
    failed = source.refusal(ActionKind.RESUME, origin("failed")) or ""
    assert 'RedisBroker(client=r, namespace="jobs")' in failed
    assert 'r.hget("jobs:emails.XQ.msgs", "r1")' in failed
    queued = source.refusal(ActionKind.DISCARD, origin("queued")) or ""
    assert "lrem" in queued and "jobs:emails jobs:emails.msgs r1" in queued
    assert source.refusal(ActionKind.KILL, origin("held")) is None


@pytest.mark.parametrize(
    "url",
    [
        "dramatiq+redis://host:port/0",
        "dramatiq+redis://host:6379/zero",
        "dramatiq+redis://h:1/0?x=1",
        "dramatiq+redis://h:1/0?namespace=",
    ],
)
def test_a_wrong_url_says_how_to_write_one(url: str) -> None:
    with pytest.raises(SourceError, match=r"dramatiq\+redis|port"):
        open_source(url)


async def test_hostile_and_broken_keys_are_bounded_or_skipped_never_fatal(
    redis_server: ThrowawayRedis, redis_db: int, client: Any
) -> None:
    """Whoever can write the Redis writes Dramatiq's names and data: a name of 10,000
    characters with terminal escapes, data that is no JSON, keys of another type. The poll
    bounds each name, skips what does not read, and fails on nothing."""
    long = "\x1b[2J" + "a" * 10_000
    data = {"actor_name": long, "message_id": "m\x1b]0;x\x07", "options": {"retries": "x"}}
    client.hset("dramatiq:default.msgs", mapping={"r1": json.dumps(data), "r2": b"\x80\x04junk"})
    client.sadd(f"dramatiq:__acks__.{long}.default", "r1", "r2")
    client.set("dramatiq:broken.msgs", "a string, not a hash")
    client.hset("dramatiq:other.msgs", "r3", "{}")
    client.set("dramatiq:other", "a string, not a list")
    client.set("dramatiq:__heartbeats__", "a string, not a sorted set")
    source = DramatiqSource(redis_server.url(redis_db, "dramatiq+redis"))
    await source.open()
    try:
        found = await source.poll(None, "here")
    finally:
        await source.close()
    tasks = sorted((r.record.task for r in found), key=lambda t: t.task_id)
    assert len(tasks) == 2 and all(len(t.task_id) < 800 for t in tasks)
    assert {t.step for t in tasks} == {bounded_id(long), "?"}
    assert all(t.state is TaskState.RUNNING and t.state_reason for t in tasks)


async def test_a_frozen_worker_process_stalls_its_message_then_dramatiq_calls_it_dead(
    workers: DramatiqWorkers, watch: Watch, tmp_path: Path
) -> None:
    """A worker process stopped with SIGSTOP stops beating too: ``stalled`` at once. A minute
    later the lease that Dramatiq's heartbeat timeout bounds expires: Dramatiq counts the
    worker as dead though its process lives."""
    workers.start()
    message = workers.send("nap", 120, str(tmp_path / "m"))
    pid = started(tmp_path / "m")
    zid = f"default/nap/{message}"
    assert (await watch.view(zid)).health is Health.HEALTHY
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_for("the worker to stop", lambda: psutil.Process(pid).status() == "stopped")
        view = await watch.once(zid)
        assert view.health is Health.STALLED, view.verdict.context(watch.clock.now())
        assert f"pid {pid} stopped" in view.verdict.context(watch.clock.now())
        later = await watch.once(zid, ahead=DRAMATIQ_HEARTBEAT_TIMEOUT + 1)
        line = later.verdict.context(watch.clock.now())
        assert later.health is Health.RECLAIMABLE, line
        assert "dead to Dramatiq though its process lives; " + REQUEUED_ONLY in line, line
    finally:
        os.kill(pid, signal.SIGCONT)


async def test_a_redis_that_refuses_monitor_leaves_the_message_without_a_pid_only(
    workers: DramatiqWorkers,
    tmp_path: Path,
    client: Any,
    redis_server: ThrowawayRedis,
    redis_db: int,
) -> None:
    """Process truth is a bonus: where Redis refuses ``MONITOR`` (an ACL, a managed Redis), the
    poll still reads every message, with its worker's beat and no pid."""
    user = f"zt-no-monitor-{redis_db}"
    client.execute_command("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-monitor")
    try:
        workers.start()
        message = workers.send("nap", 60, str(tmp_path / "m"))
        started(tmp_path / "m")
        url = f"dramatiq+redis://{user}:pw@127.0.0.1:{redis_server.port}/{redis_db}"
        async for watch in _watch(tmp_path, url, FakeClock(time.time())):
            view = await watch.view(f"default/nap/{message}")
        assert view.health is Health.HEALTHY and view.task.pid is None
        assert view.heartbeat is not None
    finally:
        client.execute_command("ACL", "DELUSER", user)
