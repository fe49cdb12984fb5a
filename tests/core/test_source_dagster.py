"""The Dagster source against real Dagster runs on an instance folder of the module's own.

Each test starts real runs with Dagster's own CLI (``dagster job execute``, tests/dagster_env.py),
makes the fault happen with real signals, and polls zombietop's monitor with the real process
probe. The instance's files keep their bytes and times, and no file appears beside them, while
zombietop reads them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.conftest import PostgresForTests
from tests.core.test_watchdog import ListNotifier
from tests.dagster_env import DagsterInstance, DagsterRun
from zombietop.actions import ActionKind
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import SourceError
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import TaskView
from zombietop.judge.verdict import IDLE_REASON
from zombietop.model import HeartbeatSource
from zombietop.procs import PsutilProbe, this_host
from zombietop.sources import open_or_later, open_source
from zombietop.sources.base import Capability, Origin
from zombietop.sources.dagster import DagsterSource, runs_dagster
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


class Watch:
    def __init__(self, monitor: Monitor, clock: FakeClock, source: DagsterSource) -> None:
        self.monitor, self.clock, self.source = monitor, clock, source

    async def views(self) -> list[TaskView]:
        """One poll, now: every task's view."""
        self.clock.set(time.time())
        snapshot = await self.monitor.poll()
        assert snapshot.ok and not snapshot.source_errors, snapshot.source_errors
        return list(snapshot.tasks)

    async def of(self, run: DagsterRun) -> TaskView:
        """One poll, now: the view of the run whose run worker is ``run``."""
        found = [view for view in await self.views() if view.task.pid == run.pid]
        assert len(found) == 1, [(v.task.task_id, v.task.pid) for v in await self.views()]
        return found[0]

    async def until(self, run: DagsterRun, health: Health, bound: float = 90.0) -> TaskView:
        """Poll until the run reads ``health``; fail after ``bound`` seconds."""
        deadline = time.monotonic() + bound
        while True:
            found = [view for view in await self.views() if view.task.pid == run.pid]
            if found and found[0].health is health:
                return found[0]
            if time.monotonic() > deadline:
                said = [view.verdict.context(self.clock.now()) for view in found]
                raise AssertionError(f"waited {bound:g}s for {health}: {said}\n{run.said()}")
            await asyncio.sleep(0.2)


async def _watch(tmp_path: Path, url: str, config_text: str = "") -> AsyncIterator[Watch]:
    clock = FakeClock(time.time())
    source = DagsterSource(url, clock=clock)
    await open_or_later(source)  # as zombietop does: a folder with no run yet is read later
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


@pytest.fixture(scope="module")
def dagster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DagsterInstance]:
    instance = DagsterInstance(tmp_path_factory.mktemp("dagster"))
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture
async def watch(tmp_path: Path, dagster: DagsterInstance) -> AsyncIterator[Watch]:
    async for found in _watch(tmp_path, dagster.url):
        yield found


