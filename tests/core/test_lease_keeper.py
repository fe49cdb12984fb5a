"""``LeaseKeeper`` alone: one active watchdog per store. Two keepers share a real SQLite store:
the first is active, the second a standby that says so once, takes over when the lease lapses
or is given up, and then reads the incident book back and takes over the undelivered pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.test_watchdog import ListNotifier
from zombietop.clock import FakeClock
from zombietop.config import NotifySettings
from zombietop.paging.notify import Outbox
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog_hands import Look
from zombietop.watch.watchdog_lease import LEASE_INTERVALS, LeaseKeeper

pytestmark = pytest.mark.backends("sqlite")
INTERVAL = 30.0


class Keeper:
    """A lease keeper as one watchdog has it, with what it restored and said."""

    def __init__(self, store: Store, clock: FakeClock, pid: int, *, dry_run: bool = False):
        self.restores = 0
        self.said: list[str] = []
        self.outbox = Outbox(
            [ListNotifier()], NotifySettings(), clock, keeper=store, log=self.said.append
        )
        self.keeper = LeaseKeeper(
            store,
            owner=f"watchdog@test pid {pid}",
            host="test",
            pid=pid,
            interval=INTERVAL,
            outbox=self.outbox,
            restore=self._restore,
            dry_run=dry_run,
            log=self.said.append,
        )

    async def _restore(self) -> None:
        self.restores += 1

    async def hold(self) -> tuple[str | None, list[str]]:
        """One look's hold: why this watchdog stands by (None: active), and what it logged."""
        look = Look()
        _, reason = await self.keeper.hold(look)
        return reason, look.logs


async def test_the_first_is_active_and_a_second_stands_by_saying_so_once(
    store: Store, clock: FakeClock
) -> None:
    first, second = Keeper(store, clock, 101), Keeper(store, clock, 102)
    assert await first.hold() == (None, [])
    assert first.keeper.active is True and not first.keeper.standby
    reason, logs = await second.hold()
    assert reason == (
        "standby: watchdog@test pid 101 is the active watchdog (token 1); "
        "taking over if its lease lapses for 90s"
    )
    assert logs == [reason] and second.keeper.standby
    assert (await second.hold())[1] == []  # said once, not at every look
    lease = await store.watchdog_lease()
    assert lease is not None and lease.owner == first.keeper.owner


async def test_a_standby_takes_over_a_lapsed_lease_with_the_book_and_the_pages(
    store: Store, clock: FakeClock
) -> None:
    first, second = Keeper(store, clock, 101), Keeper(store, clock, 102)
    await first.hold()
    await second.hold()
    await store.keep_page(
        notifier="list",
        kind="incident",
        line="t1 stalled",
        task_id="t1",
        health="stalled",
        page_at=clock.now(),
        attempts=1,
        next_at=clock.now(),
    )
    clock.advance(LEASE_INTERVALS * INTERVAL + 1)  # the first stopped renewing
    reason, logs = await second.hold()
    assert reason is None and second.keeper.active is True
    assert logs == [
        "active: took over the watchdog lease (token 2)",
        "1 undelivered page(s) from the store: delivering them",
    ]
    assert second.restores == 1 and second.outbox.pending == 1
    # The first, back from a pause, is the standby now and leaves the kept pages alone.
    reason, _ = await first.hold()
    assert reason is not None and reason.startswith("standby: watchdog@test pid 102")


async def test_a_clean_stop_hands_the_lease_over_at_the_next_look(
    store: Store, clock: FakeClock
) -> None:
    first, second = Keeper(store, clock, 101), Keeper(store, clock, 102)
    await first.hold()
    await second.hold()
    await first.keeper.release()
    assert first.keeper.active is None
    assert (await second.hold())[0] is None


async def test_a_dry_run_is_active_and_writes_no_lease(store: Store, clock: FakeClock) -> None:
    dry = Keeper(store, clock, 101, dry_run=True)
    assert await dry.hold() == (None, [])
    assert dry.keeper.active is True and await store.watchdog_lease() is None
    await dry.keeper.release()
    assert dry.said == []


async def test_an_active_watchdog_that_cannot_renew_stays_active_and_says_so_once(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = await SQLiteStore.open(tmp_path / "z.db", create=True, clock=clock)
    keeper = Keeper(store, clock, 101)
    await keeper.hold()
    await store.close()  # every write fails now, as on a full disk
    for _ in range(2):
        reason, logs = await keeper.hold()
        assert reason is None and keeper.keeper.active is True
        keeper.said.extend(logs)
    assert len(keeper.said) == 1
    assert keeper.said[0].startswith("cannot renew the watchdog lease (store ")
    assert keeper.said[0].endswith("; still acting as the active one")


async def test_a_watchdog_that_never_held_the_lease_and_cannot_stands_by(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = await SQLiteStore.open(tmp_path / "z.db", create=True, clock=clock)
    keeper = Keeper(store, clock, 101)
    await store.close()
    reason, _ = await keeper.hold()
    assert reason is not None
    assert reason.startswith(f"cannot hold the watchdog lease in {store.describe()}: ")
