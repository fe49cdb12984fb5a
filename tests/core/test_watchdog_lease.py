"""One watchdog per store: the first holds the store's watchdog lease and pages; a second waits
as a standby and takes over once the lease lapses (or is given up)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.core.test_watchdog import INTERVAL, ListNotifier, start, watchdog
from zombietop.clock import FakeClock
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.sd_notify import status_line
from zombietop.watch.watchdog import LEASE_INTERVALS, Watchdog


async def pair(
    store: Store, clock: FakeClock
) -> tuple[Watchdog, ListNotifier, Watchdog, ListNotifier]:
    first, one, _ = watchdog(store, clock, pid=101)
    second, two, _ = watchdog(store, clock, pid=102)
    return first, one, second, two


async def test_two_watchdogs_page_an_incident_once(store: Store, clock: FakeClock) -> None:
    """The reported fault: two watchdogs paged every incident twice."""
    await start(store)
    first, one, second, two = await pair(store, clock)
    assert (await first.tick()).active
    report = await second.tick()
    assert not report.active
    assert report.withheld is not None
    assert report.withheld.startswith(f"standby: {first.lease_owner} is the active watchdog")
    assert status_line(report).startswith("standby: watchdog@")
    clock.advance(10 * INTERVAL)  # silent: stalled
    for _ in range(3):
        await first.tick()
        await second.tick()
        clock.advance(INTERVAL)
    assert [p.kind for p in one.pages] == ["incident"]
    assert two.pages == []


async def test_a_standby_takes_over_when_the_active_one_stops_renewing(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
    await start(store, task_id="import-2032")
    first, one, second, two = await pair(store, clock)
    await first.tick()
    await second.tick()
    clock.advance(10 * INTERVAL)
    await first.tick()  # pages both incidents, then dies without a word (SIGKILL)
    assert sorted(p.task_id or "" for p in one.pages) == ["export-2031", "import-2032"]
    for _ in range(LEASE_INTERVALS):
        clock.advance(INTERVAL)
        assert not (await second.tick()).active
    clock.advance(INTERVAL)
    report = await second.tick()
    assert report.active and report.watchdog is not None
    assert report.watchdog.owner == second.lease_owner and report.watchdog.token == 2
    # It remembers what the first one paged: no second page for the same incidents.
    assert two.pages == []
    # A task recovering is its to clear now; the old one, back from a pause, is the standby.
    back = await first.tick()
    assert not back.active and back.withheld is not None and second.lease_owner in back.withheld


async def test_a_clean_stop_hands_over_at_the_next_look(store: Store, clock: FakeClock) -> None:
    first, _, second, _ = await pair(store, clock)
    await first.tick()
    assert not (await second.tick()).active
    await first.release()
    assert (await second.tick()).active


def test_status_json_says_which_watchdog_is_active(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from zombietop.tui.cli.main import main

    db = tmp_path / "z.db"

    async def look() -> str:
        async with await SQLiteStore.open(db, create=True) as store:
            clock = FakeClock(start=await store.now())
            first, _, second, _ = await pair(store, clock)
            await first.tick()
            assert not (await second.tick()).active
            return first.lease_owner

    owner = asyncio.run(look())
    main(["status", "--json", "--db", str(db)])
    report = json.loads(capsys.readouterr().out)
    assert report["watchdog"]["owner"] == owner and report["watchdog"]["active"] is True
    assert report["watchdog"]["pid"] == 101 and report["watchdog"]["token"] == 1
    main(["status", "--db", str(db)])
    assert f"watchdog: {owner} active (renewed " in capsys.readouterr().out
