"""``Quarantines`` alone: the watchdog's holds placed, let go of, and retried on a full disk."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.core.realprocs import Children, wait_for
from tests.core.test_watchdog import start
from tests.core.test_watchdog_retry import fill, small_fs
from tests.core.watchdog_parts import ACTOR, hands_on
from zombietop.clock import FakeClock
from zombietop.health import Health
from zombietop.heartbeat_line import parse_line
from zombietop.model import TaskState
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.quarantines import Quarantines

pytestmark = pytest.mark.backends("sqlite")
__all__ = ["small_fs"]  # the fixture, used by name


async def test_a_stalled_task_is_held_in_the_store_with_its_reason(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    holds = Quarantines(parts.hands)
    view, look = await parts.judged()
    assert await holds.place(view, look)
    task = await store.get_task("export-2031")
    assert task.quarantined and task.quarantined_by == ACTOR
    assert look.logs == ["quarantined export-2031: heartbeat 3m20s old (timeout 2m)"]
    # Held already: nothing written again, nothing said.
    view, again = await parts.judged()
    assert await holds.place(view, again) and again.logs == []


async def test_a_dry_run_only_says_what_it_would_hold(store: Store, clock: FakeClock) -> None:
    await start(store)
    clock.advance(200)
    parts = hands_on(store, clock, dry_run=True)
    view, look = await parts.judged()
    assert await Quarantines(parts.hands).place(view, look)
    assert look.logs == ["would quarantine export-2031: heartbeat 3m20s old (timeout 2m)"]
    assert not (await store.get_task("export-2031")).quarantined


async def test_the_hold_of_a_task_that_recovered_is_let_go_of(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    holds = Quarantines(parts.hands)
    await holds.place(*await parts.judged())
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=62"), owner="w1", token=token
    )
    view, look = await parts.judged()
    assert view.health is Health.QUARANTINED  # beating again, still held
    assert await holds.let_go(view, look) is Health.HEALTHY
    assert not (await store.get_task("export-2031")).quarantined and look.logs == []


async def test_a_hold_placed_by_someone_else_stays(store: Store, clock: FakeClock) -> None:
    token = await start(store)
    await store.set_quarantine("export-2031", quarantined=True, actor="ana", reason="looking")
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=62"), owner="w1", token=token
    )
    parts = hands_on(store, clock)
    assert await Quarantines(parts.hands).let_go(*await parts.judged()) is Health.QUARANTINED
    assert (await store.get_task("export-2031")).quarantined_by == "ana"


async def test_a_hold_that_cannot_be_written_pages_once_and_is_retried_until_it_is(
    small_fs: Path,
) -> None:
    clock = FakeClock()
    store = await SQLiteStore.open(small_fs / "z.db", create=True, clock=clock)
    try:
        await start(store)
        clock.advance(200)
        parts = hands_on(store, clock)
        holds = Quarantines(parts.hands)
        async with store._read() as db:  # an empty WAL: the next write must grow it
            await db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        filler = fill(small_fs)
        looks = []
        for _ in range(2):
            view, look = await parts.judged()
            assert not await holds.place(view, look)
            looks.append(look)
        assert len(looks[0].logs) == 1 and looks[1].logs == []
        assert looks[0].logs[0].startswith("could not quarantine export-2031 (")
        assert [p.kind for p in looks[0].pages + looks[1].pages] == ["watchdog"]
        assert looks[0].pages[0].line.endswith("- free the store's disk")
        filler.unlink()
        view, look = await parts.judged()
        assert await holds.place(view, look)
        assert [p.kind for p in look.pages] == ["all_clear"]
        assert look.pages[0].line == f"zombietop watchdog writes {store.describe()} again"
        assert (await store.get_task("export-2031")).quarantined
    finally:
        await store.close()


async def test_a_task_that_beat_after_the_look_is_not_held(store: Store, clock: FakeClock) -> None:
    """A lock held the job's beat back until after the look that found it stalled: the hold
    is checked again inside its write, and a task that beat since is left for the next look."""
    token = await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    holds = Quarantines(parts.hands)
    view, look = await parts.judged()
    assert view.health is Health.STALLED
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=62"), owner="w1", token=token
    )
    assert not await holds.place(view, look)
    assert not (await store.get_task("export-2031")).quarantined
    assert look.logs == [
        "not quarantined export-2031: it beat or its lease changed after the look that found "
        "it stalled; judged again at the next look"
    ]
    assert look.pages == []
    view, look = await parts.judged()
    assert view.health is Health.HEALTHY


async def test_a_stalled_task_whose_wrapper_renewed_its_lease_after_the_look_is_held(
    store: Store, clock: FakeClock
) -> None:
    """The seeds' incident: the wrapper lives and renews the lease, the job beats no more. A
    renewal between the look and the hold is that stall going on, not progress: the task is
    held (on a loaded host one fell between nearly every look and its write, so nothing was)."""
    token = await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    holds = Quarantines(parts.hands)
    view, look = await parts.judged()
    assert view.health is Health.STALLED
    await store.renew_lease("export-2031", owner="w1", token=token, ttl=3600)
    assert await holds.place(view, look)
    assert (await store.get_task("export-2031")).quarantined


HOLDS_THE_LOCK = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").close()
time.sleep(600)
"""


async def test_a_hold_the_lock_refused_names_the_writer_and_not_the_disk(
    tmp_path: Path, children: Children
) -> None:
    clock = FakeClock()
    db, ready = tmp_path / "z.db", tmp_path / "ready"
    store = await SQLiteStore.open(db, create=True, clock=clock)
    try:
        await start(store)
        clock.advance(200)
        parts = hands_on(store, clock)
        view, look = await parts.judged()
        writer = children.start([sys.executable, "-c", HOLDS_THE_LOCK, str(db), str(ready)])
        await wait_for(ready.exists, what="the other writer", while_running=writer)
        assert not await Quarantines(parts.hands).place(view, look)
        [page] = look.pages
        assert f"locked by another writer (pid {writer.pid} (python" in page.line, page.line
        assert "another writer holds the store's lock" in page.line
        assert "disk" not in page.line
    finally:
        await store.close()


async def test_a_task_that_ended_after_the_look_is_not_held(store: Store, clock: FakeClock) -> None:
    """The look found the task stalled; before the hold, its run ended and let its lease go.
    A hold on a finished task would block what waits on it for ever: it is not placed."""
    token = await start(store)
    clock.advance(200)
    parts = hands_on(store, clock)
    holds = Quarantines(parts.hands)
    view, look = await parts.judged()
    assert view.health is Health.STALLED
    await store.finish_task("export-2031", owner="w1", token=token, state=TaskState.SUCCEEDED)
    assert not await holds.place(view, look)
    assert not (await store.get_task("export-2031")).quarantined
