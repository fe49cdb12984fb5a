"""Fleets: agents per host, actions done on the task's host, the server's clock for leases."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import PostgresForTests
from tests.core.realprocs import Children, pid_alive, start_task_process, wait_for, zombietop
from tests.stores import open_for_test
from zombietop.act.executor import Executor
from zombietop.actions import Outcome
from zombietop.agent import Agent
from zombietop.clock import FakeClock
from zombietop.config import Config, load_config
from zombietop.errors import LeaseHeld, LeaseLost, StoreError, StoreMissing
from zombietop.heartbeat_line import BeatLine
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind, ProcessSample
from zombietop.procs import PsutilProbe, this_host
from zombietop.store import Store, open_store

RESPECTS_TERM = "sleep 30 & sleep 30 & : > {ready}; wait"


class SkewedClock:
    """A host's wall clock that is off by ``offset`` seconds (and ticks like the real one)."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def now(self) -> float:
        return time.time() + self.offset


async def remote_task(
    store: Store, task_id: str = "t1", host: str = "host-b", pid: int = 4121
) -> int:
    await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="test")
    lease = await store.acquire_lease(task_id, owner=f"w@{host}", ttl=300)
    await store.set_process(
        task_id, owner=f"w@{host}", token=lease.token, pid=pid, pid_start_time=1.0, host=host
    )
    return lease.token


async def test_a_missing_agent_is_named_and_its_samples_stop_counting(
    store: Store, clock: FakeClock, fast_config: Config
) -> None:
    """A dashboard on host-a sees host-b's process through host-b's agent while it reports, and
    says "no agent on host-b" (and stops trusting the old sample) once it is quiet or stopped."""
    await remote_task(store)
    monitor = Monitor(store, fast_config, host="host-a", clock=clock)
    view = (await monitor.poll()).by_id()["t1"]
    assert view.remote and view.process is None
    assert (
        view.agent_note == "no agent on host-b: none has ever reported, so its process is not seen"
    )

    await store.record_agent_beat(
        "host-b", agent_id="agent-b", pid=77, interval=2.0, reported_at=clock.now() + 2.5
    )
    sample = ProcessSample(pid=4121, alive=True, status="sleeping", cpu_percent=0.0, sampled_at=1.0)
    await store.record_process_samples("host-b", {"t1": sample})
    snapshot = await monitor.poll()
    view = snapshot.by_id()["t1"]
    assert view.agent_note is None
    assert view.process is not None and view.process.pid == 4121 and view.process.alive
    assert [(a.host, a.clock_skew_s) for a in snapshot.agents] == [("host-b", 2.5)]

    clock.advance(3 * 2.0 + 1.5)  # three missed beats and then some
    view = (await monitor.poll()).by_id()["t1"]
    assert view.agent_note == "no agent on host-b: last seen 7s ago"
    assert view.process is None, "an absent agent's old sample says nothing about now"

    await store.record_agent_beat(
        "host-b", agent_id="agent-b", pid=77, interval=2.0, reported_at=clock.now()
    )
    await store.stop_agent("host-b", agent_id="agent-b")
    clock.advance(1)
    assert (await monitor.poll()).by_id()["t1"].agent_note == "no agent on host-b: stopped 1s ago"


