"""The Celery source against real Celery workers on a throwaway redis-server.

Each test starts real ``celery worker`` processes (tests/queues_env.py) on a Redis database of
its own, sends real tasks, makes the fault happen (SIGSTOP, SIGKILL, a visibility timeout that
runs out), and polls zombietop's monitor with the real process probe. The source's clock is
this host's, moved on by hand where a test needs time to pass, so nothing sleeps for it.
"""

from __future__ import annotations

import os
import re
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
from tests.redis_server import ThrowawayRedis
from zombietop.act.executor import Executor
from zombietop.act.source_actions import SourceActions
from zombietop.actions import ActionKind, ActionRequest, Outcome
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import ConfigError, SourceError
from zombietop.health import Flag, Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import Snapshot, TaskView
from zombietop.model import HeartbeatSource
from zombietop.procs import PsutilProbe
from zombietop.sources import open_source
from zombietop.sources.celery import CelerySource
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

SHORT_TIMEOUT = 5.0
"""The heartbeat timeout the tests give the source: a worker silent this long is stale."""
SHORT_INTERVAL = '[thresholds]\nheartbeat_interval = "2s"\nheartbeat_timeout = "5s"\n'
"""The config's thresholds to match: a gone process waits one heartbeat interval (2s) for the
engine's record of its end, well inside the source's heartbeat timeout."""


@pytest.fixture
def clock() -> FakeClock:
    """This host's time, moved on only by the test (the workers' own times are real)."""
    return FakeClock(time.time())


@pytest.fixture
def client(redis_server: ThrowawayRedis, redis_db: int) -> Any:
    found = redis.Redis.from_url(redis_server.url(redis_db))
    yield found
    found.close()


class Watch:
    """zombietop's monitor on the test's Celery source."""

    def __init__(self, monitor: Monitor, source: CelerySource, clock: FakeClock) -> None:
        self.monitor, self.source, self.clock = monitor, source, clock

    async def poll(self) -> Snapshot:
        snapshot = await self.monitor.poll()
        assert snapshot.ok, snapshot.error
        assert not snapshot.source_errors, snapshot.source_errors
        return snapshot

    async def view(self, task_id: str) -> TaskView:
        """Two polls a second apart (the probe needs a CPU delta); the task's view."""
        await self.poll()
        self.clock.advance(1)
        snapshot = await self.poll()
        found = snapshot.by_id()
        assert task_id in found, sorted(found)
        return found[task_id]


async def _watch(
    tmp_path: Path, url: str, clock: FakeClock, config_text: str = "", **options: float
) -> AsyncIterator[Watch]:
    query = "&".join(f"{k}={v}" for k, v in options.items())
    source = CelerySource(
        url + (f"?{query}" if query else ""), clock=clock, heartbeat_timeout=SHORT_TIMEOUT
    )
    await source.open()
    tmp_path.mkdir(exist_ok=True)
    config = tmp_path / "config.toml"
    config.write_text(config_text)
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    monitor = Monitor(
        store, load_config(config), probe=PsutilProbe(clock=clock), clock=clock, sources=[source]
    )
    try:
        yield Watch(monitor, source, clock)
    finally:
        await source.close()
        await store.close()


@pytest.fixture
async def watch(
    tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int, clock: FakeClock
) -> AsyncIterator[Watch]:
    url = redis_server.url(redis_db, "celery+redis")
    async for found in _watch(tmp_path, url, clock, SHORT_INTERVAL):
        yield found


def _child(marker: Path) -> int:
    """The pid of the pool child that started the task (the task writes it first)."""
    text = wait_for(f"the task to start ({marker})", lambda: marker.exists() and marker.read_text())
    return int(text.split()[0])


def _send(workers: Workers, seconds: float, marker: Path) -> str:
    result = workers.app().send_task("zq.spin", args=(seconds, str(marker)))
    return str(result.id)


