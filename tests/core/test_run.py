"""`zombietop run` as a real process wrapping `sh -c` scripts, seen through `status --json`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.core.realprocs import (
    FAST_CONFIG,
    Children,
    pid_alive,
    wait_for,
    wait_for_file,
    zombietop,
)
from zombietop.act.executor import Executor
from zombietop.config import Config, load_config
from zombietop.errors import LeaseLost
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.locations import task_file_name
from zombietop.model import TaskState
from zombietop.procs import PsutilProbe
from zombietop.store.sqlite import SQLiteStore

BEATS_THEN_HANGS = (
    'echo "stage=load p=10" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
    'echo "stage=transform p=61 rows=8200" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
    "sleep 30"
)


def _status(db: Path, fast_config_path: Path) -> dict[str, Any]:
    result = subprocess.run(
        zombietop(db, fast_config_path, "status", "--json", "--all"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode in (0, 1, 2), result.stderr  # OK, WARNING, CRITICAL
    return {task["task_id"]: task for task in json.loads(result.stdout)["tasks"]}


async def _health(monitor: Monitor, task_id: str) -> Health | None:
    view = (await monitor.poll()).by_id().get(task_id)
    return None if view is None else view.health


def _run(
    db: Path, fast_config_path: Path, children: Children, *args: str
) -> subprocess.Popen[bytes]:
    return children.start(
        zombietop(db, fast_config_path, "run", *args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def test_heartbeats_show_then_stalled_then_reclaimable_when_the_wrapper_dies(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
) -> None:
    wrapper = _run(
        db, fast_config_path, children, "--task", "t1", "--", "sh", "-c", BEATS_THEN_HANGS
    )
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe(), include_finished=True)

    async def beat_seen() -> bool:
        record = await real_store.get_record("t1") if await _exists(real_store, "t1") else None
        return bool(record and record.heartbeat and record.heartbeat.stage == "transform")

    # The wrapper is a Python process that imports zombietop first: seconds at load.
    await wait_for(beat_seen, what="the transform heartbeat", while_running=wrapper)
    task = await real_store.get_task("t1")
    assert task.pid is not None and task.command == ("sh", "-c", BEATS_THEN_HANGS)
    children.track_group(task.pid)
    shown = _status(db, fast_config_path)["t1"]
    assert (shown["stage"], shown["progress"], shown["counters"]) == (
        "transform",
        61,
        {"rows": 8200},
    )
    assert shown["pid"] == task.pid and shown["state"] == "running"

    # The script hangs: no heartbeat for 600 ms while the wrapper keeps the lease alive.
    await wait_for(
        lambda: _is(monitor, "t1", Health.STALLED), what="stalled", while_running=wrapper
    )
    assert _status(db, fast_config_path)["t1"]["health"] == "stalled"

    # The wrapper is SIGKILLed: nobody renews, and after the 3 s ttl the lease may be reclaimed.
    wrapper.kill()
    wrapper.wait(5)
    await wait_for(lambda: _is(monitor, "t1", Health.RECLAIMABLE), timeout=15, what="reclaimable")
    shown = _status(db, fast_config_path)["t1"]
    assert shown["health"] == "reclaimable"
    assert any(reason["code"] == "lease_expired" for reason in shown["reasons"])


async def _exists(real_store: SQLiteStore, task_id: str) -> bool:
    return any(r.task.task_id == task_id for r in await real_store.poll(None))


async def _is(monitor: Monitor, task_id: str, health: Health) -> bool:
    return await _health(monitor, task_id) is health


async def test_child_dying_under_a_frozen_wrapper_is_dead(
    real_store: SQLiteStore, db: Path, children: Children, tmp_path: Path
) -> None:
    # A lease that outlives the test however busy the machine is: the frozen wrapper renews
    # nothing, and the point is a task dead while its lease still looks fine.
    config_path = tmp_path / "long-lease.toml"
    config_path.write_text(FAST_CONFIG.replace('lease_ttl = "3s"', 'lease_ttl = "10m"'))
    wrapper = _run(db, config_path, children, "--task", "t1", "--", "sh", "-c", BEATS_THEN_HANGS)
    await wait_for(lambda: _has_pid(real_store, "t1"), what="the child's pid")
    pid = (await real_store.get_task("t1")).pid
    assert pid is not None
    children.track_group(pid)
    monitor = Monitor(real_store, load_config(config_path), probe=PsutilProbe())

    os.kill(wrapper.pid, signal.SIGSTOP)
    try:
        os.kill(pid, signal.SIGKILL)
        # The frozen wrapper cannot reap it: a zombie, whose lease is still fresh.
        await wait_for(lambda: _is(monitor, "t1", Health.DEAD), timeout=10, what="dead")
        shown = _status(db, config_path)["t1"]
        assert shown["health"] == "dead"
        assert shown["lease_expires_in_s"] > 0
    finally:
        os.kill(wrapper.pid, signal.SIGCONT)
    # Thawed, the wrapper records the death and exits with the child's status.
    code = await asyncio.to_thread(wrapper.wait, 10)
    assert wrapper.stderr is not None
    assert code == 128 + signal.SIGKILL, wrapper.stderr.read()
    task = await real_store.get_task("t1")
    assert task.state is TaskState.FAILED and task.state_reason == "killed by SIGKILL"


async def _has_pid(real_store: SQLiteStore, task_id: str) -> bool:
    return (
        await _exists(real_store, task_id) and (await real_store.get_task(task_id)).pid is not None
    )


async def test_exit_codes_and_states_are_recorded(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    ok = _run(db, fast_config_path, children, "--task", "ok", "--", "sh", "-c", "exit 0")
    bad = _run(db, fast_config_path, children, "--task", "bad", "--", "sh", "-c", "exit 3")
    assert await asyncio.to_thread(ok.wait, 20) == 0
    assert await asyncio.to_thread(bad.wait, 20) == 3
    assert (await real_store.get_task("ok")).state is TaskState.SUCCEEDED
    failed = await real_store.get_task("bad")
    assert (failed.state, failed.exit_code) == (TaskState.FAILED, 3)

    term = _run(
        db, fast_config_path, children, "--task", "term", "--", "sh", "-c", BEATS_THEN_HANGS
    )
    await wait_for(lambda: _has_pid(real_store, "term"), what="the child's pid")
    term.send_signal(signal.SIGTERM)  # forwarded to the child's group
    assert await asyncio.to_thread(term.wait, 20) == 128 + signal.SIGTERM
    interrupted = await real_store.get_task("term")
    assert interrupted.state is TaskState.INTERRUPTED and "SIGTERM" in (
        interrupted.state_reason or ""
    )


async def test_malformed_heartbeat_line_is_a_reason_not_a_crash(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
) -> None:
    script = 'echo "stage=load p=abc" >> "$ZOMBIETOP_HEARTBEAT_FILE"; sleep 0.5; exit 4'
    wrapper = _run(db, fast_config_path, children, "--task", "t1", "--", "sh", "-c", script)
    assert await asyncio.to_thread(wrapper.wait, 20) == 4
    task = await real_store.get_task("t1")
    assert task.heartbeat_error is not None and "is not a number" in task.heartbeat_error
    view = (await Monitor(real_store, fast_config, include_finished=True).poll()).by_id()["t1"]
    assert any(r.code == "heartbeat_malformed" for r in view.verdict.reasons)


async def test_run_refuses_while_an_upstream_has_not_succeeded(
    real_store: SQLiteStore, db: Path, fast_config_path: Path
) -> None:
    await real_store.create_task(
        task_id="up", run_id="r", step="s", step_type="default", actor="test"
    )
    argv = zombietop(db, fast_config_path, "run", "--task", "down", "--after", "up", "--", "true")
    waiting = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert waiting.returncode == 2
    assert waiting.stderr.strip().splitlines() == [
        "zombietop: not starting down: upstream up is queued, not succeeded; "
        "wait for it, or resume it"
    ]
    lease = await real_store.acquire_lease("up", owner="o", ttl=60)
    await real_store.finish_task("up", owner="o", token=lease.token, state=TaskState.SUCCEEDED)
    await real_store.set_quarantine("up", quarantined=True, actor="watchdog", reason="bad output")
    held = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert held.returncode == 2 and "upstream up is quarantined (bad output)" in held.stderr
    assert not await _exists(real_store, "down")


async def test_lost_lease_stops_the_command(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    wrapper = _run(
        db, fast_config_path, children, "--task", "t1", "--", "sh", "-c", BEATS_THEN_HANGS
    )
    await wait_for(lambda: _has_pid(real_store, "t1"), what="the child's pid")
    pid = (await real_store.get_task("t1")).pid
    assert pid is not None
    lease = await real_store.get_lease("t1")
    assert lease is not None
    await real_store.discard_task("t1", expected_token=lease.token, actor="oncall")
    # The next renewal fails; the wrapper stops its command instead of running a second owner.
    assert await asyncio.to_thread(wrapper.wait, 20) == 128 + signal.SIGTERM
    assert not pid_alive(pid)
    assert wrapper.stderr is not None and b"stopping the command" in wrapper.stderr.read()
    assert (await real_store.get_task("t1")).state is TaskState.DISCARDED


async def test_resume_after_kill_relaunches_from_the_checkpoint(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
    tmp_path: Path,
) -> None:
    seen = tmp_path / "seen"
    script = (
        f'echo "attempt=$ZOMBIETOP_ATTEMPT checkpoint=$ZOMBIETOP_CHECKPOINT" >> {seen}; '
        'if [ -z "$ZOMBIETOP_CHECKPOINT" ]; then '
        '  echo "stage=copy p=50 checkpoint=part-7" >> "$ZOMBIETOP_HEARTBEAT_FILE"; sleep 30; '
        "fi"
    )
    wrapper = _run(db, fast_config_path, children, "--task", "t1", "--", "sh", "-c", script)
    await wait_for(lambda: _checkpoint(real_store, "t1"), what="the first checkpoint")
    old = await real_store.get_lease("t1")
    task = await real_store.get_task("t1")
    assert old is not None and old.owner is not None and task.pid is not None
    children.track_group(task.pid)
    # The host "crashes": wrapper and command die without a word, the lease still looks held.
    wrapper.kill()
    os.killpg(task.pid, signal.SIGKILL)
    wrapper.wait(5)

    outcome = await Executor(real_store, fast_config, store_path=db).resume(
        "t1", expected_token=old.token, actor="oncall", reason="host rebooted"
    )
    assert outcome.outcome == "relaunched", outcome.message
    assert "from checkpoint part-7" in outcome.message
    assert not await real_store.still_owner("t1", owner=old.owner, token=old.token)
    with pytest.raises(LeaseLost):
        await real_store.renew_lease("t1", owner=old.owner, token=old.token, ttl=60)

    async def done() -> bool:
        return (await real_store.get_task("t1")).state is TaskState.SUCCEEDED

    await wait_for(done, timeout=20, what="the relaunched attempt to succeed")
    assert seen.read_text().splitlines() == ["attempt=1 checkpoint=", "attempt=2 checkpoint=part-7"]
    log = db.with_name(db.name + ".d") / "logs" / f"{task_file_name('t1')}.2.log"
    assert log.exists()


async def _checkpoint(real_store: SQLiteStore, task_id: str) -> bool:
    return (
        await _exists(real_store, task_id)
        and (await real_store.get_task(task_id)).checkpoint == "part-7"
    )


async def test_wrapper_stopped_by_sigterm_kills_a_deaf_command_after_the_grace(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    script = "trap '' TERM; " + BEATS_THEN_HANGS
    wrapper = _run(db, fast_config_path, children, "--task", "deaf", "--", "sh", "-c", script)

    async def trapped() -> bool:
        # The shell reports its stage only after setting its trap; an observed beat (no
        # stage) can come before it.
        if not await _exists(real_store, "deaf"):
            return False
        beat = (await real_store.get_record("deaf")).heartbeat
        return beat is not None and beat.stage is not None

    await wait_for(trapped, what="the first heartbeat")
    started = time.monotonic()
    wrapper.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(wrapper.wait, 20) == 128 + signal.SIGKILL
    assert time.monotonic() - started >= 1.0  # kill_grace, and not before
    task = await real_store.get_task("deaf")
    assert task.state is TaskState.INTERRUPTED
    assert task.state_reason == "stopped by SIGTERM (forwarded by zombietop run) (exit 137)"


def test_heartbeat_tail_remembers_the_newest_line_for_the_final_beat(tmp_path: Path) -> None:
    """The tail task can be cancelled mid-record when the command exits; the final beat then
    repeats the newest line instead of losing it (found by bench/ingest.py with 8 writers)."""
    from zombietop.run.runner import HeartbeatTail

    beats = tmp_path / "beats"
    tail = HeartbeatTail(beats)
    assert tail.last_line() is None and tail.latest is None
    beats.write_text("stage=a p=1\nstage=a p=2\nstage=a p=")
    assert tail.last_line() == "stage=a p=2"
    assert tail.last_line() is None
    assert tail.latest == "stage=a p=2"
    with beats.open("a") as handle:
        handle.write("3\n")
    assert tail.last_line() == "stage=a p=3" and tail.latest == "stage=a p=3"


def test_heartbeat_tail_drops_a_line_past_the_limit_up_to_its_newline(tmp_path: Path) -> None:
    from zombietop.heartbeat_line import MAX_LINE, HeartbeatParseError, parse_line
    from zombietop.run.runner import HeartbeatTail

    beats = tmp_path / "beats"
    tail = HeartbeatTail(beats)
    with beats.open("wb") as handle:
        handle.write(b"stage=a p=1\n" + b"x" * 5_000_000)
    assert tail.last_line() == "stage=a p=1"
    assert len(tail._partial) == MAX_LINE + 1  # what it holds of a line with no end yet
    with beats.open("ab") as handle:
        handle.write(b"y" * 5_000_000 + b"\n")
    overlong = tail.last_line()
    assert overlong is not None and overlong == "x" * (MAX_LINE + 1)
    with pytest.raises(HeartbeatParseError, match=f"longer than {MAX_LINE} characters"):
        parse_line(overlong)
    with beats.open("ab") as handle:
        handle.write(b"stage=b p=2\n")
    assert tail.last_line() == "stage=b p=2"


def test_a_job_writing_150mb_without_a_newline_keeps_the_wrapper_small(
    tmp_path: Path, fast_config_path: Path, children: Children
) -> None:
    """The reported fault: 150 MB with no newline made the wrapper 205 MB."""
    db = tmp_path / "z.db"
    done = tmp_path / "done"
    job = (
        'head -c 150000000 /dev/zero | tr "\\0" x >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
        'echo >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
        'echo "stage=done p=100" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
        f": > {done}; sleep 30"
    )
    wrapper = children.start(
        zombietop(db, fast_config_path, "run", "--task", "big", "--", "sh", "-c", job),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_file(done, timeout=120)

    async def read_beat() -> str | None:
        async with await SQLiteStore.open(db) as store:
            beat = (await store.get_record("big")).heartbeat
            return None if beat is None else beat.stage

    deadline = time.monotonic() + 60
    while asyncio.run(read_beat()) != "done":
        assert time.monotonic() < deadline, "the wrapper never read the line after the flood"
        time.sleep(0.1)
    status = Path(f"/proc/{wrapper.pid}/status").read_text()
    peak_kb = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
    assert peak_kb < 80_000, f"the wrapper peaked at {peak_kb // 1024} MB"
