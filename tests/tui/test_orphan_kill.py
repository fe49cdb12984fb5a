"""The dashboard kills a real orphan: a process that outlives its finished task reads
``orphaned`` on screen, ``K`` and its confirm end it, and the next poll lets it go."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.core.realprocs import Children, pid_alive, wait_for, zombietop
from tests.tui.helpers import notified, settle
from zombietop.act.executor import Executor
from zombietop.config import load_config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.procs import PsutilProbe
from zombietop.store.sqlite import SQLiteStore
from zombietop.tui.app import ZombietopApp
from zombietop.tui.screens.confirm import ConfirmScreen
from zombietop.tui.widgets.task_list import TaskList


async def test_k_and_its_confirm_kill_a_real_orphan(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    wrapper = children.start(
        zombietop(db, fast_config_path, "run", "--task", "o1", "--", "sleep", "300"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pid: int | None = None

    async def has_pid() -> bool:
        nonlocal pid
        found = [r.task.pid for r in await real_store.poll(None) if r.task.task_id == "o1"]
        pid = found[0] if found else None
        return pid is not None

    await wait_for(has_pid, what="the command's pid")
    assert pid is not None
    children.track_group(pid)
    # Its wrapper dies by SIGKILL, and an operator, thinking the task gone, discards it.
    os.kill(wrapper.pid, signal.SIGKILL)
    wrapper.wait(10)
    discarded = subprocess.run(
        zombietop(db, fast_config_path, "discard", "o1", "--yes"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert discarded.returncode == 0, discarded.stderr
    assert pid_alive(pid)

    config = load_config(fast_config_path)
    app = ZombietopApp(
        Monitor(real_store, config, probe=PsutilProbe()),
        executor=Executor(real_store, config),  # kill_grace 1s
        refresh=3600,  # the test polls by hand
        store_label=str(db),
        actor="oncall@test",
    )
    messages = notified(app)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        view = app.snapshot.by_id()["o1"]
        assert view.health is Health.ORPHANED
        shown = " ".join(cell.plain for cell in app.screen.query_one(TaskList).cells_of("o1"))
        assert "orphaned" in shown, shown
        await pilot.press("K")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert pid_alive(pid)  # nothing is sent before the confirm
        await pilot.press("y")
        await settle(pilot)
        await wait_for(lambda: not pid_alive(pid), what="the orphan to end")
        app.poll()
        await settle(pilot)
        assert app.snapshot.by_id()["o1"].health is Health.DISCARDED
    assert any("kill o1" in text for text in messages), messages
