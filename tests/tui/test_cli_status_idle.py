"""What one ``status`` run knows at its first look (issue 46): how long a task's process has
been idle, from the kernel's record, and a finished task's process that runs on. Each run is a
new process with no earlier sample, as a Nagios check is."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.realprocs import Children, wait_for
from zombietop.clock import FakeClock
from zombietop.heartbeat_line import parse_line
from zombietop.last_ran import tree_idle_s
from zombietop.model import TaskState
from zombietop.procs import read_start, this_host
from zombietop.store import open_store

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/PID/task/TID/sched")

CONFIG = """\
[thresholds]
heartbeat_timeout = "10m"
lease_ttl = "20m"
progress_timeout = "30m"
idle_timeout = "1s"
"""


def zombietop(db: Path, config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "zombietop.tui", "--db", str(db), "--config", str(config), *args]


async def record(
    db: Path, pid: int, *, command: tuple[str, ...] = (), failed_ago: float | None = None
) -> None:
    """A task whose recorded process is ``pid``, with a beat written now; with ``failed_ago``,
    failed that many seconds ago as its wrapper recorded, while the process runs on."""
    started = read_start(pid)
    assert started is not None
    clock = FakeClock(time.time() - (failed_ago or 0.0))
    async with await open_store(db, create=True, clock=clock) as store:
        await store.create_task(
            task_id="t1", run_id="r", step="s", step_type="default", actor="test", command=command
        )
        lease = await store.acquire_lease("t1", owner="w1@box", ttl=1200)
        await store.set_process(
            "t1",
            owner="w1@box",
            token=lease.token,
            pid=pid,
            pid_start_time=started.time,
            pid_start_identity=started.identity,
            host=this_host(),
        )
        if failed_ago is not None:
            await store.finish_task(
                "t1", owner="w1@box", token=lease.token, state=TaskState.FAILED, exit_code=1
            )
            return
        await store.record_heartbeat("t1", parse_line("p=10"), owner="w1@box", token=lease.token)
        # An observed beat proves only that something lives: the process's idleness is judged.
        await store.record_observed_heartbeat("t1", {}, owner="w1@box", token=lease.token)


def status_json(db: Path, config: Path) -> dict[str, object]:
    done = subprocess.run(
        zombietop(db, config, "status", "--json"), capture_output=True, text=True, timeout=60
    )
    assert done.stderr == ""
    report = json.loads(done.stdout)
    (task,) = report["tasks"]
    assert isinstance(task, dict)
    return task


async def test_one_status_run_says_stalled_for_a_task_idle_past_idle_timeout(
    tmp_path: Path, children: Children
) -> None:
    db, config = tmp_path / "z.db", tmp_path / "config.toml"
    config.write_text(CONFIG)
    sleeper = children.start(["sleep", "300"])
    await record(db, sleeper.pid)

    async def idle_past_timeout() -> bool:
        idle = tree_idle_s([sleeper.pid])
        return idle is not None and idle > 1.5

    await wait_for(idle_past_timeout, timeout=20, what="the sleep to idle past 1.5s")
    task = status_json(db, config)
    assert task["health"] == "stalled", task
    process = task["process"]
    assert isinstance(process, dict)
    assert process["idle_source"] == "kernel"
    assert process["idle_s"] > 1.5
    reasons = task["reasons"]
    assert isinstance(reasons, list)
    assert reasons[0]["code"] == "process_idle"
    assert "observed beats; task process idle " in str(task["context"])


async def test_a_busy_process_is_not_idle_at_the_first_look(
    tmp_path: Path, children: Children
) -> None:
    db, config = tmp_path / "z.db", tmp_path / "config.toml"
    config.write_text(CONFIG)
    busy = children.start([sys.executable, "-c", "while True: pass"])
    await record(db, busy.pid)
    task = status_json(db, config)
    assert task["health"] == "healthy", task
    process = task["process"]
    assert isinstance(process, dict)
    assert process["idle_source"] == "kernel" and process["idle_s"] < 1


async def test_one_status_run_and_ack_follow_an_orphan_finished_long_ago(
    tmp_path: Path, children: Children
) -> None:
    """Failed 20 minutes ago as its wrapper recorded, while its process runs on: orphaned at
    the first look (the window after a finish is 10 minutes), and ``ack`` takes it."""
    db, config = tmp_path / "z.db", tmp_path / "config.toml"
    config.write_text(CONFIG)
    orphan = children.start(["sleep", "300"])
    await record(db, orphan.pid, command=("sleep", "300"), failed_ago=20 * 60)
    task = status_json(db, config)
    assert task["health"] == "orphaned", task
    acked = subprocess.run(
        zombietop(db, config, "ack", "t1", "--reason", "on it"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert acked.returncode == 0, acked.stderr
    assert acked.stdout.startswith("t1: acked by ")
