"""The Prefect source against a real Prefect 3 server (SQLite) and a real process worker.

One server per module (tests/prefect_env.py: it takes seconds to start). The flow runs are real:
a deployment in a process work pool, run by ``prefect worker start``, killed with real signals,
and judged by zombietop's monitor with the real process probe. zombietop reads the server
through a loopback proxy that records every request and fails the test on any request that is
not one of Prefect's reads.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, web

from tests.core.test_watchdog import ListNotifier
from tests.prefect_env import PrefectServer, need_venv
from tests.queues_env import wait_for
from zombietop.actions import ActionKind
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import SourceError
from zombietop.health import Health
from zombietop.judge.classify import record_grace
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import TaskView
from zombietop.model import HeartbeatSource
from zombietop.procs import PsutilProbe
from zombietop.sources import open_source
from zombietop.sources.base import Capability, Origin
from zombietop.sources.prefect import PrefectSource, infrastructure_pid
from zombietop.sources.prefect_api import is_read
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

READS = {("POST", "/api/flow_runs/filter"), ("POST", "/api/events/filter")}
"""The only POSTs that read in Prefect's API; every other read is a GET."""


class RecordingProxy:
    """A loopback proxy in front of Prefect's server that records every request zombietop
    sends, and answers any request that is not a read with 405 without passing it on."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.seen: list[tuple[str, str]] = []
        self.refused: list[tuple[str, str]] = []
        self._runner: web.AppRunner | None = None
        self._client: ClientSession | None = None
        self.url = ""

    def _read(self, method: str, path: str) -> bool:
        return method == "GET" or (method, path) in READS

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        method, path = request.method, request.path
        self.seen.append((method, path))
        if not self._read(method, path):
            self.refused.append((method, path))
            return web.Response(status=405, text="zombietop must not write to Prefect")
        assert self._client is not None
        tail = request.path_qs.removeprefix("/api")
        async with self._client.request(
            method,
            self.target + tail,
            data=await request.read(),
            headers={"content-type": "application/json"},
        ) as answer:
            return web.Response(
                status=answer.status, body=await answer.read(), content_type="application/json"
            )

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"prefect+http://127.0.0.1:{port}/api"
        self._client = ClientSession()

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.close()
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture(scope="module")
def prefect() -> Iterator[PrefectServer]:
    server = PrefectServer(need_venv())
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def deployment(prefect: PrefectServer) -> str:
    """The deployment ``nap/naps`` in the process pool ``naps``."""
    return prefect.deploy("naps")


class Watch:
    def __init__(self, monitor: Monitor, clock: FakeClock, source: PrefectSource) -> None:
        self.monitor, self.clock, self.source = monitor, clock, source

    async def once(self, task_id: str) -> TaskView:
        self.clock.set(time.time())
        snapshot = await self.monitor.poll()
        assert snapshot.ok and not snapshot.source_errors, snapshot.source_errors
        found = snapshot.by_id()
        assert task_id in found, sorted(found)
        return found[task_id]

    async def until(self, task_id: str, health: Health, bound: float = 60.0) -> TaskView:
        deadline = time.monotonic() + bound
        while True:
            view = await self.once(task_id)
            if view.health is health:
                return view
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"waited {bound:g}s for {health}: {view.verdict.context(self.clock.now())}"
                )
            await asyncio.sleep(0.3)


@pytest.fixture
async def proxy(prefect: PrefectServer) -> AsyncIterator[RecordingProxy]:
    found = RecordingProxy(prefect.api)
    await found.start()
    try:
        yield found
    finally:
        await found.stop()
        assert found.refused == [], f"zombietop sent requests that are not reads: {found.refused}"


async def _watch(
    tmp_path: Path,
    url: str,
    clock: FakeClock,
    heartbeat_timeout: float | None = None,
    config_text: str = "",
) -> AsyncIterator[Watch]:
    source = PrefectSource(url, clock=clock, heartbeat_timeout=heartbeat_timeout)
    await source.open()
    config = tmp_path / f"config-{id(source)}.toml"
    config.write_text(config_text)
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
async def watch(tmp_path: Path, proxy: RecordingProxy) -> AsyncIterator[Watch]:
    async for found in _watch(tmp_path, proxy.url, FakeClock(time.time())):
        yield found


def _pid(marker: Path) -> int:
    text = wait_for(
        f"the flow to start ({marker})", lambda: marker.exists() and marker.read_text(), timeout=90
    )
    return int(text.split()[0])


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_flow_run_killed_with_its_worker_is_dead_at_the_next_poll_while_prefect_says_running(
    prefect: PrefectServer, deployment: str, watch: Watch, proxy: RecordingProxy, tmp_path: Path
) -> None:
    """Prefect's zombie: the worker and the flow run's process are killed with SIGKILL (a lost
    machine, an out-of-memory kill of both). Prefect keeps the run RUNNING; zombietop, which
    knew its process, says ``dead`` at its next poll, in Prefect's words."""
    worker = prefect.worker("naps")
    try:
        run_id = prefect.run(deployment, seconds=600, marker=str(tmp_path / "m"))
        pid = _pid(tmp_path / "m")
        zid = f"nap/{run_id}"
        wait_for(
            "Prefect to record the pid", lambda: prefect.flow_run(run_id)["infrastructure_pid"]
        )
        view = await watch.until(zid, Health.HEALTHY)
        # Prefect stores the first heartbeat event a moment after the run starts.
        deadline = time.monotonic() + 30
        while view.heartbeat is None and time.monotonic() < deadline:
            await asyncio.sleep(0.3)
            view = await watch.once(zid)
        assert view.task.pid == pid and view.task.job == "nap/naps"
        assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.SUPERVISOR
        assert watch.source.kill_check(pid) is None
        beat = view.heartbeat.written_at
        # Past the grace zombietop gives a worker to record an end after the last beat, so
        # the first poll after the kill can only say dead.
        grace = record_grace(view.limits)
        wait_for(
            "the record grace to pass",
            lambda: time.time() > beat + grace + 0.5,
            timeout=60,
        )
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        wait_for("the flow run's process to go", lambda: not Path(f"/proc/{pid}").exists())
        view = await watch.once(zid)
        dead_after = time.monotonic() - killed_at
        assert view.health is Health.DEAD, view.verdict.context(watch.clock.now())
        assert view.verdict.reasons[0].code == "process_gone"
        line = view.verdict.context(watch.clock.now())
        assert "RUNNING in Prefect with no process behind it" in line, line
        assert prefect.flow_run(run_id)["state_type"] == "RUNNING"
        notifier = ListNotifier()
        dog = Watchdog(
            watch.monitor,
            watch.monitor.config,
            executor=None,
            notifiers=[notifier],
            clock=watch.clock,
            log=lambda line: None,
        )
        for _ in range(3):
            await dog.tick()
            watch.clock.advance(1)
        paged = [p for p in notifier.pages if p.kind == "incident"]
        assert [(p.task_id, p.health) for p in paged] == [(zid, "dead")]
        assert "RUNNING in Prefect with no process behind it" in paged[0].shown
        assert paged[0].shown.endswith(
            " - cancel or retry it with `prefect flow-run`, or kill its process"
        )
        # A zombietop that starts after the kill cannot tell where the run ran (Prefect
        # records a pid, no host): only the heartbeat, older than its timeout, says stalled.
        async for later in _watch(tmp_path, proxy.url, FakeClock(time.time()), heartbeat_timeout=5):
            wait_for("the heartbeat to pass 5 s", lambda: time.time() > beat + 5.5)
            seen = await later.once(zid)
        assert seen.health is Health.STALLED and seen.task.pid is None, seen.verdict.context(
            later.clock.now()
        )
        # Prefect still says RUNNING a while later: nothing in Prefect moves it.
        still = wait_for(
            "a few seconds", lambda: time.monotonic() - killed_at > 5 and prefect.flow_run(run_id)
        )
        assert still["state_type"] == "RUNNING"
        posts = {path for method, path in proxy.seen if method == "POST"}
        assert posts <= {path for _, path in READS} and proxy.seen
        print(
            f"\nprefect times: dead {dead_after:.1f}s after the kill; Prefect: RUNNING after {time.monotonic() - killed_at:.1f}s"
        )
    finally:
        _stop(worker)


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_flow_run_prefect_calls_completed_while_its_process_runs_on_is_orphaned(
    prefect: PrefectServer, deployment: str, watch: Watch, tmp_path: Path
) -> None:
    """Prefect says the run ended (here someone forced its state) while its process runs on:
    zombietop says ``orphaned``, and the kill check still knows the process."""
    worker = prefect.worker("naps")
    pid = 0
    try:
        run_id = prefect.run(deployment, seconds=600, marker=str(tmp_path / "m"))
        pid = _pid(tmp_path / "m")
        zid = f"nap/{run_id}"
        wait_for(
            "Prefect to record the pid", lambda: prefect.flow_run(run_id)["infrastructure_pid"]
        )
        assert (await watch.until(zid, Health.HEALTHY)).task.pid == pid
        prefect.set_state(run_id, "COMPLETED")
        view = await watch.until(zid, Health.ORPHANED)
        line = view.verdict.context(watch.clock.now())
        assert f"pid {pid} alive" in line and "after Prefect marked it succeeded" in line, line
        assert watch.source.kill_check(pid) is None
    finally:
        _stop(worker)
        if pid:
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_flow_run_that_hangs_while_prefect_beats_for_it_is_stalled_when_idle(
    prefect: PrefectServer, deployment: str, proxy: RecordingProxy, tmp_path: Path
) -> None:
    """The flow's code waits on a call that never returns: Prefect's heartbeat thread goes on
    beating, and the process does nothing. zombietop reads the process's CPU and I/O: stalled
    once it has been idle for ``idle_timeout`` (5 s here, 20 min by default)."""
    worker = prefect.worker("naps")
    pid = 0
    try:
        run_id = prefect.run(deployment, seconds=600, marker=str(tmp_path / "m"), hang=True)
        pid = _pid(tmp_path / "m")
        wait_for(
            "Prefect to record the pid", lambda: prefect.flow_run(run_id)["infrastructure_pid"]
        )
        clock = FakeClock(time.time())
        idle = '[thresholds]\nidle_timeout = "5s"\n'
        async for watch in _watch(tmp_path, proxy.url, clock, config_text=idle):
            view = await watch.until(f"nap/{run_id}", Health.STALLED)
        line = view.verdict.context(clock.now())
        assert view.task.pid == pid and "idle" in line and "no CPU, no I/O" in line, line
    finally:
        _stop(worker)
        if pid:
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_zombietop_kill_signals_the_flow_runs_process(
    prefect: PrefectServer, deployment: str, tmp_path: Path
) -> None:
    """``zombietop kill`` of a running flow run: the source finds its process by the flow
    run id in its environment, and zombietop sends SIGTERM to its process group."""
    worker = prefect.worker("naps")
    try:
        run_id = prefect.run(deployment, seconds=600, marker=str(tmp_path / "m"))
        pid = _pid(tmp_path / "m")
        wait_for(
            "Prefect to record the pid", lambda: prefect.flow_run(run_id)["infrastructure_pid"]
        )
        config = tmp_path / "config.toml"
        config.write_text("")
        base = [sys.executable, "-m", "zombietop.tui", "--db", str(tmp_path / "zt.db")]
        base += ["--config", str(config)]
        subprocess.run([*base, "init"], check=True, capture_output=True, timeout=60)
        done = subprocess.run(
            [*base, "kill", f"nap/{run_id}", "--yes", "--source", "prefect+" + prefect.api],
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"SIGTERM sent to process group {pid}" in done.stdout, done.stdout
        wait_for(f"pid {pid} to exit", lambda: not Path(f"/proc/{pid}").exists())
    finally:
        _stop(worker)


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_failed_completed_and_waiting_flow_runs(
    prefect: PrefectServer, deployment: str, watch: Watch, tmp_path: Path
) -> None:
    waiting = prefect.run(deployment, seconds=0, marker=str(tmp_path / "w"))
    view = await watch.once(f"nap/{waiting}")
    assert view.health is Health.QUEUED and view.task.waits_in_queue
    worker = prefect.worker("naps")
    try:
        failed = prefect.run(deployment, seconds=0, marker=str(tmp_path / "f"), fail=True)
        wait_for(
            "the runs to end",
            lambda: (
                prefect.flow_run(failed)["state_type"] == "FAILED"
                and prefect.flow_run(waiting)["state_type"] == "COMPLETED"
            ),
            timeout=120,
        )
        # Prefect records the end before the flow run's process exits: until it does, the
        # run is orphaned (Prefect says it ended, its process runs on).
        for marker in ("w", "f"):
            pid = _pid(tmp_path / marker)
            wait_for(f"pid {pid} to exit", lambda: not Path(f"/proc/{pid}").exists())  # noqa: B023
    finally:
        _stop(worker)
    views = {key: await watch.once(f"nap/{key}") for key in (failed, waiting)}
    assert views[waiting].health is Health.SUCCEEDED
    assert views[failed].health is Health.FAILED
    reason = views[failed].task.state_reason or ""
    assert reason.startswith("prefect Failed") and "boom in nap" in reason, reason


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_the_kill_check_refuses_a_process_that_is_not_the_flow_runs(
    watch: Watch, tmp_path: Path
) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        said = watch.source.kill_check(sleeper.pid)
        assert said is not None and "no flow run's process" in said
        watch.source._pids[sleeper.pid] = "0d9b1c9e-0000-4000-8000-000000000000"
        said = watch.source.kill_check(sleeper.pid)
        assert said is not None and "PREFECT__FLOW_RUN_ID=0d9b1c9e" in said
    finally:
        sleeper.kill()
        sleeper.wait()


STATES = [
    # Prefect's state type and name, and zombietop's health and reason for it.
    ("SCHEDULED", "Late", Health.QUEUED, "prefect Late"),
    ("PENDING", "Pending", Health.STARTING, "prefect Pending"),
    (
        "PAUSED",
        "Suspended",
        Health.QUEUED,
        "prefect Suspended: waits to be resumed, not for a worker",
    ),
    ("CANCELLING", "Cancelling", Health.HEALTHY, "prefect Cancelling"),
    ("COMPLETED", "Completed", Health.SUCCEEDED, None),
    ("FAILED", "Failed", Health.FAILED, "prefect Failed: out of memory"),
    ("CRASHED", "Crashed", Health.FAILED, "prefect Crashed: out of memory"),
    ("CANCELLED", "Cancelled", Health.DISCARDED, "prefect Cancelled"),
]


@pytest.mark.slow
async def test_each_state_of_prefect_reads_as_its_health(
    prefect: PrefectServer, watch: Watch
) -> None:
    """Flow runs made in each of Prefect's states through its API (as its workers and its
    engine put them there), and one poll."""
    flow = prefect.post("/flows/", {"name": "states"})
    made = {}
    for kind, name, _, _ in STATES:
        state: dict[str, Any] = {"type": kind, "name": name, "message": "out of memory"}
        if kind == "SCHEDULED":
            due = datetime.fromtimestamp(time.time() - 60, tz=UTC).isoformat()
            state["state_details"] = {"scheduled_time": due}
        run = prefect.post("/flow_runs/", {"flow_id": flow["id"], "name": name, "state": state})
        made[kind] = run["id"]
    views = (await watch.monitor.poll()).by_id()
    for kind, _, health, reason in STATES:
        assert f"states/{made[kind]}" in views, kind
        view = views[f"states/{made[kind]}"]
        assert (kind, view.health, view.task.state_reason) == (kind, health, reason)
    assert views[f"states/{made['SCHEDULED']}"].task.waits_in_queue
    assert not views[f"states/{made['PAUSED']}"].task.waits_in_queue


@pytest.mark.slow
async def test_hostile_names_and_messages_are_bounded_and_printable(
    prefect: PrefectServer, watch: Watch
) -> None:
    """Whoever can write to Prefect names its flows and writes its state messages: a flow name
    of 20,000 characters becomes an id of a few hundred, and a message with terminal escapes
    reaches the reason without them."""
    flow = prefect.post("/flows/", {"name": "f" * 20_000})
    message = "\x1b]0;pwned\x07\x1b[31mdisk full\x1b[0m" + "!" * 5000
    run = prefect.post(
        "/flow_runs/",
        {"flow_id": flow["id"], "name": "hostile", "state": {"type": "FAILED", "message": message}},
    )
    snapshot = await watch.monitor.poll()
    found = [view for view in snapshot.by_id().values() if view.task.run_id == "hostile"]
    assert len(found) == 1
    task = found[0].task
    assert len(task.task_id) < 400 and task.task_id.endswith(run["id"])
    reason = task.state_reason or ""
    assert "\x1b" not in reason and "\x07" not in reason and "disk full" in reason, reason
    assert len(reason) <= 250, len(reason)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("4121", (None, 4121)),
        ("worker-1:4121", ("worker-1", 4121)),
        ("0", (None, None)),
        ("arn:aws:ecs:task/abc", (None, None)),
        (None, (None, None)),
        (4121, (None, None)),
    ],
)
def test_infrastructure_pid_reads_a_pid_or_a_host_and_pid(
    value: Any, expected: tuple[str | None, int | None]
) -> None:
    assert infrastructure_pid(value) == expected