def _files(home: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the instance, with its bytes and its modification time."""
    return {
        str(path.relative_to(home)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(home.rglob("*"))
        if path.is_file()
    }


async def test_a_killed_run_worker_leaves_its_run_dead_at_the_next_poll_while_dagster_says_started(
    dagster: DagsterInstance, watch: Watch, tmp_path: Path
) -> None:
    """Dagster's zombie: the run worker killed mid-run. Dagster keeps the run STARTED (no
    check of the run worker under the default launcher); zombietop says ``dead`` at the first
    poll after the kill, in Dagster's words, and writes nothing to the instance's files."""
    run = dagster.start("napper", seconds=300)
    assert run.started() == run.pid  # the in-process executor runs the op in the run worker
    view = await watch.of(run)
    assert view.health is Health.HEALTHY, view.verdict.context(watch.clock.now())
    assert view.task.job == "napper" and view.task.step == "nap"
    assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.SUPERVISOR
    assert view.lease is not None and view.lease.expires_at is None
    run_id = view.task.run_id
    os.kill(run.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    run.wait()
    before = _files(dagster.home)
    view = await watch.of(run)
    dead_after = time.monotonic() - killed_at
    assert view.health is Health.DEAD, view.verdict.context(watch.clock.now())
    assert view.verdict.reasons[0].code == "process_gone"
    line = view.verdict.context(watch.clock.now())
    assert "STARTED in Dagster with no process behind it" in line, line
    # A zombietop started later (``status``) reads the same from the files alone.
    async for fresh in _watch(tmp_path, dagster.url):
        assert (await fresh.of(run)).health is Health.DEAD
    after = _files(dagster.home)
    assert after.keys() == before.keys()  # no -wal, no -shm, nothing else beside them
    assert after == before
    assert dead_after < 5.0, dead_after  # one poll: no wait for an end Dagster never records
    assert dagster.statuses()[run_id] == "STARTED"
    print(
        f"dagster times: dead {dead_after:.1f}s after the kill; Dagster says STARTED "
        f"{time.monotonic() - killed_at:.1f}s after it"
    )


async def test_a_run_worker_that_does_nothing_past_idle_timeout_is_stalled(
    dagster: DagsterInstance, tmp_path: Path
) -> None:
    run = dagster.start("napper", seconds=300)
    run.started()
    started = time.monotonic()
    async for watch in _watch(tmp_path, dagster.url, '[thresholds]\nidle_timeout = "2s"\n'):
        view = await watch.until(run, Health.STALLED)
    print(f"dagster times: stalled {time.monotonic() - started:.1f}s after the op began to sleep")
    assert view.verdict.reasons[0].code == IDLE_REASON
    run.stop()


async def test_a_failed_run_fails_with_dagsters_message_and_a_good_one_succeeds(
    dagster: DagsterInstance, watch: Watch
) -> None:
    failed = dagster.start("failer")
    good = dagster.start("napper", seconds=0)
    assert failed.wait() != 0 and good.wait() == 0
    views = {view.task.pid: view for view in await watch.views()}
    assert views[failed.pid].health is Health.FAILED
    reason = views[failed.pid].task.state_reason or ""
    assert reason.startswith('dagster FAILURE: Execution of run for "failer" failed.'), reason
    assert views[good.pid].health is Health.SUCCEEDED
    assert views[good.pid].task.finished_at is not None


async def test_a_run_dagster_finished_whose_run_worker_runs_on_is_orphaned(
    dagster: DagsterInstance, watch: Watch
) -> None:
    run = dagster.start("lingerer", seconds=120)
    run.started()
    began = time.monotonic()
    view = await watch.until(run, Health.ORPHANED)
    print(f"dagster times: orphaned {time.monotonic() - began:.1f}s after the op began")
    assert view.task.state.finished
    run.stop()


async def test_the_watchdog_pages_the_dead_run_once_in_dagsters_words(
    dagster: DagsterInstance, watch: Watch
) -> None:
    run = dagster.start("napper", seconds=300)
    run.started()
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
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
        watch.clock.set(time.time())
        await dog.tick()
    paged = [p for p in notifier.pages if p.kind == "incident" and p.health == "dead"]
    mine = [p for p in paged if f"pid {run.pid} " in p.shown]
    assert len(mine) == 1, [p.shown for p in paged]
    assert "STARTED in Dagster with no process behind it" in mine[0].shown
    assert mine[0].shown.endswith(
        " - re-execute it from failure in Dagster, mark it canceled, or kill its run worker"
    )


async def test_the_kill_check_passes_a_run_worker_and_refuses_any_other_process(
    dagster: DagsterInstance, watch: Watch
) -> None:
    run = dagster.start("napper", seconds=300)
    run.started()
    assert watch.source.kill_check(run.pid) is None
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        said = watch.source.kill_check(sleeper.pid)
        assert said is not None and "not a Dagster run worker" in said
    finally:
        sleeper.kill()
        sleeper.wait()
    run.stop()


@pytest.mark.parametrize(
    ("argv", "runs"),
    [
        (["/venv/bin/python3", "/venv/bin/dagster", "job", "execute", "-f", "j.py"], True),
        (["/venv/bin/dagster", "api", "execute_run", "{}"], True),
        (["python", "-m", "dagster", "api", "execute_run"], True),
        (["python", "-c", "import dagster"], False),
        (["sleep", "60"], False),
        ([], False),
    ],
)
def test_which_command_lines_run_dagster(argv: list[str], runs: bool) -> None:
    assert runs_dagster(argv) is runs


def test_resume_and_discard_name_dagsters_own_commands() -> None:
    source = open_source("dagster+sqlite:////srv/dagster")
    assert isinstance(source, DagsterSource) and source.home == "/srv/dagster"
    origin = Origin(
        source=source.name,
        kind="dagster",
        capability=Capability.READ_ONLY,
        ids={"run_id": "abc-1", "job": "etl", "status": "STARTED"},
    )
    resume = source.refusal(ActionKind.RESUME, origin)
    assert resume is not None and resume.startswith("etl/abc-1 is Dagster's")
    assert "Mark it canceled first" in resume
    assert "ReexecutionOptions.from_failure('abc-1', instance)" in resume
    discard = source.refusal(ActionKind.DISCARD, origin)
    assert discard is not None and "terminatePolicy: MARK_AS_CANCELED_IMMEDIATELY" in discard
    assert "dagster run delete abc-1" in discard
    assert source.refusal(ActionKind.KILL, origin) is None


@pytest.mark.parametrize("url", ["dagster+sqlite://", "dagster+sqlite:///", "dagster://x"])
def test_a_wrong_url_says_how_to_write_one(url: str) -> None:
    with pytest.raises(SourceError, match=r"dagster\+sqlite:///PATH|unknown kind"):
        open_source(url)


def test_a_postgresql_url_keeps_its_run_workers_host_out_of_the_connection() -> None:
    source = open_source("dagster+postgresql://u:secret@h/db?sslmode=require&run_workers_on=vm1")
    assert isinstance(source, DagsterSource) and source.workers_on == "vm1"
    assert source.dsn == "postgresql://u:secret@h/db?sslmode=require"
    assert "secret" not in source.name and "secret" not in source.home


async def test_a_folder_without_dagsters_storage_says_what_to_give(tmp_path: Path) -> None:
    source = open_source(f"dagster+sqlite:///{tmp_path}")
    with pytest.raises(SourceError, match=r"no Dagster run storage at .*history/runs\.db"):
        await source.open()


async def _digest(url: str) -> tuple[str, str]:
    """The rows of Dagster's runs and event_logs tables, as one digest each."""
    conn = await asyncpg.connect(url)
    try:
        return (
            await conn.fetchval("SELECT md5(string_agg(r::text, ',' ORDER BY r.id)) FROM runs r"),
            await conn.fetchval(
                "SELECT md5(string_agg(e::text, ',' ORDER BY e.id)) FROM event_logs e"
            ),
        )
    finally:
        await conn.close()