def _inspect(workers: Workers, what: str) -> dict[str, Any]:
    """What ``celery inspect WHAT`` says at this moment."""
    answer = getattr(workers.app().control.inspect(timeout=1.0), what)()
    return answer or {}


def _values(client: Any) -> dict[bytes, bytes]:
    """Every key's value, serialized, but the reply queues and bindings of the broadcasts
    (``celery inspect``'s too) and the transport's short-lived restore mutex."""
    skip = (b"reply.celery.pidbox", b"_kombu.binding", b"unacked_mutex")
    return {
        key: client.dump(key)
        for key in sorted(client.keys("*"))
        if not any(part in key for part in skip)
    }


async def test_a_cpu_task_is_healthy_and_a_waiting_one_queued(
    celery_workers: Workers, watch: Watch, tmp_path: Path
) -> None:
    celery_workers.start("w1")
    first = _send(celery_workers, 30, tmp_path / "first")
    child = _child(tmp_path / "first")
    second = _send(celery_workers, 1, tmp_path / "second")
    wait_for("the second task to be reserved", lambda: _inspect(celery_workers, "reserved"))
    view = await watch.view(f"celery/zq.spin/{first}")
    assert view.health is Health.HEALTHY, view.verdict.context(watch.clock.now())
    assert view.task.pid == child
    assert view.task.step_type == "zq.spin"
    assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.SUPERVISOR
    waiting = (await watch.poll()).by_id()[f"celery/zq.spin/{second}"]
    assert waiting.health is Health.QUEUED
    assert waiting.task.state_reason is not None and "reserved by w1@" in waiting.task.state_reason


