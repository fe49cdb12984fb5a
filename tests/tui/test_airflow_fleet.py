"""Airflow task instances on another host, served by that host's real ``zombietop agent``, and
kills of Airflow tasks that outlive whoever asked for them, over a real Airflow database.

The agent reads the Airflow database itself (``--source``, read-only) and writes what it sees of
its host's task processes into zombietop's store; a dashboard on another host judges those task
instances with it. ``worker-7`` is the agent's host name, as Airflow recorded it; every process
is real and runs on this machine, which the tests call worker-7 for the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.airflow_env import AirflowDatabase
from tests.core.realprocs import FAST_CONFIG, Children, wait_for, zombietop
from zombietop.act.executor import Executor
from zombietop.act.source_actions import SourceActions
from zombietop.actions import ActionKind, ActionRequest, Outcome
from zombietop.agent import Agent
from zombietop.config import Config, SourceSettings, load_config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.locations import task_file_name
from zombietop.procs import PsutilProbe, this_host
from zombietop.sources.airflow import AirflowSource
from zombietop.store.sqlite import SQLiteStore
from zombietop.tui.launch import hand_over_pending_kills

pytestmark = pytest.mark.slow

WORKER = "worker-7"
RUN = "manual__2026-12-01"
HUNG, CRASHED = f"etl/extract/{RUN}", f"etl/transform/{RUN}"


def _orphan(script: str) -> int:
    """A real process that is not ours (its shell exits at once), as an Airflow task is not."""
    shell = subprocess.run(
        ["sh", "-c", f"({script}) >/dev/null 2>&1 & echo $!"], capture_output=True, text=True
    )
    return int(shell.stdout)


@pytest.fixture
def fast_config_path(tmp_path: Path) -> Path:
    """The fast config (a 1 s kill grace), with a progress timeout no slow poll can reach:
    Airflow's progress "moves" only with its heartbeats."""
    path = tmp_path / "config.toml"
    path.write_text(FAST_CONFIG.replace('progress_timeout = "10s"', 'progress_timeout = "30m"'))
    return path


@pytest.fixture
def fast_config(fast_config_path: Path) -> Config:
    return load_config(fast_config_path)