async def test_on_postgresql_a_killed_run_worker_is_dead_and_nothing_is_written(
    postgres: PostgresForTests, tmp_path: Path
) -> None:
    """Dagster on its PostgreSQL storage (dagster-postgres): the same zombie, judged the same
    way when the URL says the run workers run on this host; zombietop's connection is
    read-only, and the tables' rows do not change. Without ``run_workers_on`` the pid is shown
    on no host, and the run is judged by its last event."""
    url = postgres.create_database(empty=True)
    dagster = DagsterInstance(tmp_path / "pg", postgres_url=url)
    try:
        run = dagster.start("napper", seconds=300)
        run.started()
        here = f"{dagster.url}&run_workers_on={this_host()}"
        async for watch in _watch(tmp_path, here):
            assert (await watch.of(run)).health is Health.HEALTHY
            os.kill(run.pid, signal.SIGKILL)
            run.wait()
            before = await _digest(url)
            view = await watch.of(run)
            assert view.health is Health.DEAD, view.verdict.context(watch.clock.now())
            assert "STARTED in Dagster with no process behind it" in (view.task.state_reason or "")
            pg = watch.source._pg
            assert await pg.fetchval("SHOW default_transaction_read_only") == "on"
        async for elsewhere in _watch(tmp_path, dagster.url):
            found = [v for v in await elsewhere.views() if v.task.pid == run.pid]
            assert len(found) == 1 and found[0].task.host is None
            assert found[0].heartbeat is not None and found[0].health is Health.HEALTHY
        assert await _digest(url) == before
        assert dagster.statuses()[view.task.run_id] == "STARTED"
    finally:
        dagster.stop()


async def test_zombietop_kill_signals_the_runs_run_worker(
    dagster: DagsterInstance, watch: Watch, tmp_path: Path
) -> None:
    """``zombietop kill`` of a running run: the run worker the run's start named, checked to
    be that process and to run Dagster, gets SIGTERM; Dagster itself then ends the run, as a
    failure (its interrupt handler raises in the op)."""
    run = dagster.start("napper", seconds=300)
    run.started()
    task_id = (await watch.of(run)).task.task_id
    config = tmp_path / "config.toml"
    config.write_text("")
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(tmp_path / "zt.db")]
    base += ["--config", str(config)]
    subprocess.run([*base, "init"], check=True, capture_output=True, timeout=60)
    done = subprocess.run(
        [*base, "kill", task_id, "--yes", "--source", dagster.url],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SIGTERM sent to process group {run.pid}" in done.stdout, done.stdout
    run.wait(timeout=60)
    view = await watch.until(run, Health.FAILED, bound=60)
    assert (view.task.state_reason or "").startswith("dagster FAILURE: "), view.task.state_reason


async def test_hostile_names_in_dagsters_files_are_bounded_and_escaped(
    dagster: DagsterInstance, tmp_path: Path
) -> None:
    """Whoever can write the instance's files writes its names: a copy of a real instance,
    its job renamed to 20,000 characters with terminal escapes, reads as a bounded id, and
    ``zombietop status`` shows it escaped."""
    run = dagster.start("failer")
    run.wait()
    copy = tmp_path / "copy"
    shutil.copytree(dagster.home, copy)
    hostile = "\x1b]52;c;owned\x07\x1b[2J" + "x" * 20_000
    with sqlite3.connect(copy / "history" / "runs.db") as conn:
        conn.execute("UPDATE runs SET pipeline_name = ?", (hostile,))
    url = f"dagster+sqlite:///{copy}"
    async for watch in _watch(tmp_path, url):
        found = [v for v in await watch.views() if v.task.pid == run.pid]
        assert len(found) == 1 and len(found[0].task.task_id) < 600
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(tmp_path / "zt.db")]
    subprocess.run([*base, "init"], check=True, capture_output=True, timeout=60)
    done = subprocess.run(
        [*base, "status", "--source", url], capture_output=True, text=True, timeout=90
    )
    assert "failed" in done.stdout and "xxxx" in done.stdout, done.stdout + done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