async def test_a_stopped_child_is_stalled_while_ping_still_answers(
    celery_workers: Workers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    celery_workers.start("w1")
    task_id = _send(celery_workers, 60, tmp_path / "m")
    child = _child(tmp_path / "m")
    await watch.poll()
    before = _values(client)
    os.kill(child, signal.SIGSTOP)
    try:
        wait_for("the child to stop", lambda: _status(child) == "T")
        view = await watch.view(f"celery/zq.spin/{task_id}")
        assert view.health is Health.STALLED
        now = watch.clock.now()
        said = [reason.words(now) for reason in view.verdict.reasons]
        assert f"pid {child} stopped (SIGSTOP) while its engine's beat says it runs" in said
        assert f"pid {child} stopped cpu 0%" in view.verdict.context(now)
        # Celery's own tools still call it fine.
        assert all(v == {"ok": "pong"} for v in _inspect(celery_workers, "ping").values())
        assert any(
            t["id"] == task_id for ts in _inspect(celery_workers, "active").values() for t in ts
        )
    finally:
        os.kill(child, signal.SIGCONT)
    assert _values(client) == before


def _status(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


async def test_a_worker_killed_mid_task_without_acks_late_is_dead_and_lost_to_celery(
    celery_workers: Workers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    worker = celery_workers.start("w1")
    task_id = _send(celery_workers, 60, tmp_path / "m")
    child = _child(tmp_path / "m")
    await watch.poll()
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    wait_for("the child to be gone", lambda: not Path(f"/proc/{child}").exists())
    # A gone process waits one heartbeat interval (2s here) for the engine's record of its
    # end, inside the source's heartbeat timeout (5s), as the defaults are (10s inside 60s).
    view = await watch.view(f"celery/zq.spin/{task_id}")
    assert view.health is Health.HEALTHY
    assert view.verdict.reasons[0].code == "exit_unrecorded"
    watch.clock.advance(2)
    view = await watch.view(f"celery/zq.spin/{task_id}")
    assert view.health is Health.DEAD
    assert f"pid {child} gone - send it again with Celery, revoke it, or kill it" in (
        view.verdict.context(watch.clock.now())
    )
    # The message was acknowledged when the task started: Redis holds nothing of it.
    assert client.hlen("unacked") == 0
    assert _inspect(celery_workers, "active") == {}


async def test_a_worker_killed_with_acks_late_leaves_a_lost_task_paged_with_its_delivery(
    celery_workers: Workers,
    tmp_path: Path,
    redis_server: ThrowawayRedis,
    redis_db: int,
    clock: FakeClock,
    client: Any,
) -> None:
    worker = celery_workers.start("w1", acks_late=True, visibility=30)
    task_id = _send(celery_workers, 60, tmp_path / "m")
    child = _child(tmp_path / "m")
    url = redis_server.url(redis_db, "celery+redis")
    async for watch in _watch(
        tmp_path / "first", url, clock, SHORT_INTERVAL, visibility_timeout=30
    ):
        await watch.poll()
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        wait_for("the child to be gone", lambda: not Path(f"/proc/{child}").exists())
        clock.advance(2)  # past the wait for the engine's record of the end
        view = await watch.view(f"celery/zq.spin/{task_id}")
        assert view.health is Health.DEAD
    assert client.hlen("unacked") == 1
    before = _values(client)
    # A zombietop started after the kill knows only Redis: the message nobody runs.
    clock.advance(35)  # past the visibility timeout, with no worker left to restore it
    async for watch in _watch(tmp_path / "second", url, clock, visibility_timeout=30):
        view = await watch.view(f"celery/zq.spin/{task_id}")
    assert view.health is Health.RECLAIMABLE
    delivered = float(client.zrange("unacked_index", 0, -1, withscores=True)[0][1])
    assert view.task.started_at == delivered
    assert view.task.state_reason is not None
    assert view.task.state_reason.startswith("unacked for ")
    words = view.verdict.context(clock.now())
    assert words.startswith(f"celery/zq.spin/{task_id} reclaimable: no heartbeat yet")
    assert "lease expired" in words
    said = [reason.words(clock.now()) for reason in view.verdict.reasons]
    # The lease's reason ends with Celery's words on the message: nobody runs it.
    expired = [w for w in said if w.startswith("lease expired")]
    assert expired and "(ttl 30s): unacked for " in expired[0], said
    assert _values(client) == before


async def test_the_visibility_timeout_double_delivery_is_flagged_redelivered(
    celery_workers: Workers,
    tmp_path: Path,
    redis_server: ThrowawayRedis,
    redis_db: int,
    clock: FakeClock,
) -> None:
    celery_workers.start("w1", acks_late=True, visibility=2)
    task_id = _send(celery_workers, 40, tmp_path / "m")
    _child(tmp_path / "m")
    celery_workers.start("w2", acks_late=True, visibility=2)

    def twice() -> bool:
        found = [t["id"] for ts in _inspect(celery_workers, "active").values() for t in ts]
        return found.count(task_id) == 2

    wait_for("the same task active on both workers", twice, timeout=30)
    url = redis_server.url(redis_db, "celery+redis")
    async for watch in _watch(tmp_path, url, clock, visibility_timeout=2):
        view = await watch.view(f"celery/zq.spin/{task_id}")
    assert Flag.REDELIVERED in view.verdict.flags
    assert view.task.state_reason is not None and "also active on w" in view.task.state_reason
    assert view.verdict.context(clock.now()).startswith(f"celery/zq.spin/{task_id} redelivered:")


async def test_resume_and_discard_name_the_engine_command_and_kill_is_left_to_zombietop(
    redis_server: ThrowawayRedis, redis_db: int
) -> None:
    source = open_source(redis_server.url(redis_db, "celery+redis"))
    assert isinstance(source, CelerySource)
    from zombietop.sources.base import Capability, Origin

    origin = Origin(
        source=source.name,
        kind="celery",
        capability=Capability.READ_ONLY,
        ids={"queue": "celery", "task_name": "zq.spin", "task_id": "abc"},
    )
    resume = source.refusal(ActionKind.RESUME, origin)
    discard = source.refusal(ActionKind.DISCARD, origin)
    assert resume is not None and "use the engine's command" in resume
    assert discard is not None and "control revoke abc" in discard
    assert source.refusal(ActionKind.KILL, origin) is None


async def test_a_broker_that_does_not_answer_is_a_source_error(tmp_path: Path) -> None:
    from tests.redis_server import free_port

    source = CelerySource(f"celery+redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(SourceError, match="cannot connect to Redis"):
        await source.open()
    await source.close()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("celery+redis://host:port/0", "the port is not a number"),
        ("celery+redis://host:6379/zero", "DB is a number"),
        ("celery+redis://host:6379/0?visibility=3", "unknown option 'visibility'"),
        ("celery+redis://host:6379/0?visibility_timeout=-1", "above 0"),
    ],
)
def test_a_wrong_url_says_how_to_write_one(url: str, words: str) -> None:
    with pytest.raises(SourceError, match=words):
        open_source(url)


async def test_a_kill_goes_to_the_worker_child_after_its_identity_check(
    celery_workers: Workers, watch: Watch, tmp_path: Path
) -> None:
    """The executor's kill, identity-checked against the child Celery names: SIGTERM to the
    child alone (it leads no group), so the worker lives on and takes the next task."""
    worker = celery_workers.start("w1")
    task_id = _send(celery_workers, 60, tmp_path / "m")
    child = _child(tmp_path / "m")
    zid = f"celery/zq.spin/{task_id}"
    view = await watch.view(zid)
    assert view.lease is not None
    executor = Executor(watch.monitor.store, watch.monitor.config)
    request = ActionRequest(
        kind=ActionKind.KILL, task_id=zid, expected_token=view.lease.token, actor="me"
    )
    done = await SourceActions(watch.monitor, executor).run(request)
    assert done.outcome is Outcome.TERM_SENT, done.message
    wait_for("the child to exit", lambda: _status_or_gone(child) in ("gone", "Z"))
    assert worker.poll() is None  # the worker itself was not signalled
    resume = await SourceActions(watch.monitor, executor).run(
        ActionRequest(kind=ActionKind.RESUME, task_id=zid, expected_token=1, actor="me")
    )
    assert resume.outcome is Outcome.REFUSED
    assert "use the engine's command" in resume.message


def _status_or_gone(pid: int) -> str:
    try:
        return _status(pid)
    except FileNotFoundError:
        return "gone"


async def test_a_missing_extra_is_one_line_naming_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The source reads Redis itself: redis is the one package it needs, not celery.
    monkeypatch.setitem(sys.modules, "redis", None)
    source = open_source("celery+redis://127.0.0.1:1/0")
    with pytest.raises(SourceError) as raised:
        await source.open()
    words = str(raised.value)
    assert "\n" not in words
    assert "a Celery source needs redis, which is not installed" in words
    assert "zombietop[celery]" in words


def test_a_celery_source_in_the_config_is_checked_by_its_engine(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[[sources]]\nurl = "celery+redis://redis-host:6379/2?visibility_timeout=30"\n')
    assert [s.url for s in load_config(path).sources] == [
        "celery+redis://redis-host:6379/2?visibility_timeout=30"
    ]
    path.write_text('[[sources]]\nurl = "celery+redis://redis-host:6379/two"\n')
    with pytest.raises(ConfigError, match="DB is a number"):
        load_config(path)


async def test_a_frozen_worker_goes_stale_and_its_task_is_stalled(
    celery_workers: Workers, watch: Watch, tmp_path: Path
) -> None:
    """The worker stopped: it answers nothing, so its heartbeat ages from its last
    answer; past the heartbeat timeout the task it was running is stalled."""
    worker = celery_workers.start("w1")
    task_id = _send(celery_workers, 60, tmp_path / "m")
    _child(tmp_path / "m")
    zid = f"celery/zq.spin/{task_id}"
    assert (await watch.view(zid)).health is Health.HEALTHY
    os.kill(worker.pid, signal.SIGSTOP)  # the worker's main process; its child runs on
    try:
        watch.clock.advance(SHORT_TIMEOUT + 1)
        view = (await watch.poll()).by_id()[zid]
        assert _inspect(celery_workers, "ping") == {}
    finally:
        os.kill(worker.pid, signal.SIGCONT)
    assert view.health is Health.STALLED
    assert [r.code for r in view.verdict.reasons] == ["heartbeat_stale"]


def test_status_through_the_command_line_is_critical_for_a_stopped_child(
    celery_workers: Workers, tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> None:
    """``zombietop status --nagios --source celery+redis://...``, the installed command."""
    celery_workers.start("w1")
    task_id = _send(celery_workers, 60, tmp_path / "m")
    child = _child(tmp_path / "m")
    store, config = tmp_path / "zombietop.db", tmp_path / "config.toml"
    config.write_text("")
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(store), "--config", str(config)]
    subprocess.run([*base, "init"], check=True, capture_output=True)
    os.kill(child, signal.SIGSTOP)
    try:
        done = subprocess.run(
            [*base, "status", "--nagios", "--source", redis_server.url(redis_db, "celery+redis")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.kill(child, signal.SIGCONT)
    assert done.returncode == 2, done.stderr  # CRITICAL
    assert done.stdout.startswith("ZOMBIETOP CRITICAL - 1 stalled")
    line = rf"celery/zq.spin/{task_id} stalled: supervisor heartbeat \d+s old, pid {child} stopped "
    # resume and discard are refused for Celery's task: the page names what works.
    assert re.search(
        line + "cpu 0% - send it again with Celery, revoke it, or kill it", done.stdout
    ), done.stdout


async def test_a_worker_that_beats_for_an_idle_child_is_stalled(
    celery_workers: Workers,
    tmp_path: Path,
    redis_server: ThrowawayRedis,
    redis_db: int,
    clock: FakeClock,
) -> None:
    """The rule for beats that prove life only: the worker answers, but its child has used no
    CPU and done no I/O for the idle timeout, so the task is stalled, and pages."""
    celery_workers.start("w1")
    result = celery_workers.app().send_task("zq.nap", args=(300, str(tmp_path / "m")))
    child = _child(tmp_path / "m")
    zid = f"celery/zq.nap/{result.id}"
    config = (
        '[thresholds]\nheartbeat_interval = "2s"\nheartbeat_timeout = "5s"\n'
        'progress_timeout = "2m"\nidle_timeout = "1m"\n'
    )
    url = redis_server.url(redis_db, "celery+redis")
    async for watch in _watch(tmp_path / "w", url, clock, config):
        assert (await watch.view(zid)).health is Health.HEALTHY
        clock.advance(61)
        view = await watch.view(zid)
    assert view.task.pid == child
    assert view.health is Health.STALLED, view.verdict.context(clock.now())
    assert view.verdict.reasons[0].code == "process_idle"


async def test_the_watchdog_pages_a_stopped_child_and_leaves_redis_as_it_was(
    celery_workers: Workers, watch: Watch, tmp_path: Path, client: Any
) -> None:
    """The dashboard's monitor is checked above; this is the watchdog's look over the same
    source: it pages the stalled task once, and no key in Redis changes."""
    celery_workers.start("w1")
    task_id = _send(celery_workers, 60, tmp_path / "m")
    child = _child(tmp_path / "m")
    await watch.poll()
    before = _values(client)
    notifier = ListNotifier()
    dog = Watchdog(
        watch.monitor,
        watch.monitor.config,
        executor=None,
        notifiers=[notifier],
        clock=watch.clock,
        log=lambda line: None,
    )
    zid = f"celery/zq.spin/{task_id}"
    os.kill(child, signal.SIGSTOP)
    try:
        wait_for("the child to stop", lambda: _status(child) == "T")
        for _ in range(3):
            await dog.tick()
            watch.clock.advance(1)
    finally:
        os.kill(child, signal.SIGCONT)
    assert _values(client) == before
    paged = [p for p in notifier.pages if p.task_id == zid and p.kind == "incident"]
    assert [p.health for p in paged] == ["stalled"], notifier.pages