@pytest.fixture
def sleeper() -> Iterator[int]:
    """A hung task's code: alive, no CPU, no I/O."""
    pid = _orphan("exec sleep 600")
    yield pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def stubborn() -> Iterator[int]:
    """A hung task's code that ignores SIGTERM: only the SIGKILL after the grace ends it."""
    pid = _orphan("trap '' TERM; exec sleep 600")
    yield pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _gone_pid() -> int:
    """A pid that exited (and was reaped) a moment ago."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def rows(now: float, pid: int, gone: int, host: str) -> list[dict[str, Any]]:
    """On ``host``: a task whose code hangs while its supervisor beats (apache/airflow#13747),
    and one whose process died while its last heartbeat is still fresh."""
    born = psutil.Process(pid).create_time()
    etl = {"dag_id": "etl", "run_id": RUN, "operator": "PythonOperator"}
    return [
        {**etl, "task_id": "extract", "state": "running", "hostname": host, "pid": pid,
         "start_date": born + 0.5, "last_heartbeat_at": now - 5, "try_number": 1},
        {**etl, "task_id": "transform", "state": "running", "hostname": host, "pid": gone,
         "start_date": now - 600, "last_heartbeat_at": now - 5, "try_number": 1},
    ]  # fmt: skip


def _sha(path: Path | None) -> str:
    assert path is not None
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(params=["airflow3", "airflow2", "airflow3-postgresql"])
def any_airflow(request: pytest.FixtureRequest, tmp_path: Path) -> AirflowDatabase:
    """Airflow 3 and 2 on SQLite, and Airflow 3 on the throwaway PostgreSQL."""
    if request.param == "airflow3-postgresql":
        found: AirflowDatabase = request.getfixturevalue("airflow_postgres")
        return found
    templates = request.getfixturevalue("airflow_templates")
    return templates.fresh(request.param.removeprefix("airflow"), tmp_path)


def _agent(
    children: Children, db: Path, config: Path, airflow: AirflowDatabase
) -> subprocess.Popen[bytes]:
    argv = zombietop(db, config, "agent", "--host", WORKER, "--interval", "0.2")
    return children.start(
        [*argv, "--source", airflow.url], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


async def _cli(db: Path, config: Path, airflow: AirflowDatabase, *args: str) -> Any:
    argv = zombietop(db, config, *args[:1], "--source", airflow.url, *args[1:])
    return await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=60)


async def test_a_remote_airflow_task_is_judged_with_its_hosts_agent(
    real_store: SQLiteStore,
    fast_config: Config,
    fast_config_path: Path,
    db: Path,
    any_airflow: AirflowDatabase,
    children: Children,
    sleeper: int,
) -> None:
    """Without an agent on worker-7, a dashboard here sees its task instances by their
    heartbeats alone (healthy); with worker-7's real agent reading the same Airflow database,
    the crashed one is ``dead`` and the hung one "alive, cpu 0%", in the monitor and in
    ``status --json``; an Airflow SQLite file is unchanged byte for byte."""
    any_airflow.write(rows(time.time(), sleeper, _gone_pid(), WORKER))
    before = _sha(any_airflow.path) if any_airflow.path else None
    source = AirflowSource(any_airflow.url)
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe(), sources=[source])
    try:
        views = (await monitor.poll()).by_id()
        assert views[CRASHED].health is Health.HEALTHY and views[CRASHED].process is None
        assert views[HUNG].agent_note == (
            f"no agent on {WORKER}: none has ever reported, so its process is not seen"
        )
        agent = _agent(children, db, fast_config_path, any_airflow)

        async def sampled() -> bool:
            views = (await monitor.poll()).by_id()
            hung = views[HUNG].process
            # CPU is a rate: the agent's second sample of the process is the first to have one.
            return (
                views[CRASHED].process is not None
                and hung is not None
                and (hung.cpu_percent is not None)
            )

        await wait_for(sampled, timeout=30, what=f"{WORKER}'s agent to sample its Airflow tasks")
        views = monitor.last.by_id()
        crashed, hung = views[CRASHED], views[HUNG]
        assert crashed.remote and crashed.health is Health.DEAD
        assert crashed.verdict.reasons[0].code == "process_gone"
        assert hung.remote and hung.health is Health.HEALTHY and hung.agent_note is None
        assert hung.process is not None and hung.process.pid == sleeper
        assert "alive cpu 0%" in hung.verdict.context(monitor.last.taken_at or 0.0)
        status = await _cli(db, fast_config_path, any_airflow, "status", "--json")
        assert status.returncode == 2, status.stderr  # CRITICAL: one dead
        tasks = {t["task_id"]: t for t in json.loads(status.stdout)["tasks"]}
        assert tasks[CRASHED]["health"] == "dead"
        assert tasks[HUNG]["process"] == {
            "pid": sleeper,
            "alive": True,
            "status": "sleeping",
            "cpu_percent": 0.0,
            "idle_s": tasks[HUNG]["process"]["idle_s"],
            "idle_source": None,  # the store keeps the agent's idle time, not its source
            "rss_bytes": tasks[HUNG]["process"]["rss_bytes"],
            "seen_by": WORKER,
        }
        # The agent's sample says how long the process has idled (schema v16, v14 on PostgreSQL).
        assert isinstance(tasks[HUNG]["process"]["idle_s"], float)
        agent.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(agent.wait, 10) == 0
    finally:
        await source.close()
    if before is not None:
        assert _sha(any_airflow.path) == before


async def test_a_remote_airflow_orphan_is_seen_through_its_hosts_agent(
    real_store: SQLiteStore,
    fast_config: Config,
    fast_config_path: Path,
    db: Path,
    airflow3_sqlite: AirflowDatabase,
    children: Children,
    sleeper: int,
) -> None:
    """Airflow marked the task failed while its process runs on, on worker-7: the agent there
    keeps sampling the finished task's process, and a dashboard here reads it orphaned."""
    now = time.time()
    born = psutil.Process(sleeper).create_time()
    airflow3_sqlite.write(
        [
            {"dag_id": "etl", "run_id": RUN, "operator": "PythonOperator", "task_id": "extract",
             "state": "failed", "hostname": WORKER, "pid": sleeper, "start_date": born + 0.5,
             "end_date": now - 5, "last_heartbeat_at": now - 70, "try_number": 1},
        ]
    )  # fmt: skip
    source = AirflowSource(airflow3_sqlite.url)
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe(), sources=[source])
    try:
        view = (await monitor.poll()).by_id()[HUNG]
        assert view.health is Health.FAILED and view.process is None
        _agent(children, db, fast_config_path, airflow3_sqlite)

        async def orphaned() -> bool:
            return (await monitor.poll()).by_id()[HUNG].health is Health.ORPHANED

        await wait_for(orphaned, timeout=30, what=f"{WORKER}'s agent to sample the orphan")
        view = monitor.last.by_id()[HUNG]
        assert view.remote and view.process is not None and view.process.pid == sleeper
        words = view.verdict.context(time.time())
        assert words.startswith(f"{HUNG} orphaned: pid {sleeper} alive "), words
    finally:
        await source.close()


