"""Who may act through an agent, and on which processes: real processes, real signals, and
(as root) a real second OS user created for the test.

The store is not a witness: whoever can write it can forge a task's pid and start time, a
pending kill, or a request's requester. So a signal goes only to a process /proc ties to the
task (its environment or command line carries the task's tag), and an agent acts only for its
own OS user and the users its config allows; every refusal is an event.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import traceback
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.realprocs import Children, pid_alive, start_task_process, wait_for_file
from zombietop.act.executor import Executor
from zombietop.actions import Outcome
from zombietop.agent import Agent
from zombietop.clock import FakeClock
from zombietop.config import AgentSettings, Config, load_config
from zombietop.fleet import HostRequest
from zombietop.identity import real_user
from zombietop.model import EventKind
from zombietop.procs import read_start, tie
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore

# Says so (in a file) if it ever gets SIGTERM: an unrelated process that must never be signalled.
BYSTANDER = "trap ': > {hit}; exit 0' TERM; : > {ready}; while :; do sleep 0.05; done"


def bystander(children: Children, tmp_path: Path, name: str = "bystander") -> tuple[int, Path]:
    """An unrelated process of this user: no zombietop tag anywhere."""
    hit, ready = tmp_path / f"{name}.hit", tmp_path / f"{name}.ready"
    proc = children.start(["sh", "-c", BYSTANDER.format(hit=hit, ready=ready)])
    wait_for_file(ready)
    return proc.pid, hit


async def forge_task(store: Store, task_id: str, pid: int, host: str) -> int:
    """A task row whose pid and start point at ``pid``, as a forger would write it."""
    await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="forger")
    lease = await store.acquire_lease(task_id, owner="forger", ttl=300)
    start = read_start(pid)
    assert start is not None
    await store.set_process(
        task_id,
        owner="forger",
        token=lease.token,
        pid=pid,
        pid_start_time=start.time,
        pid_start_identity=start.identity,
        host=host,
    )
    return lease.token


def agent_for(store: Store, config: Config, clock: FakeClock, host: str = "host-b") -> Agent:
    return Agent(
        store,
        config,
        host=host,
        clock=clock,
        executor=Executor(store, config, clock=clock, host=host),
    )


async def test_a_forged_pid_and_start_time_are_never_signalled(
    pinned_store: Store,
    fake_clock: FakeClock,
    fast_config: Config,
    children: Children,
    tmp_path: Path,
) -> None:
    pid, hit = bystander(children, tmp_path)
    token = await forge_task(pinned_store, "forged", pid, host="host-b")
    asked = await Executor(pinned_store, fast_config, clock=fake_clock, host="host-a").kill(
        "forged", expected_token=token, actor="mallory"
    )
    assert asked.outcome is Outcome.REQUESTED
    report = await agent_for(pinned_store, fast_config, fake_clock).tick()
    assert [o.outcome for o in report.carried_out] == [Outcome.IDENTITY_MISMATCH]
    assert "carries no tag of forged" in report.carried_out[0].message
    await asyncio.sleep(0.3)  # time for a TERM trap to run, were one sent
    assert pid_alive(pid) and not hit.exists()
    events = await pinned_store.events(task_id="forged", kind=EventKind.ACTION)
    assert any("kill identity_mismatch: pid" in e.message for e in events)
    assert await pinned_store.open_kills("host-b") == []


async def test_a_forged_pending_kill_gets_no_sigkill(
    pinned_store: Store,
    fake_clock: FakeClock,
    fast_config: Config,
    children: Children,
    tmp_path: Path,
) -> None:
    """A pending kill written straight into the store, past its grace: the agent's SIGKILL
    would have been the forger's."""
    pid, _ = bystander(children, tmp_path)
    await forge_task(pinned_store, "forged", pid, host="host-b")
    start = read_start(pid)
    assert start is not None
    await pinned_store.open_kill(
        "forged",
        pid=pid,
        pid_start_time=start.time,
        pid_start_identity=start.identity,
        pgid=pid,
        host="host-b",
        requested_by="mallory",
        grace=0.5,
    )
    fake_clock.advance(5)
    report = await agent_for(pinned_store, fast_config, fake_clock).tick()
    assert [o.outcome for o in report.kills_finished] == [Outcome.IDENTITY_MISMATCH]
    await asyncio.sleep(0.2)
    assert pid_alive(pid)
    record = await pinned_store.get_record("forged")
    assert record.pending_kill is not None and record.pending_kill.outcome == "identity_mismatch"