async def test_another_hosts_kill_waits_for_its_agent_then_escalates_there(
    pinned_store: Store,
    fake_clock: FakeClock,
    fast_config: Config,
    children: Children,
    tmp_path: Path,
) -> None:
    """The executor on host-a records the kill instead of signalling; host-b's agent carries it
    out with the same identity check and finishes it through the grace on its own."""
    ready = tmp_path / "ready"
    proc = await start_task_process(
        pinned_store,
        children,
        "trap '' TERM; " + RESPECTS_TERM.format(ready=ready),
        ready,
        host="host-b",
    )
    asked = await Executor(pinned_store, fast_config, clock=fake_clock, host="host-a").kill(
        "t1", expected_token=1, actor="oncall@host-a", reason="hung"
    )
    assert asked.outcome is Outcome.REQUESTED and asked.request_id is not None
    assert "no agent on host-b" in asked.message
    assert pid_alive(proc.pid), "host-a must not signal host-b's process"
    view = (
        await Monitor(pinned_store, fast_config, host="host-a", clock=fake_clock).poll()
    ).by_id()["t1"]
    assert view.agent_note == "no agent on host-b: kill requested 0s ago waits for one"

    agent = Agent(
        pinned_store,
        fast_config,
        host="host-b",
        interval=0.2,
        clock=fake_clock,
        executor=Executor(pinned_store, fast_config, clock=fake_clock, host="host-b"),
    )
    first = await agent.tick()
    assert [o.outcome for o in first.carried_out] == [Outcome.TERM_SENT]
    assert first.sampled == 1
    assert pid_alive(proc.pid), "it ignores TERM: SIGKILL only after the grace"
    fake_clock.advance(1.1)  # kill_grace is 1 s
    second = await agent.tick()
    assert [o.outcome for o in second.kills_finished] == [Outcome.ESCALATED]
    assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGKILL
    request = await pinned_store.get_host_request(asked.request_id)
    assert request.outcome == "term_sent" and request.claimed_by == agent.agent_id
    messages = [e.message for e in await pinned_store.events(task_id="t1", kind=EventKind.ACTION)]
    assert any(m.startswith("kill carried out on host-b: term_sent") for m in messages)
    view = (
        await Monitor(pinned_store, fast_config, host="host-a", clock=fake_clock).poll()
    ).by_id()["t1"]
    assert view.agent_note is None and view.host_request is None


async def test_a_stale_request_is_refused_by_the_agent(
    store: Store, clock: FakeClock, fast_config: Config
) -> None:
    """The agent re-checks the token the operator saw: a task that moved on is left alone."""
    token = await remote_task(store)
    asked = await Executor(store, fast_config, clock=clock, host="host-a").kill(
        "t1", expected_token=token, actor="oncall"
    )
    assert asked.outcome is Outcome.REQUESTED
    await store.resume_task("t1", expected_token=token, actor="someone-else")
    agent = Agent(
        store,
        fast_config,
        host="host-b",
        clock=clock,
        executor=Executor(store, fast_config, clock=clock, host="host-b"),
    )
    report = await agent.tick()
    assert [o.outcome for o in report.carried_out] == [Outcome.REFUSED]
    assert "task changed since you looked" in report.carried_out[0].message


