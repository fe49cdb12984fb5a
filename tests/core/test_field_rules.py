"""The rules a real Airflow showed were missing, end to end for zombietop's own tasks, with
real processes under a real ``zombietop run``: an orphan its SIGKILLed wrapper left behind,
and a task process idle while observed beats go on. Each test prints how long zombietop took
("timing: ...")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.core.realprocs import FAST_CONFIG, Children, pid_alive, wait_for, zombietop
from zombietop.config import load_config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.judge.snapshot import TaskView
from zombietop.model import HeartbeatSource
from zombietop.procs import PsutilProbe
from zombietop.store.sqlite import SQLiteStore


def timing(what: str, seconds: float) -> None:
    print(f"timing: {what}: {seconds:.1f}s")


def cli(db: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(zombietop(db, config, *args), capture_output=True, text=True, timeout=60)


def status(db: Path, config: Path) -> tuple[int, dict[str, Any]]:
    result = cli(db, config, "status", "--json", "--all")
    return result.returncode, {t["task_id"]: t for t in json.loads(result.stdout)["tasks"]}


async def view_of(monitor: Monitor, task_id: str) -> TaskView | None:
    return (await monitor.poll()).by_id().get(task_id)


async def pid_of(store: SQLiteStore, task_id: str) -> int | None:
    found = [r.task for r in await store.poll(None) if r.task.task_id == task_id]
    return found[0].pid if found else None


async def test_an_orphan_left_by_a_sigkilled_wrapper_pages_and_is_killed(
    real_store: SQLiteStore,
    db: Path,
    fast_config_path: Path,
    children: Children,
) -> None:
    """The wrapper dies by SIGKILL, the command lives on; once the task is finished (an
    operator discards it, thinking it gone), the live process makes it orphaned, which
    ``status`` calls CRITICAL, and ``zombietop kill`` ends it through the executor."""
    wrapper = children.start(
        zombietop(db, fast_config_path, "run", "--task", "o1", "--", "sleep", "300"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pid: int | None = None

    async def has_pid() -> bool:
        nonlocal pid
        pid = await pid_of(real_store, "o1")
        return pid is not None

    await wait_for(has_pid, what="the command's pid")
    assert pid is not None
    children.track_group(pid)
    os.kill(wrapper.pid, signal.SIGKILL)
    wrapper.wait(10)
    assert pid_alive(pid)

    discarded = cli(db, fast_config_path, "discard", "o1", "--yes")
    assert discarded.returncode == 0, discarded.stderr
    finished = time.monotonic()
    monitor = Monitor(real_store, load_config(fast_config_path), probe=PsutilProbe())
    view = await view_of(monitor, "o1")
    assert view is not None and view.health is Health.ORPHANED
    timing("own task: orphaned after the finish", time.monotonic() - finished)
    words = view.verdict.context(time.time())
    assert words.startswith(f"o1 orphaned: pid {pid} alive ")
    assert " after it finished, discarded " in words and words.endswith(" - kill it")
    code, shown = status(db, fast_config_path)
    assert code == 2 and shown["o1"]["health"] == "orphaned"
    assert shown["o1"]["reasons"][0]["code"] == "process_orphaned"

    killed = cli(db, fast_config_path, "kill", "o1", "--yes")
    assert killed.returncode == 0, killed.stdout + killed.stderr
    assert "exited" in killed.stdout or "escalated" in killed.stdout, killed.stdout
    await wait_for(lambda: not pid_alive(pid), what="the orphan to end")
    view = await view_of(monitor, "o1")
    assert view is not None and view.health is Health.DISCARDED


IDLE_CONFIG = FAST_CONFIG.replace(
    'progress_timeout = "10s"', 'progress_timeout = "10s"\nidle_timeout = "3s"'
)

LEFT_BEHIND_TALKS = (
    # A helper leaves the tree (setsid after a fork) and keeps writing to the task's output,
    # so the wrapper sees activity and writes observed beats; the task's own process hangs.
    '(setsid sh -c "while :; do echo tick; sleep 0.1; done" &); exec sleep 300'
)


async def test_an_idle_process_under_observed_beats_is_stalled(
    real_store: SQLiteStore, db: Path, tmp_path: Path, children: Children
) -> None:
    config = tmp_path / "idle.toml"
    config.write_text(IDLE_CONFIG)
    children.start(
        zombietop(db, config, "run", "--task", "i1", "--", "sh", "-c", LEFT_BEHIND_TALKS),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    monitor = Monitor(real_store, load_config(config), probe=PsutilProbe())

    async def observed() -> bool:
        view = await view_of(monitor, "i1")
        beat = None if view is None else view.heartbeat
        return beat is not None and beat.source is HeartbeatSource.OBSERVED

    await wait_for(observed, timeout=20, what="observed beats")
    began = time.monotonic()
    seen: list[TaskView] = []

    async def stalled() -> bool:
        view = await view_of(monitor, "i1")
        if view is not None:
            seen.append(view)
        return view is not None and view.health is Health.STALLED

    await wait_for(stalled, timeout=30, what="stalled")
    timing("own task: stalled on an idle process (idle_timeout 3s)", time.monotonic() - began)
    view = seen[-1]
    assert all(v.health is Health.HEALTHY for v in seen[:-1]), [v.health for v in seen]
    assert view.heartbeat is not None and view.heartbeat.source is HeartbeatSource.OBSERVED
    reason = view.verdict.reasons[0]
    assert reason.code == "process_idle"
    now = time.time()
    assert reason.words(now).startswith("observed beats; task process idle ")
    assert reason.words(now).endswith(" (no CPU, no I/O)")
    assert view.process is not None and (view.process.idle_s or 0) > 3
    assert "(no CPU, no I/O)" in view.verdict.context(now)
