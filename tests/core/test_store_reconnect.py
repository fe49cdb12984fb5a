"""A PostgreSQL restart (``pg_ctl restart``, a minor upgrade, a failover) under everything that
holds a connection: each reconnects, and nothing is judged by the beats the outage held back.

These tests restart a throwaway server of their own, so that the session's shared server
(``tests/conftest.py``) never goes away under another test.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.core.realprocs import FAST_CONFIG, Children, Said, wait_for, zombietop
from tests.pg_server import ThrowawayServer, find_binaries
from zombietop.errors import StoreError
from zombietop.model import EventKind, TaskState
from zombietop.store.postgres import IDEMPOTENT, ConnectionLost, PostgresStore

pytestmark = pytest.mark.timeout(240)

# A gap longer than heartbeat_timeout is what the watchdog must not judge by; the lease
# outlives it, so nothing but the gap could make a task look stuck.
CONFIG = (
    FAST_CONFIG.replace('heartbeat_interval = "100ms"', 'heartbeat_interval = "200ms"')
    .replace('heartbeat_timeout = "600ms"', 'heartbeat_timeout = "1500ms"')
    .replace('lease_ttl = "3s"', 'lease_ttl = "20s"')
    .replace('progress_timeout = "10s"', 'progress_timeout = "1m"')
    .replace('start_grace = "2s"', 'start_grace = "30s"')
)
OUTAGE_S = 4.0
"""How long the server stays down: well past heartbeat_timeout."""

BEATING_JOB = (
    'while [ ! -e {stop} ]; do echo "stage=work p=$i" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
    "i=$((i+1)); sleep 0.2; done"
)


@pytest.fixture(scope="module")
def server() -> Iterator[ThrowawayServer]:
    bindir = find_binaries()
    if bindir is None:
        pytest.skip("no PostgreSQL binaries: the restart needs a server of this test's own")
    started = ThrowawayServer(bindir)
    started.start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def store_url(server: ThrowawayServer) -> str:
    async def create() -> str:
        url = await server.new_database()
        store = await PostgresStore.open(url, create=True)
        await store.close()
        return url

    return asyncio.run(create())


def test_every_idempotent_call_is_one_the_store_has() -> None:
    for name in IDEMPOTENT:
        assert callable(getattr(PostgresStore, name)), name


async def test_a_store_reconnects_after_a_restart(server: ThrowawayServer, store_url: str) -> None:
    """The call in flight when the server went away is made again on a new connection; while
    the server is down, calls fail at once with the time of the next attempt."""
    store = await PostgresStore.open(store_url)
    try:
        await store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="t")
        await asyncio.to_thread(server.restart)
        assert (await store.get_task("t1")).task_id == "t1"  # a read, made once more
        await store.acquire_lease("t1", owner="o", ttl=60)  # and a write after it

        assert server.proc is not None
        server.proc.send_signal(signal.SIGINT)  # a fast shutdown: every session ends
        await asyncio.to_thread(server.proc.wait, 30)
        with pytest.raises(StoreError):
            await store.get_task("t1")
        with pytest.raises(ConnectionLost, match="trying to connect again in"):
            await store.get_task("t1")
        await asyncio.to_thread(server.start_again)
        await wait_for(lambda: _reads(store), what="a read after the server came back")
    finally:
        await store.close()
    with pytest.raises(StoreError, match="is closed"):
        await store.get_task("t1")


async def test_a_transaction_left_open_by_a_cancelled_call_is_not_built_on(
    store_url: str,
) -> None:
    """A call cancelled between BEGIN and COMMIT (a wrapper's helper, as its command exits)
    must not turn the next write into a savepoint of a transaction that never commits."""
    store = await PostgresStore.open(store_url)
    other = await PostgresStore.open(store_url)
    try:
        assert store._conn is not None
        await store._conn.execute("BEGIN")  # what the cancelled call left behind
        await store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="t")
        assert (await other.get_task("t1")).task_id == "t1"
    finally:
        await store.close()
        await other.close()


async def _reads(store: PostgresStore) -> bool:
    try:
        await store.get_task("t1")
    except StoreError:
        return False
    return True


async def test_a_restart_under_a_watchdog_an_agent_and_three_jobs(
    server: ThrowawayServer, store_url: str, tmp_path: Path, children: Children
) -> None:
    """The server goes away for longer than heartbeat_timeout and comes back: the jobs keep
    running, the watchdog pages nothing about them, and every exit is recorded."""
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    stop = tmp_path / "stop"
    logs = {name: tmp_path / f"{name}.log" for name in ("watch", "agent", "j1", "j2", "j3")}

    def start(name: str, *args: str) -> subprocess.Popen[bytes]:
        with logs[name].open("wb") as out:
            return children.start(
                zombietop(store_url, config, *args), stdout=out, stderr=subprocess.STDOUT
            )

    watch = start("watch", "watch", "--interval", "0.3")
    agent = start("agent", "agent", "--interval", "0.3")
    jobs = [
        start(name, "run", "--job", name, "--", "sh", "-c", BEATING_JOB.format(stop=stop))
        for name in ("j1", "j2", "j3")
    ]
    store = await PostgresStore.open(store_url)
    try:

        async def all_beat() -> bool:
            records = await store.poll(None)
            return len(records) == 3 and all(r.heartbeat is not None for r in records)

        await wait_for(all_beat, timeout=60, what="three jobs beating")

        assert server.proc is not None
        server.proc.send_signal(signal.SIGINT)  #: a fast shutdown, as pg_ctl restart does
        await asyncio.to_thread(server.proc.wait, 30)
        time.sleep(OUTAGE_S)
        await asyncio.to_thread(server.start_again)

        async def beating_again() -> bool:
            try:
                records = await store.poll(None)
            except StoreError:
                return False
            now = await store.now()
            return all(
                r.heartbeat is not None and now - r.heartbeat.written_at < 1.0 for r in records
            )

        await wait_for(beating_again, timeout=60, what="every job beating again")
        await wait_for(
            lambda: "reads" in logs["watch"].read_text(), timeout=60, what="the watchdog back"
        )
        await wait_for(
            lambda: "verdicts acted on again" in logs["watch"].read_text(),
            timeout=60,
            what="the watchdog acting on its verdicts again",
        )
        stop.touch()
        for job in jobs:
            assert await asyncio.to_thread(job.wait, 60) == 0, _said(logs)
        states = {r.task.task_id: r.task.state for r in await store.poll(None)}
        assert sorted(states.values()) == [TaskState.SUCCEEDED] * 3, (states, _said(logs))
        time.sleep(1.0)  # a few more looks of the watchdog
        assert watch.poll() is None and agent.poll() is None, _said(logs)
        said = logs["watch"].read_text()
        paged = [line for line in said.splitlines() if "PAGE" in line and " j" in line]
        assert paged == [], said
        assert "so no job could write its beats" in said, said
        assert await store.events(kind=EventKind.QUARANTINED) == [], said
    finally:
        await store.close()


def _said(logs: dict[str, Path]) -> str:
    return "\n".join(f"--- {name}\n{path.read_text()[-3000:]}" for name, path in logs.items())


async def test_a_job_started_while_the_server_is_down_runs_and_is_recorded_once_it_is_up(
    server: ThrowawayServer, store_url: str, tmp_path: Path, children: Children
) -> None:
    """A broken monitor never stops a job: the nightly run goes ahead with PostgreSQL down,
    and its run is in the store once the server is back."""
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    assert server.proc is not None
    server.proc.send_signal(signal.SIGINT)
    await asyncio.to_thread(server.proc.wait, 30)
    try:
        job = children.start(
            zombietop(
                store_url,
                config,
                "run",
                "--job",
                "nightly",
                "--",
                "sh",
                "-c",
                "touch started; while [ ! -e stop ]; do sleep 0.05; done",
            ),
            cwd=tmp_path,
            stderr=subprocess.PIPE,
        )
        assert job.stderr is not None
        said = Said(job.stderr)
        await wait_for(lambda: (tmp_path / "started").exists(), what="the job", while_running=job)
        assert said.wait_for("running the command unwatched")
    finally:
        await asyncio.to_thread(server.start_again)
    store = await PostgresStore.open(store_url)
    try:

        async def recorded() -> bool:
            return [r.task.state for r in await store.poll(None)] == [TaskState.RUNNING]

        await wait_for(recorded, timeout=60, what="the run recorded", while_running=job)
        (tmp_path / "stop").touch()
        assert await asyncio.to_thread(job.wait, 60) == 0, said.all()
        [record] = await store.poll(None)
        assert record.task.task_id.startswith("nightly/")
        assert record.task.state is TaskState.SUCCEEDED
    finally:
        await store.close()


async def test_a_job_runs_while_another_session_locks_the_store(
    store_url: str, tmp_path: Path, children: Children
) -> None:
    """A session that holds a lock on the tasks for good does not hang the wrapper: after the
    lock timeout the job runs unwatched, and its run is recorded once the lock is let go."""
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    locker = await asyncpg.connect(store_url)
    holding = locker.transaction()
    await holding.start()
    await locker.execute("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE")
    try:
        job = children.start(
            zombietop(
                store_url,
                config,
                "run",
                "--job",
                "nightly",
                "--",
                "sh",
                "-c",
                "touch started; while [ ! -e stop ]; do sleep 0.05; done",
            ),
            cwd=tmp_path,
            stderr=subprocess.PIPE,
        )
        assert job.stderr is not None
        said = Said(job.stderr)
        await wait_for(lambda: (tmp_path / "started").exists(), what="the job", while_running=job)
        assert said.wait_for("running the command unwatched")
        assert "lock timeout" in said.all(timeout=0)
    finally:
        await holding.rollback()
        await locker.close()
    store = await PostgresStore.open(store_url)
    try:

        async def recorded() -> bool:
            return [r.task.state for r in await store.poll(None)] == [TaskState.RUNNING]

        await wait_for(recorded, timeout=60, what="the run recorded", while_running=job)
        (tmp_path / "stop").touch()
        assert await asyncio.to_thread(job.wait, 60) == 0, said.all()
        [record] = await store.poll(None)
        assert record.task.state is TaskState.SUCCEEDED
    finally:
        await store.close()