async def test_a_remote_airflow_task_is_killed_by_its_hosts_agent(
    real_store: SQLiteStore,
    fast_config_path: Path,
    db: Path,
    airflow3_sqlite: AirflowDatabase,
    children: Children,
    stubborn: int,
) -> None:
    """``zombietop kill`` here asks worker-7's agent, which reads the task from Airflow itself,
    checks the process's identity, sends SIGTERM and, the grace (1 s) over, SIGKILL."""
    airflow3_sqlite.write(rows(time.time(), stubborn, _gone_pid(), WORKER))
    before = _sha(airflow3_sqlite.path)
    agent = _agent(children, db, fast_config_path, airflow3_sqlite)

    async def present() -> bool:
        now = await real_store.now()
        return any(a.host == WORKER and a.present(now) for a in await real_store.agents())

    await wait_for(present, timeout=30, what=f"{WORKER}'s agent to report")
    done = await _cli(db, fast_config_path, airflow3_sqlite, "kill", HUNG, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{HUNG}: requested: kill of {HUNG} requested: ")
    assert lines[1] == (
        f"{HUNG}: term_sent: on {WORKER}: SIGTERM sent to pid {stubborn} of {HUNG}; SIGKILL in "
        "1s if it is still alive"
    )
    # Finished by the agent's own executor on worker-7, once the source vouched for the pid.
    assert re.fullmatch(
        rf"{HUNG}: escalated: finished by zombietop@{WORKER}:\d+: kill escalated: pid {stubborn} "
        r"still alive \d+\.\d s after TERM: sent SIGKILL",
        lines[2],
    ), lines
    assert not psutil.pid_exists(stubborn) or psutil.Process(stubborn).status() == "zombie"
    agent.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(agent.wait, 10) == 0
    assert _sha(airflow3_sqlite.path) == before


async def test_a_local_airflow_kill_outlives_the_dashboard(
    real_store: SQLiteStore,
    fast_config: Config,
    db: Path,
    airflow3_sqlite: AirflowDatabase,
    stubborn: int,
) -> None:
    """The dashboard sends SIGTERM to a local Airflow task that ignores it and exits within the
    grace: the background ``zombietop kill`` it leaves reads the same source (handed over in
    ZOMBIETOP_SOURCES, not in its command line) and sends the SIGKILL."""
    airflow3_sqlite.write(rows(time.time(), stubborn, _gone_pid(), this_host()))
    before = _sha(airflow3_sqlite.path)
    source = AirflowSource(airflow3_sqlite.url)
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe(), sources=[source])
    executor = Executor(real_store, fast_config)  # kill_grace 1s
    try:
        view = (await monitor.poll()).by_id()[HUNG]
        request = ActionRequest(
            kind=ActionKind.KILL, task_id=HUNG, expected_token=view.token, actor="oncall"
        )
        sent = await SourceActions(monitor, executor).run(request)
        assert sent.outcome is Outcome.TERM_SENT, sent.message
        kill = await real_store.get_open_kill(HUNG)
        assert kill is not None and kill.pid == stubborn and kill.source == source.name
        # The dashboard shows the kill's countdown on the Airflow task, as on its own tasks.
        shown = (await monitor.poll()).by_id()[HUNG].pending_kill
        assert shown is not None and shown.pending and shown.deadline == kill.deadline
        # The store's executor alone cannot vouch for a source's process: it leaves the kill.
        assert await executor.complete_pending_kills() == []
        settings = [SourceSettings(url=airflow3_sqlite.url)]
        finishers = await hand_over_pending_kills(real_store, executor, db, fast_config, settings)
        assert len(finishers) == 1
        _, status = await asyncio.to_thread(os.waitpid, finishers[0], 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        await source.close()
    assert not psutil.pid_exists(stubborn) or psutil.Process(stubborn).status() == "zombie"
    log = db.parent / "zombietop.db.d" / "logs" / f"kill-{task_file_name(HUNG)}.log"
    assert f"{HUNG}: escalated: pid {stubborn} still alive" in log.read_text()
    assert await real_store.get_open_kill(HUNG) is None
    assert _sha(airflow3_sqlite.path) == before


async def test_a_forged_source_kill_sends_no_sigkill(
    real_store: SQLiteStore,
    fast_config: Config,
    airflow3_sqlite: AirflowDatabase,
    sleeper: int,
    stubborn: int,
) -> None:
    """Whoever can write zombietop's store can write a kill record for an Airflow task naming
    any process: past its deadline it is closed as an identity mismatch, nothing signalled,
    because Airflow (read again just now) names another pid for that task."""
    airflow3_sqlite.write(rows(time.time(), sleeper, _gone_pid(), this_host()))
    source = AirflowSource(airflow3_sqlite.url)
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe(), sources=[source])
    try:
        await real_store.open_kill(
            HUNG,
            pid=stubborn,
            pid_start_time=psutil.Process(stubborn).create_time(),
            pgid=None,
            host=this_host(),
            requested_by="forger",
            grace=0.0,
            source=source.name,
        )
        await monitor.poll()
        [done] = await SourceActions(
            monitor, Executor(real_store, fast_config)
        ).complete_pending_kills()
    finally:
        await source.close()
    assert done.outcome is Outcome.IDENTITY_MISMATCH
    assert done.message == (
        f"{source.name} now records pid {sleeper} on {this_host()} for {HUNG}, not pid "
        f"{stubborn} as the kill record says; not signalled"
    )
    assert psutil.Process(stubborn).status() != "zombie"
    assert psutil.Process(sleeper).status() != "zombie"


