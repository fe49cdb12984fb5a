"""A bulk kill of real processes: three tasks of ``zombietop run``, marked with ``*``, one
confirm, then each task's own graceful kill (identity checked, SIGTERM to its group, a kill
record in the store) and one notification with the counts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.core.realprocs import Children, pid_alive, wait_for, zombietop
from tests.tui.helpers import notified, settle
from zombietop.act.executor import Executor
from zombietop.config import load_config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind
from zombietop.procs import PsutilProbe
from zombietop.store.sqlite import SQLiteStore
from zombietop.tui.app import ZombietopApp
from zombietop.tui.screens.bulk import BulkConfirmScreen

TASKS = ("k1", "k2", "k3")


async def test_a_bulk_kill_runs_each_graceful_kill(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    for task_id in TASKS:
        children.start(
            zombietop(db, fast_config_path, "run", "--task", task_id, "--", "sleep", "300"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    pids: dict[str, int] = {}

    async def all_started() -> bool:
        for record in await real_store.poll(None):
            if record.task.pid is not None:
                pids[record.task.task_id] = record.task.pid
        return set(pids) == set(TASKS)

    await wait_for(all_started, what="the three commands' pids")
    for pid in pids.values():
        children.track_group(pid)
    config = load_config(fast_config_path)
    app = ZombietopApp(
        Monitor(real_store, config, probe=PsutilProbe()),
        executor=Executor(real_store, config),  # kill_grace 1s
        refresh=3600,  # the test polls by hand
        store_label=str(db),
        actor="oncall@test",
    )
    said = notified(app)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("asterisk", "K")
        await settle(pilot)
        assert isinstance(app.screen, BulkConfirmScreen)
        assert all(pid_alive(pid) for pid in pids.values())  # nothing before the confirm
        await pilot.press("y")
        await settle(pilot)
        for pid in pids.values():
            await wait_for(lambda pid=pid: not pid_alive(pid), what=f"pid {pid} to end")
        app.poll()
        await settle(pilot)
        assert {app.snapshot.by_id()[t].health for t in TASKS} == {Health.INTERRUPTED}
    assert "kill of 3 tasks: 3 term sent" in said
    for task_id in TASKS:
        kinds = [e.kind for e in await real_store.events(task_id=task_id, limit=100)]
        assert EventKind.ACTION in kinds, (task_id, kinds)
