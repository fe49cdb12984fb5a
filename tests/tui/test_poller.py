"""The monitor on its own thread reads a real store and never touches the UI's loop."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.core.test_sqlite_inline import aiosqlite_threads
from zombietop.config import default_config
from zombietop.health import Health
from zombietop.heartbeat_line import BeatLine
from zombietop.store import open_store
from zombietop.tui.poller import ThreadedMonitor


async def test_threaded_monitor_polls_a_real_store(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    async with await open_store(db, create=True) as store:
        await store.create_task(
            task_id="t-1", run_id="r", step="s", step_type="batch", actor="test"
        )
        lease = await store.acquire_lease("t-1", owner="me@host", ttl=300)
        await store.record_heartbeat(
            "t-1", BeatLine(stage="load", progress=40.0), owner="me@host", token=lease.token
        )
        workers = aiosqlite_threads()
        poller = await ThreadedMonitor.open(db, default_config(), read_only=False)
        try:
            assert not poller.read_only
            assert poller.monitor.store.read_only  # its own connection is always read-only
            assert aiosqlite_threads() == workers  # it reads SQLite on its own thread
            snapshot = await poller.poll()
            assert [view.task_id for view in snapshot.tasks] == ["t-1"]
            assert snapshot.tasks[0].health is Health.HEALTHY
            assert [p.progress for p in await poller.history("t-1")] == [40.0]
            assert await poller.events("t-1")
            assert any(t.name == "zombietop-monitor" for t in threading.enumerate())
            poller.find("t-1")  # the dashboard's filter reaches the monitor before its next poll
            await poller.poll()
            assert poller.monitor._find == "t-1"
        finally:
            await poller.close()
    assert not any(t.name == "zombietop-monitor" for t in threading.enumerate())


async def test_the_first_snapshot_on_screen_is_announced_once() -> None:
    """The dashboard settles its heap (``gc.freeze``) once the first data is drawn: not before a
    poll has succeeded, and not again on later polls."""
    from tests.tui.helpers import make_app, settle
    from zombietop.tui.testing import SampleSource

    source = SampleSource()
    source.fail_with = "database is locked"
    app = make_app(source)
    calls: list[float | None] = []
    app.on_first_snapshot = lambda: calls.append(app.snapshot.taken_at)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert calls == []  # the first poll failed: nothing on screen yet
        source.fail_with = None
        app.poll()
        await settle(pilot)
        app.poll()
        await settle(pilot)
    assert calls == [source.snapshots[0].taken_at]


def test_settling_the_collector_freezes_the_heap_and_spaces_young_collections() -> None:
    import gc

    from zombietop.tui.launch import YOUNG_COLLECTION, settle_collector

    threshold = gc.get_threshold()
    try:
        settle_collector()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_COLLECTION, *threshold[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