async def test_an_agent_acts_only_on_airflow_tasks_it_reads_on_its_host(
    real_store: SQLiteStore,
    fast_config: Config,
    airflow3_sqlite: AirflowDatabase,
    sleeper: int,
) -> None:
    """A kill asked of worker-7's agent for a task Airflow places on worker-9 is refused, not
    passed on (worker-9's agent would act for this agent's user); an agent that does not read
    the task's source refuses it too, saying what to give it."""
    airflow3_sqlite.write(rows(time.time(), sleeper, _gone_pid(), "worker-9"))
    source = AirflowSource(airflow3_sqlite.url)
    try:
        for agent in (
            Agent(real_store, fast_config, host=WORKER, sources=[source]),
            Agent(real_store, fast_config, host=WORKER),
        ):
            await real_store.request_host_action(
                task_id=HUNG,
                host=WORKER,
                kind="kill",
                expected_token=1,
                actor="oncall",
                source=source.name,
            )
            [done] = (await agent.tick()).carried_out
            assert done.outcome is Outcome.REFUSED
            if agent.sources:
                assert done.message == (
                    f"{source.name} says {HUNG} runs on worker-9, not {WORKER}; ask again from "
                    f"a dashboard that reads {source.name}"
                )
            else:
                assert done.message.startswith(
                    f"{HUNG} is not among the unfinished tasks of {source.name} as this "
                    "zombietop reads them"
                )
    finally:
        await source.close()
    assert await real_store.open_host_requests() == []
    assert psutil.Process(sleeper).status() != "zombie"


async def test_an_agent_says_once_when_airflow_names_its_host_otherwise(
    real_store: SQLiteStore,
    fast_config: Config,
    airflow3_sqlite: AirflowDatabase,
    sleeper: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent known as worker-7 (ZOMBIETOP_HOST) serves the task instances Airflow records
    under the system's host name, and says once which --host dashboards would find it by."""
    monkeypatch.setenv("ZOMBIETOP_HOST", WORKER)
    system = socket.gethostname()
    airflow3_sqlite.write(rows(time.time(), sleeper, _gone_pid(), system))
    source = AirflowSource(airflow3_sqlite.url)
    said = io.StringIO()
    try:
        agent = Agent(real_store, fast_config, host=WORKER, sources=[source], err=said)
        first, second = await agent.tick(), await agent.tick()
    finally:
        await source.close()
    assert first.sampled == second.sampled == 2
    assert said.getvalue().splitlines() == [
        f"zombietop agent: {source.name} records this host as {system}, this agent serves "
        f"{WORKER}: dashboards on other hosts find it by {system} only if it runs with "
        f"--host {system} (or ZOMBIETOP_HOST={system})"
    ]
    assert set(await real_store.process_samples()) == {HUNG, CRASHED}
