"""The dashboard's filter on a PostgreSQL store past ``[monitor] read_at_most``: typing part of
a quiet task's id finds it, though the poll only counted it; clearing the filter drops it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from textual.pilot import Pilot

from tests.tui.helpers import settle
from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.heartbeat_line import BeatLine
from zombietop.judge.monitor import Monitor
from zombietop.store import Store
from zombietop.tui.app import ZombietopApp
from zombietop.tui.unlisted_text import FIND_HINT
from zombietop.tui.widgets.task_list import TaskList


async def until(pilot: Pilot[None], check: Callable[[], bool]) -> None:
    """Wait for ``check``: the poll the filter asks for comes after a short timer."""
    for _ in range(400):
        if check():
            return
        await pilot.pause(0.025)
    raise AssertionError("the screen never showed it")


@pytest.mark.backends("postgresql")
async def test_slash_and_part_of_an_id_finds_a_quiet_task(store: Store, clock: FakeClock) -> None:
    for n in range(120):
        task_id = f"t{n:03d}"
        await store.create_task(
            task_id=task_id, run_id=task_id, step="w", step_type="batch", actor="test"
        )
        lease = await store.acquire_lease(task_id, owner="w", ttl=3600.0)
        await store.record_heartbeat(
            task_id, BeatLine(stage="load", progress=1.0), owner="w", token=lease.token
        )
    monitor = Monitor(store, replace(default_config(), read_at_most=100), clock=clock, host="h")
    # No timer poll during the test: only the filter asks for one.
    app = ZombietopApp(monitor, clock=clock, refresh=3600, store_label="pg", actor="test")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(TaskList)
        assert table.row_count == 0
        under = " ".join(line.plain for line in table._notes_under)
        assert "120 healthy tasks counted by the store" in under and FIND_HINT in under

        await pilot.press("slash", *"T05")
        await until(pilot, lambda: table.row_count > 0)
        assert table.order == [f"t05{n}" for n in range(10)]
        under = " ".join(line.plain for line in table._notes_under)
        assert "110 healthy tasks counted by the store" in under

        await pilot.press("escape")
        await until(pilot, lambda: app.snapshot.counted is not None and not app.snapshot.tasks)
        await settle(pilot)
        assert table.row_count == 0
