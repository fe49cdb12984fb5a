"""A jump of a clock kills no healthy job: the watchdog notices it and withholds that look's
kills, quarantines and pages; a SQLite store's clock does not move with the wall clock at all;
a worker's own clock reaches the store only through its measured skew."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.test_watchdog import INTERVAL, RecordingExecutor, config, start, watchdog
from zombietop.clock import FakeClock
from zombietop.heartbeat_line import parse_line
from zombietop.model import EventKind
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore

HOUR = 3600.0


async def start_with_pid(store: Store) -> int:
    """A running task with a process the watchdog could kill (an executor stands in)."""
    token = await start(store, ttl=3 * HOUR)
    async with store._write() as db:  # type: ignore[attr-defined]
        await db.execute("UPDATE tasks SET pid = 4242 WHERE task_id = 'export-2031'")
    return token


async def beat(store: Store, token: int, n: int) -> None:
    await store.record_heartbeat(
        "export-2031", parse_line(f"stage=transform p=61 rows={n}"), owner="w1", token=token
    )


async def test_a_jump_of_the_stores_clock_withholds_that_look_and_kills_nobody(
    store: Store, clock: FakeClock
) -> None:
    """The reported fault: the store's clock steps +1h (its server was set, or this host's
    clock is the store's), and every healthy job looks an hour silent and an hour in its stage."""
    token = await start_with_pid(store)
    mono = FakeClock(start=0.0)
    executor = RecordingExecutor()
    dog, notifier, logs = watchdog(
        store, clock, config(stage=900.0), executor=executor, monotonic=mono.now
    )
    for n in range(4):
        await dog.tick()
        clock.advance(INTERVAL)
        mono.advance(INTERVAL)
        await beat(store, token, n)
    clock.advance(HOUR)  # the step, between two looks 30 s apart
    report = await dog.tick()
    assert report.withheld is not None and "jumped +1h00m" in report.withheld
    assert notifier.pages == [] and executor.requests == []
    assert not (await store.get_task("export-2031")).quarantined
    # The job beats on; its stage began before the jump: it has run minutes, not an hour.
    for n in range(4, 10):
        await beat(store, token, n)
        clock.advance(INTERVAL)
        mono.advance(INTERVAL)
        assert (await dog.tick()).withheld is None
    assert notifier.pages == [] and executor.requests == []
    said = [line for line in logs if "jumped" in line]
    assert len(said) == 1, logs
    events = await store.events(kind=EventKind.WATCHDOG, limit=20)
    assert [e.message for e in events if "jumped" in e.message] == [said[0]]


async def test_a_stage_that_really_overruns_is_still_killed_after_a_jump(
    store: Store, clock: FakeClock
) -> None:
    """The discount is the jump, not the stage: 30 real minutes in a 15m stage still kill."""
    token = await start_with_pid(store)
    mono = FakeClock(start=0.0)
    executor = RecordingExecutor()
    dog, _, _ = watchdog(store, clock, config(stage=900.0), executor=executor, monotonic=mono.now)
    await dog.tick()
    clock.advance(HOUR)
    mono.advance(INTERVAL)
    await dog.tick()
    for n in range(62):
        await beat(store, token, n)
        clock.advance(INTERVAL)
        mono.advance(INTERVAL)
        await dog.tick()
    assert [r.kind for r in executor.requests] == ["kill"]
    assert "stage transform ran 30m00s" in (executor.requests[0].reason or "")  # not 1h30m


@pytest.mark.backends("sqlite")
async def test_a_watchdog_that_reads_the_clock_wrong_withholds_until_it_agrees(
    store: Store, clock: FakeClock, db_path: Path
) -> None:
    """Tasks that beat since the last look cannot be older than the time between the looks:
    when they are, this watchdog's reading of the store's clock is off (the fault of a worker
    an hour behind a watchdog), and it acts on nothing, saying so once."""
    token = await start(store, ttl=3 * HOUR)
    seen = FakeClock(start=clock.now())  # the watchdog's reading of the store's clock
    mono = FakeClock(start=0.0)
    executor = RecordingExecutor()
    async with await SQLiteStore.open(db_path, clock=seen) as its_store:
        dog, notifier, logs = watchdog(
            its_store, seen, config(stage=900.0), executor=executor, monotonic=mono.now
        )
        for n in range(12):
            await dog.tick()
            if n == 2:
                seen.advance(HOUR)  # its reading steps; the workers' does not
            if n == 8:
                seen.advance(-HOUR)  # and steps back
            for moving in (clock, seen, mono):
                moving.advance(INTERVAL)
            await beat(store, token, n)
        assert (await dog.tick()).withheld is None
    assert notifier.pages == [] and executor.requests == []
    assert not (await store.get_task("export-2031")).quarantined
    wrong = [line for line in logs if "reads the store's clock wrong" in line]
    assert len(wrong) == 1, logs
    assert "1 task(s) beat since the last look 30s ago yet look 1h00m" in wrong[0]
    assert "the store's clock and the tasks' beats agree again" in logs


async def test_a_step_of_this_hosts_wall_clock_alone_is_said_and_changes_nothing(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store, ttl=3 * HOUR)
    wall = FakeClock(start=clock.now())
    dog, notifier, logs = watchdog(store, clock, wall=wall.now)
    for n in range(3):
        await dog.tick()
        clock.advance(INTERVAL)
        wall.advance(INTERVAL + (HOUR if n == 1 else 0))
        await beat(store, token, n)
    report = await dog.tick()
    assert report.withheld is None and notifier.pages == []
    assert [line for line in logs if "stepped" in line] == [
        "this host's wall clock stepped +1h00m; ages are measured on the store's clock, "
        "which did not move: nothing withheld"
    ]


async def test_a_workers_request_start_is_moved_onto_the_stores_clock_by_its_skew(
    store: Store, clock: FakeClock
) -> None:
    """A worker an hour behind says ``req_at`` an hour ago; its ``at`` says how far behind."""
    await store.create_task(task_id="t", run_id="r", step="s", step_type="d", actor="x")
    lease = await store.acquire_lease("t", owner="w1", ttl=300)
    now = clock.now()
    behind = now - HOUR
    line = parse_line(f"stage=s p=1 req=fetch req_at={_iso(behind - 10)} at={_iso(behind)}")
    beat_ = await store.record_heartbeat("t", line, owner="w1", token=lease.token)
    assert beat_.request_started_at == pytest.approx(now - 10)
    assert beat_.clock_skew_s == pytest.approx(-HOUR)
    # Ahead, and without an ``at``: never after the store's now.
    ahead = replace(parse_line(f"stage=s p=1 req=other req_at={_iso(now + HOUR)}"))
    beat_ = await store.record_heartbeat("t", ahead, owner="w1", token=lease.token)
    assert beat_.request_started_at == pytest.approx(now)


def _iso(moment: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
