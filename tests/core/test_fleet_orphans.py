"""A task on another host, seen through that host's real ``zombietop agent --host``: its
process idle under beats that go on reads spinning, and the process that outlives the finished
task reads orphaned, on a dashboard that is not on that host (both backends)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.core.realprocs import FAST_CONFIG, Children, pid_alive, wait_for, zombietop
from zombietop.config import load_config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import TaskView
from zombietop.model import HeartbeatSource
from zombietop.procs import PsutilProbe
from zombietop.store import Store

WORKER = "host-b"
"""The task's host, which only its agent serves: the test's monitor is on another."""

IDLE_CONFIG = FAST_CONFIG.replace(
    'progress_timeout = "10s"', 'progress_timeout = "10s"\nidle_timeout = "3s"'
)

TALKS = (
    # A helper leaves the tree and keeps writing to the task's output, so the wrapper sees
    # activity and writes observed beats; the task's own process hangs.
    '(setsid sh -c "while :; do echo tick; sleep 0.1; done" &); exec sleep 300'
)


async def view_of(monitor: Monitor, task_id: str) -> TaskView | None:
    return (await monitor.poll()).by_id().get(task_id)


async def test_an_agent_elsewhere_shows_a_stalled_task_and_then_its_orphan(
    live_store: Store, store_location: Path | str, tmp_path: Path, children: Children
) -> None:
    config = tmp_path / "idle.toml"
    config.write_text(IDLE_CONFIG)
    on_worker = {**os.environ, "ZOMBIETOP_HOST": WORKER}
    wrapper = children.start(
        zombietop(store_location, config, "run", "--task", "f1", "--", "sh", "-c", TALKS),
        env=on_worker,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    children.start(
        zombietop(store_location, config, "agent", "--host", WORKER, "--interval", "0.2"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # No probe of its own reaches host-b's tasks: what it sees of them is the agent's.
    monitor = Monitor(live_store, load_config(config), probe=PsutilProbe(host="host-a"))
    seen: list[TaskView] = []

    async def stalled() -> bool:
        view = await view_of(monitor, "f1")
        if view is not None:
            seen.append(view)
        return view is not None and view.health is Health.STALLED

    await wait_for(stalled, timeout=40, what="stalled through the agent's samples")
    view = seen[-1]
    assert view.remote and view.task.host == WORKER
    assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.OBSERVED
    sample = view.process
    assert sample is not None and sample.idle_s is not None
    assert time.time() - (sample.sampled_at - sample.idle_s) > 3  # idle since, by the agent
    assert view.verdict.reasons[0].code == "process_idle"
    pid = view.task.pid
    assert pid is not None and sample.pid == pid
    children.track_group(pid)

    os.kill(wrapper.pid, signal.SIGKILL)
    wrapper.wait(10)
    assert pid_alive(pid)
    discarded = subprocess.run(
        zombietop(store_location, config, "discard", "f1", "--yes"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert discarded.returncode == 0, discarded.stderr
    finished = time.monotonic()
    healths: list[Health] = []

    async def orphaned() -> bool:
        view = await view_of(monitor, "f1")
        if view is not None:
            healths.append(view.health)
        return view is not None and view.health is Health.ORPHANED

    await wait_for(orphaned, timeout=20, what="orphaned through the agent's samples")
    print(f"timing: orphaned on another host after the finish: {time.monotonic() - finished:.1f}s")
    # Never an orphan on a sample from before the finish, never a process said gone.
    assert set(healths) <= {Health.DISCARDED, Health.ORPHANED}, healths
    view = (await monitor.poll()).by_id()["f1"]
    words = view.verdict.context(time.time())
    assert words.startswith(f"f1 orphaned: pid {pid} alive "), words

    os.killpg(pid, signal.SIGKILL)
    await wait_for(lambda: not pid_alive(pid), what="the orphan to end")

    async def let_go() -> bool:
        view = await view_of(monitor, "f1")
        return view is not None and view.health is Health.DISCARDED

    await wait_for(let_go, timeout=20, what="the agent to see the orphan gone")