@pytest.mark.slow
@pytest.mark.backends("postgresql")
async def test_two_hosts_one_postgres_kill_through_the_cli_and_no_agent_once_stopped(
    live_store: Store,
    store_location: str,
    fast_config_path: Path,
    children: Children,
    tmp_path: Path,
) -> None:
    """Two `zombietop agent` processes (host-a, host-b) on one PostgreSQL; a task on host-b.

    A dashboard elsewhere sees the task's live process through host-b's agent; `zombietop kill`
    run here (a third host name) is carried out by host-b's agent on the real process; with
    that agent stopped, `zombietop status` says "no agent on host-b".
    """
    ready = tmp_path / "ready"
    proc = await start_task_process(
        live_store, children, RESPECTS_TERM.format(ready=ready), ready, host="host-b"
    )
    agents = {
        host: children.start(
            zombietop(
                store_location, fast_config_path, "agent", "--host", host, "--interval", "0.2"
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for host in ("host-a", "host-b")
    }

    async def both_present() -> bool:
        now = await live_store.now()
        return sum(a.present(now) for a in await live_store.agents()) == 2

    await wait_for(both_present, timeout=20, what="both agents to report")
    config = load_config(fast_config_path)
    monitor = Monitor(live_store, config, probe=PsutilProbe(host=this_host()))

    async def seen_remotely() -> bool:
        view = (await monitor.poll()).by_id()["t1"]
        return view.process is not None and view.process.pid == proc.pid and view.process.alive

    await wait_for(seen_remotely, timeout=10, what="host-b's agent to sample the task")

    done = await asyncio.to_thread(
        subprocess.run,
        zombietop(store_location, fast_config_path, "kill", "t1", "--yes", "--reason", "hung"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "t1: requested: kill of t1 requested: waiting for agent on host-b" in done.stdout
    assert "t1: exited: finished by the agent on host-b" in done.stdout, done.stdout
    assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGTERM
    record = await live_store.get_record("t1")
    assert record.pending_kill is not None and record.pending_kill.host == "host-b"
    assert record.pending_kill.outcome == "exited"

    agents["host-b"].send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(agents["host-b"].wait, 10) == 0
    status = await asyncio.to_thread(
        subprocess.run,
        zombietop(store_location, fast_config_path, "status", "--json"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert status.returncode in (0, 1, 2), status.stderr  # OK, WARNING, CRITICAL
    report = json.loads(status.stdout)
    task = next(t for t in report["tasks"] if t["task_id"] == "t1")
    assert task["agent_note"].startswith("no agent on host-b: stopped")
    assert {a["host"]: a["present"] for a in report["agents"]} == {"host-a": True, "host-b": False}
    table = await asyncio.to_thread(
        subprocess.run,
        zombietop(store_location, fast_config_path, "status"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "t1: no agent on host-b: stopped" in table.stdout
    assert "host-b no agent" in table.stdout


@pytest.mark.backends("postgresql")
async def test_a_skewed_worker_can_neither_keep_nor_steal_a_lease(
    live_store: Store, store_location: str, fast_config: Config
) -> None:
    """Lease times come from the server. A worker whose clock runs an hour slow believes its
    lease has an hour left; the server lets it lapse at the real expiry. A worker an hour fast
    believes the lease long expired; the server will not let it reclaim. Both skews show."""
    slow, fast = SkewedClock(-3600), SkewedClock(+3600)
    ttl = 1.5  # room for a stalled CI machine between taking the lease and the theft attempt
    async with (
        await open_store(store_location, clock=slow) as worker,
        await open_store(store_location, clock=fast) as thief,
    ):
        await worker.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="w")
        before = time.time()
        lease = await worker.acquire_lease("t1", owner="slow-worker", ttl=ttl)
        after = time.time()
        assert lease.expires_at is not None
        # The server runs on this machine: its clock is the real one, neither worker's.
        assert before + ttl - 0.05 <= lease.expires_at <= after + ttl + 0.05
        assert slow.now() < lease.expires_at - 3000, "by its own clock the lease has an hour left"
        with pytest.raises(LeaseHeld, match="cannot be reclaimed yet"):
            await thief.reclaim_lease("t1", owner="fast-worker", ttl=60)
        await worker.record_heartbeat(
            "t1",
            BeatLine(stage="load", progress=5, at=slow.now()),
            owner="slow-worker",
            token=lease.token,
        )
        await asyncio.sleep(max(lease.expires_at + 0.2 - time.time(), 0))
        with pytest.raises(LeaseLost, match="slow-worker's lease on t1 expired"):
            await worker.renew_lease("t1", owner="slow-worker", token=lease.token, ttl=60)
        assert not await worker.still_owner("t1", owner="slow-worker", token=lease.token)
        taken = await thief.reclaim_lease("t1", owner="fast-worker", ttl=60)
        assert taken.token == lease.token + 1
        await thief.record_heartbeat(
            "t1",
            BeatLine(stage="load", progress=6, at=fast.now()),
            owner="fast-worker",
            token=taken.token,
        )
    view = (await Monitor(live_store, fast_config, host="dashboard").poll()).by_id()["t1"]
    assert view.clock_skew_s is not None and abs(view.clock_skew_s - 3600) < 1
    history = await live_store.events(task_id="t1", kind=EventKind.LEASE_RECLAIMED)
    assert history[0].data["previous_owner"] == "slow-worker"


@pytest.mark.backends("postgresql")
async def test_postgres_errors_say_what_where_and_what_to_do(
    store_location: str, postgres: PostgresForTests
) -> None:
    socketless = store_location.replace("host=/", "host=/nonexistent/")
    with pytest.raises(StoreError, match=r"cannot reach PostgreSQL at .*is the server running"):
        await open_store(socketless)
    nobody = store_location.replace("zombietop@", "nobody_here@")
    with pytest.raises(StoreError, match=r"refused the login .*check the user and password"):
        await open_store(nobody)
    missing = store_location.replace("/zt_", "/absent_zt_")
    with pytest.raises(StoreMissing, match=r"no database at .*createdb"):
        await open_store(missing)
    empty = postgres.create_database(empty=True)
    with pytest.raises(StoreMissing, match=r"no zombietop store in .* yet: run `zombietop init"):
        await open_store(empty, read_only=True)
    async with await open_store(empty) as migrated:
        assert await migrated.poll(None) == []
    other = postgres.create_database(empty=True)
    import asyncpg

    conn = await asyncpg.connect(other)
    await conn.execute("CREATE TABLE customers (id integer)")
    await conn.close()
    with pytest.raises(StoreError, match="a PostgreSQL database but not a zombietop store"):
        await open_store(other)


@pytest.mark.backends("postgresql")
async def test_a_v1_postgres_store_is_migrated_on_open(postgres: PostgresForTests) -> None:
    import asyncpg

    from zombietop.store.postgres import MIGRATIONS, SCHEMA_VERSION

    url = postgres.create_database(empty=True)
    conn = await asyncpg.connect(url)
    await conn.execute(MIGRATIONS[0])
    await conn.execute("INSERT INTO zombietop_store VALUES (true, 'zombietop', 1)")
    await conn.execute(
        "INSERT INTO tasks (task_id, run_id, step, step_type, state, created_at, updated_at) "
        "VALUES ('old', 'r', 's', 'default', 'queued', 1, 1)"
    )
    await conn.close()
    async with await open_for_test(url) as store:
        assert (await store.get_record("old")).pending_kill is None
        assert await store.agents() == []
        assert await store.acks() == [] and await store.silences() == []
    conn = await asyncpg.connect(url)
    version = await conn.fetchval("SELECT schema_version FROM zombietop_store")
    assert version == SCHEMA_VERSION == len(MIGRATIONS)
    await conn.close()


def test_a_postgres_url_is_a_location_not_a_path(tmp_path: Path) -> None:
    """--db, ZOMBIETOP_DB and [store] path all keep a URL whole (a Path would fold its //)."""
    from zombietop.locations import state_dir
    from zombietop.tui.cli.context import resolve_store_path

    url = "postgresql://zt:secret@db.example:6432/zombietop"
    config_file = tmp_path / "config.toml"
    config_file.write_text(f'[store]\npath = "{url}"\n')
    config = load_config(config_file)
    assert config.store_path == url
    assert resolve_store_path(None, config) == url
    assert resolve_store_path("postgres://h/db", config) == "postgres://h/db"
    assert state_dir(url).name == "pg-db.example-6432_zombietop.d"
    assert resolve_store_path("~/z.db", config) == Path("~/z.db").expanduser()


@pytest.mark.backends("postgresql")
async def test_zombietop_run_against_postgres(
    store_location: str, fast_config_path: Path, tmp_path: Path
) -> None:
    """The same program on a fleet store: run takes the lease, beats and records the exit."""
    import os

    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    script = 'echo "stage=load p=50 at=2026-11-29T03:42:00Z" >> "$ZOMBIETOP_HEARTBEAT_FILE"'
    done = await asyncio.to_thread(
        subprocess.run,
        zombietop(
            store_location, fast_config_path, "run", "--task", "j1", "--", "sh", "-c", script
        ),
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    async with await open_for_test(store_location) as store:
        record = await store.get_record("j1")
    assert record.task.state.value == "succeeded"
    assert record.heartbeat is not None and record.heartbeat.stage == "load"
    assert record.heartbeat.clock_skew_s is not None and record.heartbeat.clock_skew_s < -1000


def test_zombietop_host_names_this_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZOMBIETOP_HOST", "worker-7")
    assert this_host() == "worker-7"
    assert PsutilProbe().host == "worker-7"