async def test_a_tagged_process_is_killed_and_an_untagged_one_with_the_same_row_is_not(
    real_store: SQLiteStore, fast_config: Config, children: Children, tmp_path: Path
) -> None:
    script = "trap 'exit 0' TERM; : > {ready}; while :; do sleep 0.05; done"
    tagged = await start_task_process(
        real_store, children, script.format(ready=tmp_path / "a"), tmp_path / "a", task_id="a"
    )
    plain = await start_task_process(
        real_store,
        children,
        script.format(ready=tmp_path / "b"),
        tmp_path / "b",
        task_id="b",
        tagged=False,
    )
    executor = Executor(real_store, fast_config)
    killed = await executor.kill("a", expected_token=1, actor="oncall")
    refused = await executor.kill("b", expected_token=1, actor="oncall")
    assert killed.outcome is Outcome.TERM_SENT
    assert refused.outcome is Outcome.IDENTITY_MISMATCH
    assert await asyncio.to_thread(tagged.wait, 5) == 0
    assert plain.poll() is None


def test_the_tie_is_read_from_proc(children: Children, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    env = {**os.environ, "ZOMBIETOP_TASK": "t1"}
    shell = children.start(["sh", "-c", f": > {ready}; sleep 30"], env=env)
    wait_for_file(ready)
    sdk_job = children.start([sys.executable, "-c", "import time; time.sleep(30)", "--task", "t2"])
    other = children.start(["sleep", "30"])
    assert tie(shell.pid, "t1") == "ZOMBIETOP_TASK in its environment"
    assert tie(shell.pid, "t2") is None
    assert tie(other.pid, "t1") is None
    for _ in range(100):  # the interpreter's command line, once it has exec'd
        if tie(sdk_job.pid, "t2") is not None:
            break
        subprocess.run(["sleep", "0.02"], check=True)
    assert tie(sdk_job.pid, "t2") == "--task in its command line"


async def _forged_requester(store: Store, requester: str | None, uid: int | None) -> None:
    """Rewrite who asked, as anyone who can write the store can."""
    assert isinstance(store, SQLiteStore)
    async with store._write() as db:  # a forger's raw write; no API writes this
        await db.execute(
            "UPDATE host_requests SET requester = ?, requester_uid = ?", (requester, uid)
        )


@pytest.mark.parametrize(
    ("requester", "uid", "allow", "refused"),
    [
        ("mallory", 4242, (), "mallory (uid 4242) is not"),
        (None, None, (), "names no requesting OS user"),
        ("mallory", 4242, ("mallory",), None),
    ],
)
async def test_an_agent_acts_only_for_its_user_and_those_allowed(
    real_store: SQLiteStore,
    fast_config: Config,
    children: Children,
    tmp_path: Path,
    requester: str | None,
    uid: int | None,
    allow: tuple[str, ...],
    refused: str | None,
) -> None:
    proc = await start_task_process(
        real_store,
        children,
        f"trap 'exit 0' TERM; : > {tmp_path / 'r'}; while :; do sleep 0.05; done",
        tmp_path / "r",
        host="host-b",
    )
    asked = await Executor(real_store, fast_config, host="host-a").kill(
        "t1", expected_token=1, actor="oncall"
    )
    request = await real_store.get_host_request(asked.request_id or 0)
    assert (request.requester, request.requester_uid) == (real_user(), os.getuid())
    await _forged_requester(real_store, requester, uid)
    config = replace(fast_config, agent=AgentSettings(allow=allow))
    agent = Agent(
        real_store, config, host="host-b", executor=Executor(real_store, config, host="host-b")
    )
    report = await agent.tick()
    if refused is None:
        assert [o.outcome for o in report.carried_out] == [Outcome.TERM_SENT]
        assert await asyncio.to_thread(proc.wait, 5) == 0
        return
    assert [o.outcome for o in report.carried_out] == [Outcome.REFUSED]
    assert refused in report.carried_out[0].message
    assert proc.poll() is None
    events = await real_store.events(task_id="t1", kind=EventKind.ACTION)
    assert any(e.message.startswith("kill refused: ") and refused in e.message for e in events)
    finished = await real_store.get_host_request(asked.request_id or 0)
    assert finished.outcome == "refused"


def test_the_actor_is_the_real_uid_not_user(
    db: Path, fast_config_path: Path, children: Children, tmp_path: Path
) -> None:
    """``USER=root-admin`` in the environment changes nothing: events name the real user."""
    ready = tmp_path / "ready"
    asyncio.run(_one_tagged_task(db, ready, children))
    from tests.core.realprocs import zombietop

    env = {**os.environ, "USER": "forged-admin", "LOGNAME": "forged-admin"}
    result = subprocess.run(
        zombietop(db, fast_config_path, "discard", "t1", "--yes", "--reason", "x"),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    events = asyncio.run(_events(db))
    actors = {e.actor for e in events if e.kind == EventKind.ACTION}
    assert actors and all(a.startswith(f"{real_user()}@") for a in actors), actors


async def _one_tagged_task(db: Path, ready: Path, children: Children) -> None:
    store = await SQLiteStore.open(db, create=True)
    try:
        await start_task_process(store, children, f": > {ready}; sleep 30", ready)
    finally:
        await store.close()


async def _events(db: Path) -> list[object]:
    store = await SQLiteStore.open(db)
    try:
        return list(await store.events(limit=50))
    finally:
        await store.close()


# A real second user ------------------------------------------------------------------------


@pytest.fixture
def other_user() -> Iterator[pwd.struct_passwd]:
    """A throwaway OS user (root only), deleted again after the test."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user with useradd; run the suite as root")
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not installed")
    name = f"zt{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def _ask_as(user: pwd.struct_passwd, db: Path, config: Config) -> None:
    """Ask for a kill from a process whose real uid is ``user`` (a fork that drops root; an exec
    would need the interpreter, which lives under /root)."""
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        status = 1
        try:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            asyncio.run(_ask(db, config))
            status = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(status)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


async def _ask(db: Path, config: Config) -> None:
    store = await SQLiteStore.open(db)
    try:
        asked = await Executor(store, config, host="host-a").kill(
            "t1",
            expected_token=1,
            actor="root@host-a (cli)",  # claims to be root: no matter
        )
        assert asked.outcome is Outcome.REQUESTED, asked
    finally:
        await store.close()


@pytest.mark.parametrize("allowed", [False, True])
def test_a_request_from_another_os_user_needs_allow(
    other_user: pwd.struct_passwd, children: Children, fast_config_path: Path, allowed: bool
) -> None:
    shared = Path(tempfile.mkdtemp(prefix="zt-agent-", dir="/tmp"))
    try:
        os.chmod(shared, 0o1777)
        db = shared / "z.db"
        ready = shared / "ready"
        asyncio.run(_one_tagged_task_on(db, ready, children, host="host-b"))
        for path in shared.iterdir():
            os.chmod(path, 0o666)  # the store is shared: the other user may write it
        config = load_config(fast_config_path)
        _ask_as(other_user, db, config)
        if allowed:
            config = replace(config, agent=AgentSettings(allow=(other_user.pw_name,)))
        outcome, request, events = asyncio.run(_agent_tick(db, config))
        assert (request.requester, request.requester_uid) == (
            other_user.pw_name,
            other_user.pw_uid,
        )
        if allowed:
            assert outcome is Outcome.TERM_SENT
        else:
            assert outcome is Outcome.REFUSED
            assert any(
                f"kill refused: {other_user.pw_name} (uid {other_user.pw_uid}) is not root"
                in message
                for message in events
            )
            assert all(pid_alive(p.pid) for p in children.procs)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


async def _one_tagged_task_on(db: Path, ready: Path, children: Children, host: str) -> None:
    store = await SQLiteStore.open(db, create=True)
    try:
        await start_task_process(
            store, children, f"trap 'exit 0' TERM; : > {ready}; sleep 30 & wait", ready, host=host
        )
    finally:
        await store.close()


async def _agent_tick(db: Path, config: Config) -> tuple[Outcome, HostRequest, list[str]]:
    store = await SQLiteStore.open(db)
    try:
        agent = Agent(store, config, host="host-b", executor=Executor(store, config, host="host-b"))
        report = await agent.tick()
        assert len(report.carried_out) == 1
        events = await store.events(task_id="t1", kind=EventKind.ACTION)
        asked = await store.get_host_request(1)
        return report.carried_out[0].outcome, asked, [e.message for e in events]
    finally:
        await store.close()
