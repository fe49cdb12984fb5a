"""``PollTrust`` alone: a poll whose store could not be read, that lags, or whose clocks do not
agree is not acted on; the watchdog pages itself when the store goes and comes back, and a
stretch of withheld looks is said as it starts and as it ends."""

from __future__ import annotations

import pytest

from tests.core.test_watchdog import start
from tests.core.watchdog_parts import Parts, hands_on
from zombietop.clock import FakeClock
from zombietop.judge.monitor import Snapshot
from zombietop.model import EventKind
from zombietop.store import Store
from zombietop.watch.clock_watch import ClockWatch, beats_of
from zombietop.watch.poll_trust import PollTrust
from zombietop.watch.watchdog_hands import Look

pytestmark = pytest.mark.backends("sqlite")
INTERVAL = 30.0
HOUR = 3600.0


def trust_on(parts: Parts, mono: FakeClock) -> PollTrust:
    return PollTrust(parts.hands, ClockWatch(local=False), interval=INTERVAL, monotonic=mono.now)


async def test_a_store_that_cannot_be_read_pages_once_and_once_more_when_it_can(
    store: Store, clock: FakeClock
) -> None:
    parts = hands_on(store, clock)
    trust = trust_on(parts, FakeClock(start=0.0))
    down = Snapshot(taken_at=None, error="disk I/O error")
    looks = [Look(), Look()]
    for look in looks:
        reason = await trust.check_store(down, look, standby=False)
        assert reason == f"cannot read store {store.describe()}: disk I/O error"
    assert [p.line for p in looks[0].pages + looks[1].pages] == [
        f"zombietop watchdog {reason} - verdicts withheld until it can"
    ]
    back = Look()
    assert await trust.check_store(Snapshot(taken_at=clock.now()), back, standby=False) is None
    assert [(p.kind, p.line) for p in back.pages] == [
        ("all_clear", f"zombietop watchdog reads {store.describe()} again")
    ]


async def test_a_standby_only_logs_that_it_cannot_read_the_store(
    store: Store, clock: FakeClock
) -> None:
    trust = trust_on(hands_on(store, clock), FakeClock(start=0.0))
    look = Look()
    reason = await trust.check_store(Snapshot(taken_at=None, error="gone"), look, standby=True)
    assert look.pages == [] and look.logs == [f"standby: {reason}"]


async def test_a_poll_longer_than_the_interval_is_withheld_without_a_page(
    store: Store, clock: FakeClock
) -> None:
    trust = trust_on(hands_on(store, clock), FakeClock(start=0.0))
    look = Look()
    slow = Snapshot(taken_at=clock.now(), poll_seconds=45.0)
    assert await trust.check_store(slow, look, standby=False) == (
        "store lags: one poll took 45.0s, longer than the 30s interval"
    )
    assert look.pages == [] and look.logs == []


async def test_a_jump_of_the_stores_clock_is_recorded_and_said_once(
    store: Store, clock: FakeClock
) -> None:
    await start(store, ttl=3 * HOUR)
    parts = hands_on(store, clock)
    mono = FakeClock(start=0.0)
    trust = trust_on(parts, mono)
    first = await parts.poll()
    assert [b.task_id for b in beats_of(first.tasks)] == ["export-2031"]
    wall = clock.now()  # this host's wall clock, which does not step
    assert await trust.check_clocks(first, (0.0, 0.1), wall, Look()) is None
    clock.advance(INTERVAL + HOUR)  # 30 s passed, and the store's clock stepped an hour
    mono.advance(INTERVAL)
    look = Look()
    reason = await trust.check_clocks(await parts.poll(), (30.0, 30.1), wall + INTERVAL, look)
    assert reason is not None and reason.startswith("the store's clock jumped +1h00m")
    assert look.logs == [f"verdicts withheld: {reason}"] and look.told
    (event,) = await parts.events(EventKind.WATCHDOG)
    assert event.message == f"verdicts withheld: {reason}"
    # The stretch was told already: no second line as it starts, one as it ends.
    trust.note_withheld(reason, look)
    assert look.logs == [f"verdicts withheld: {reason}"]
    mono.advance(INTERVAL)
    after = Look()
    trust.note_withheld(None, after)
    assert after.logs == ["verdicts acted on again, after 30s withheld (1 looks)"]


async def test_after_an_outage_verdicts_wait_for_the_jobs_to_beat_again(
    store: Store, clock: FakeClock
) -> None:
    """No job could write its beats while the store could not be read: the looks after it
    comes back do not judge by that gap, for about as long as it lasted."""
    parts = hands_on(store, clock)
    trust = PollTrust(
        parts.hands,
        ClockWatch(local=False),
        interval=INTERVAL,
        monotonic=FakeClock(start=0.0).now,
        settle_most=60.0,
    )
    assert await trust.check_store(Snapshot(taken_at=clock.now()), Look(), standby=False) is None
    down = Snapshot(taken_at=clock.now(), error="connection refused")  # the last good tasks
    clock.advance(100)
    await trust.check_store(down, Look(), standby=False)
    back = Look()
    reason = await trust.check_store(Snapshot(taken_at=clock.now()), back, standby=False)
    wait = 60.0 + 4.0 + 1.0  # the longest heartbeat_timeout, the reconnect backoff, a second
    assert reason == (
        "the store could not be read for 1m40s, so no job could write its beats; waiting "
        "1m05s for them to beat again"
    )
    assert back.logs == [f"verdicts withheld: {reason}"]
    clock.advance(wait - 1)
    assert await trust.check_store(Snapshot(taken_at=clock.now()), Look(), standby=False)
    clock.advance(1)
    assert await trust.check_store(Snapshot(taken_at=clock.now()), Look(), standby=False) is None