def test_the_source_sends_only_reads() -> None:
    assert is_read("POST", "/flow_runs/filter") and is_read("GET", "/flows/abc")
    assert not is_read("POST", "/flow_runs/") and not is_read("PATCH", "/flow_runs/abc")
    assert not is_read("POST", "/flow_runs/abc/set_state") and not is_read("GET", "/flows/a/b")


def test_resume_and_discard_name_prefects_own_commands() -> None:
    source = open_source("prefect+http://127.0.0.1:4200/api")
    assert isinstance(source, PrefectSource)
    origin = Origin(
        source=source.name,
        kind="prefect",
        capability=Capability.READ_ONLY,
        ids={"flow": "nap", "flow_run_id": "7b1e", "state": "RUNNING"},
    )
    resume = source.refusal(ActionKind.RESUME, origin)
    assert (
        resume is not None
        and "prefect flow-run cancel 7b1e && prefect flow-run retry 7b1e" in resume
    )
    assert "nap/7b1e is Prefect's" in resume
    discard = source.refusal(ActionKind.DISCARD, origin)
    assert discard is not None and discard.endswith("prefect flow-run cancel 7b1e")
    assert source.refusal(ActionKind.KILL, origin) is None


@pytest.mark.parametrize(
    "url",
    [
        "prefect+http://host:port/api",
        "prefect+http://host:4200",
        "prefect+ftp://h:1/api",
        "prefect+http:///api",
    ],
)
def test_a_wrong_url_says_how_to_write_one(url: str) -> None:
    with pytest.raises(SourceError, match=r"prefect\+http|port"):
        open_source(url)


async def test_a_server_that_does_not_answer_is_a_clear_error() -> None:
    source = PrefectSource("prefect+http://127.0.0.1:9/api")
    with pytest.raises(SourceError, match="cannot reach Prefect's API"):
        await source.poll(None, "here")
    await source.close()


async def test_without_aiohttp_the_source_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The HTTP client comes with zombietop[all]: without it, the source's error names it and
    the command that installs it, and the rest of zombietop reads on."""
    monkeypatch.setitem(sys.modules, "aiohttp", None)
    source = open_source("prefect+http://127.0.0.1:4200/api")
    with pytest.raises(SourceError) as raised:
        await source.open()
    said = str(raised.value)
    assert said.startswith(
        "source prefect+http://127.0.0.1:4200/api: a Prefect source needs aiohttp, which is not "
        "installed: "
    ), said
    assert "[all]" in said, said


def test_a_password_in_the_url_becomes_basic_auth_and_is_never_shown() -> None:
    source = open_source("prefect+https://admin:s3cret@prefect.example:4200/api")
    assert isinstance(source, PrefectSource)
    assert "s3cret" not in source.name and "s3cret" not in repr(source)
    assert source.api.base == "https://prefect.example:4200/api"
